//===- ManifestText.cpp - A parsed program's declarations as text --------===//
//
// The names and one-line forms of a program's declarations (buffers' roles,
// element types, gemm, attention, allreduce and check lines as parsed) that messages
// and the program queries print, and the load-time size of a persistent
// grid (persistentGridX); the parser (ManifestParser.h) reads and checks
// them.
//
//===----------------------------------------------------------------------===//

#include "Manifest.h"

#include <algorithm>
#include <cstdio>
#include <string>

namespace sparseopt {

unsigned persistentGridX(const PersistentGrid &persistent,
                         unsigned multiprocessors) {
  unsigned usable = multiprocessors > persistent.reserved
                        ? multiprocessors - persistent.reserved
                        : 0;
  unsigned clusters = std::max(1u, std::min(persistent.units,
                                            usable / persistent.cluster));
  return clusters * persistent.cluster;
}

std::string Manifest::where(int line) const {
  return manifestPath + ":" + std::to_string(line);
}

std::string bufferRole(const BufferDecl &buffer) {
  switch (buffer.kind) {
  case BufferKind::Input:
    return "input " + std::to_string(buffer.slot);
  case BufferKind::Output:
    return "output " + std::to_string(buffer.slot);
  case BufferKind::Param:
    return "param " + std::to_string(buffer.slot);
  case BufferKind::Constant:
    return "constant";
  case BufferKind::Temp:
    return "temp";
  }
  return "?";
}

const char *tensorMapDTypeName(TensorMapDType dtype) {
  switch (dtype) {
  case TensorMapDType::F16:
    return "f16";
  case TensorMapDType::BF16:
    return "bf16";
  case TensorMapDType::F32:
    return "f32";
  case TensorMapDType::I32:
    return "i32";
  }
  return "?";
}

bool TensorMapDecl::spanBytes(uint64_t &out) const {
  uint64_t bytes = elementBytes;
  for (unsigned i = 0; i < rank; ++i) {
    if (dims[i] != 0 && bytes > UINT64_MAX / dims[i])
      return false;
    bytes *= dims[i];
  }
  out = bytes;
  return true;
}

std::string describeTensorMap(const TensorMapDecl &map) {
  std::string text = tensorMapDTypeName(map.dtype);
  for (unsigned i = 0; i < map.rank; ++i)
    text += (i == 0 ? " " : "x") + std::to_string(map.dims[i]);
  for (unsigned i = 0; i < map.rank; ++i)
    text += (i == 0 ? ", box " : "x") + std::to_string(map.box[i]);
  return text + ", swizzle " + std::to_string(map.swizzle);
}

const char *gemmDTypeName(GemmDType dtype) {
  switch (dtype) {
  case GemmDType::F16:
    return "f16";
  case GemmDType::BF16:
    return "bf16";
  case GemmDType::F32:
    return "f32";
  }
  return "?";
}

unsigned gemmDTypeBytes(GemmDType dtype) {
  return dtype == GemmDType::F32 ? 4 : 2;
}

std::string describeGemm(const GemmDecl &gemm) {
  auto buffer = [](const GemmOperand &operand) {
    return "b" + std::to_string(operand.bufferId);
  };
  std::string text = "gemm m=" + std::to_string(gemm.m) +
                     " n=" + std::to_string(gemm.n) +
                     " k=" + std::to_string(gemm.k) +
                     " in=" + gemmDTypeName(gemm.in) +
                     " out=" + gemmDTypeName(gemm.out) + " x=" + buffer(gemm.x) +
                     " w=" + buffer(gemm.w) + " y=" + buffer(gemm.y);
  if (gemm.hasBias)
    text += " bias=" + buffer(gemm.bias) + ":" + gemmDTypeName(gemm.biasType);
  if (gemm.relu)
    text += " act=relu";
  return text;
}

std::string describeAttention(const AttentionDecl &a) {
  auto buffer = [](const GemmOperand &operand) {
    return "b" + std::to_string(operand.bufferId);
  };
  char scale[32];
  std::snprintf(scale, sizeof(scale), "%.9g", double(a.scale));
  std::string text =
      "attention b=" + std::to_string(a.b) + " h=" + std::to_string(a.h) +
      " hkv=" + std::to_string(a.hkv) + " sq=" + std::to_string(a.sq) +
      " sk=" + std::to_string(a.sk) + " d=" + std::to_string(a.d) +
      " type=" + gemmDTypeName(a.type) + " scale=" + scale +
      " q=" + buffer(a.q) + " k=" + buffer(a.k) + " v=" + buffer(a.v) +
      " o=" + buffer(a.o);
  if (a.causal)
    text += " mask=causal";
  if (a.seqMajor)
    text += " layout=bshd";
  return text;
}

std::string describeAllReduce(const AllReduceDecl &a) {
  return "allreduce slot=" + std::to_string(a.slot) + " send=b" +
         std::to_string(a.send.bufferId) + " recv=b" +
         std::to_string(a.recv.bufferId) + " count=" + std::to_string(a.count) +
         " type=" + gemmDTypeName(a.type) + " op=" + reduceOpName(a.op);
}

const char *reduceOpName(ReduceOp op) {
  switch (op) {
  case ReduceOp::Sum:
    return "sum";
  case ReduceOp::Prod:
    return "prod";
  case ReduceOp::Max:
    return "max";
  case ReduceOp::Min:
    return "min";
  case ReduceOp::Avg:
    return "avg";
  }
  return "sum";
}

const char *stepStageName(StepStage stage) {
  return stage == StepStage::Prepare ? "prepare" : "run";
}

std::string describeCheck(const CheckDecl &check) {
  return "check b" + std::to_string(check.bufferId) + " param " +
         std::to_string(check.param) + " pattern " + std::to_string(check.n) +
         ":" + std::to_string(check.m) + " groups " +
         std::to_string(check.groups);
}

} // namespace sparseopt
