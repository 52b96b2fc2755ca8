//===- AttentionToLibrary.cpp - sgpu.attention as cuDNN's fused attention -===//
//
// Where cuDNN's fused flash attention runs an sgpu.attention, the op becomes
// an sgpu.attention_call: no generated kernel, an `attention` line of the
// runtime program (docs/runtime.md). On the Llama-3-8B prefill shape it took
// about half the time of the generated tensor-core kernel
// (docs/performance.md, "Attention"), so `auto` prefers it wherever it
// applies; `#sgpu.attention_config<kernel = tensor_cores>` keeps the
// generated kernel.
//
// What the call covers is what the runtime's cuDNN graph describes: f16 or
// bf16 q/k/v of one type, equal q/k and v head sizes that are multiples of 8
// up to 128, grouped-query heads, no mask or positions, and causal only with
// as many queries as keys (cuDNN's causal mask is aligned to the top-left,
// sgpu.attention's to the end: the two agree when Sq = Sk). A seq_major
// op (B x S x H x D operands) is called with that layout: cuDNN reads
// strides, so the transposes around it are gone
// (sgpu-fold-attention-transposes).
//
//===----------------------------------------------------------------------===//

#include "AttentionKernels.h"

using namespace mlir;
using namespace mlir::sgpu;

/// The largest head size of the library call (cuDNN's fused attention takes
/// up to 128 on every chip it runs on).
static constexpr int64_t kMaxLibraryHeadSize = 128;

std::string mlir::sgpu::whyNoAttentionLibrary(AttentionOp op) {
  auto q = op.getQuery().getType(), k = op.getKey().getType(),
       v = op.getValue().getType();
  Type et = q.getElementType();
  if (!et.isF16() && !et.isBF16())
    return "cuDNN's fused attention takes f16 or bf16 only";
  if (op.getMask() || op.getPositions())
    return "cuDNN's fused attention is called without a mask or positions";
  int64_t d = q.getDimSize(3), dv = v.getDimSize(3);
  if (d != dv || d % 8 != 0 || d > kMaxLibraryHeadSize)
    return "cuDNN's fused attention needs equal q/k and v head sizes, a "
           "multiple of 8 up to " +
           std::to_string(kMaxLibraryHeadSize) + " (got " + std::to_string(d) +
           " and " + std::to_string(dv) + ")";
  int64_t sq = q.getDimSize(op.seqDim()), sk = k.getDimSize(op.seqDim());
  if (op.getCausal() && sq != sk)
    return "cuDNN's causal mask is aligned to the first key: it needs as "
           "many queries as keys (got " +
           std::to_string(sq) + " and " + std::to_string(sk) + ")";
  if (op.getResult().getType().getNumElements() == 0)
    return "the result is empty";
  return "";
}

void mlir::sgpu::buildAttentionCall(OpBuilder &b, Location loc, AttentionOp op,
                                    ValueRange args, Value out) {
  AttentionCallOp::create(b, loc, args[0], args[1], args[2], out,
                          op.getCausalAttr(), op.getScaleAttr(),
                          op.getSeqMajorAttr());
}
