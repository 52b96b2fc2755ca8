//===- ManifestCrossChecks.cpp - Whole-manifest checks --------------------===//
//
// The checks of a manifest made once every line has been read (finish):
// header, `end` and module present, every buffer reference resolved, tensor
// maps and gemm and allreduce operands within their buffers, slots
// contiguous, prepare steps using no input or output, and the buffers and
// params of `check` and `stat` lines.
//
//===----------------------------------------------------------------------===//

#include "ManifestParser.h"

namespace sparseopt {

/// Whole-file checks once every line has been read.
Status ManifestParser::finish() {
  int last = line > 0 ? line : 1;
  if (headerLine == 0)
    return errorAt(last, SPARSEOPT_ERROR_PARSE,
                   "missing 'sparseopt-program " +
                       std::to_string(kManifestVersion) +
                       "' header: the manifest has no directives");
  if (endLine == 0)
    return errorAt(last, SPARSEOPT_ERROR_PARSE,
                   "the program has no 'end' line: the file is cut short "
                   "(an interrupted copy or write?); recompile or copy it "
                   "again");
  // A program of gemm, attention and allreduce lines alone needs no
  // kernels.
  bool gemmsOnly = m.launches.empty() &&
                   (!m.gemms.empty() || !m.attentions.empty() ||
                    !m.allReduces.empty());
  if (m.moduleLine == 0 && !gemmsOnly)
    return errorAt(last, SPARSEOPT_ERROR_PARSE,
                   "missing 'module' directive: a program needs exactly one "
                   "module");

  for (LaunchDecl &launch : m.launches) {
    for (size_t a = 0; a < launch.args.size(); ++a) {
      ArgDecl &arg = launch.args[a];
      if (arg.kind != ArgKind::Buffer && arg.kind != ArgKind::TensorMap)
        continue;
      auto found = bufferById.find(arg.bufferId);
      if (found == bufferById.end())
        return errorAt(launch.line, SPARSEOPT_ERROR_PARSE,
                       "launch of kernel " + quoted(launch.kernel) +
                           " uses unknown buffer b" +
                           std::to_string(arg.bufferId));
      arg.buffer = found->second;
      if (arg.kind == ArgKind::TensorMap)
        if (Status s = tensorMapFits(launch, a))
          return s;
    }
  }

  for (GemmDecl &gemm : m.gemms)
    if (Status s = resolveGemm(gemm))
      return s;
  for (AttentionDecl &a : m.attentions)
    if (Status s = resolveAttention(a))
      return s;
  // Every all-reduce is joined back into the compute stream before the
  // run ends (a run captured in a CUDA graph must end joined).
  if (!openSlots.empty()) {
    const AllReduceDecl &a = m.allReduces[openSlots.begin()->second];
    return errorAt(a.line, SPARSEOPT_ERROR_PARSE,
                   "allreduce slot " + std::to_string(a.slot) +
                       " has no 'wait slot=" + std::to_string(a.slot) +
                       "' line after it");
  }
  for (AllReduceDecl &a : m.allReduces)
    if (Status s = resolveAllReduce(a))
      return s;

  if (Status s = contiguousSlots(inputSlots, "input", m.inputs))
    return s;
  if (Status s = contiguousSlots(outputSlots, "output", m.outputs))
    return s;
  if (Status s = contiguousSlots(paramSlots, "param", m.params))
    return s;

  for (const StepDecl &step : m.steps)
    if (step.stage == StepStage::Prepare)
      if (Status s = prepareStepBuffers(step))
        return s;
  for (CheckDecl &check : m.checks)
    if (Status s = resolveCheck(check))
      return s;
  for (StatDecl &stat : m.stats)
    if (Status s = resolveStat(stat))
      return s;
  return SPARSEOPT_OK;
}

/// Checks that `slots` are exactly 0..n-1 and lists their buffers.
Status ManifestParser::contiguousSlots(const std::map<int, size_t> &slots,
                                       const char *kind,
                                       std::vector<size_t> &out) {
  int expected = 0;
  for (const auto &[slot, buffer] : slots) {
    if (slot != expected)
      return errorAt(m.buffers[buffer].line, SPARSEOPT_ERROR_PARSE,
                     std::string(kind) +
                         " indices must be contiguous from "
                         "0: index " +
                         std::to_string(slot) + " is declared but index " +
                         std::to_string(expected) + " is missing");
    out.push_back(buffer);
    ++expected;
  }
  return SPARSEOPT_OK;
}

/// Checks that the tensor map of argument `index` of `launch` lies within
/// its buffer's declared size.
Status ManifestParser::tensorMapFits(const LaunchDecl &launch, size_t index) {
  const ArgDecl &arg = launch.args[index];
  const BufferDecl &buffer = m.buffers[arg.buffer];
  uint64_t span = 0;
  bool fits = arg.tensorMap.spanBytes(span);
  if (fits && span <= buffer.bytes)
    return SPARSEOPT_OK;
  return errorAt(launch.line, SPARSEOPT_ERROR_PARSE,
                 "launch of kernel " + quoted(launch.kernel) + " argument " +
                     std::to_string(index) + ": the tensor map (" +
                     describeTensorMap(arg.tensorMap) + ") spans " +
                     (fits ? std::to_string(span) : "2^64 or more") +
                     " bytes but buffer " + std::to_string(buffer.id) +
                     " has " + std::to_string(buffer.bytes));
}

/// Binds the operands of `gemm` to their buffers and checks that each
/// buffer holds the operand, and that the output overwrites no input
/// (cuBLASLt does not compute in place).
Status ManifestParser::resolveGemm(GemmDecl &gemm) {
  struct Operand {
    const char *name;
    GemmOperand *operand;
    uint64_t rows, cols;
    GemmDType dtype;
  };
  std::vector<Operand> operands = {{"x", &gemm.x, gemm.m, gemm.k, gemm.in},
                                   {"w", &gemm.w, gemm.n, gemm.k, gemm.in},
                                   {"y", &gemm.y, gemm.m, gemm.n, gemm.out}};
  if (gemm.hasBias)
    operands.push_back({"bias", &gemm.bias, 1, gemm.n, gemm.biasType});
  for (const Operand &o : operands) {
    auto found = bufferById.find(o.operand->bufferId);
    if (found == bufferById.end())
      return errorAt(gemm.line, SPARSEOPT_ERROR_PARSE,
                     std::string("gemm operand ") + o.name +
                         " uses unknown buffer b" +
                         std::to_string(o.operand->bufferId));
    o.operand->buffer = found->second;
    // Extents are at most 2^31 - 1, so rows * cols * 4 < 2^64.
    uint64_t need = o.rows * o.cols * gemmDTypeBytes(o.dtype);
    const BufferDecl &buffer = m.buffers[found->second];
    if (need > buffer.bytes) {
      std::string shape =
          o.rows == 1 && o.operand == &gemm.bias
              ? std::to_string(o.cols)
              : std::to_string(o.rows) + "x" + std::to_string(o.cols);
      return errorAt(gemm.line, SPARSEOPT_ERROR_PARSE,
                     std::string("gemm operand ") + o.name + " (" +
                         gemmDTypeName(o.dtype) + " " + shape + ") needs " +
                         std::to_string(need) + " bytes but buffer " +
                         std::to_string(buffer.id) + " has " +
                         std::to_string(buffer.bytes));
    }
  }
  for (const Operand &o : operands) {
    if (o.operand == &gemm.y || o.operand->buffer != gemm.y.buffer)
      continue;
    return errorAt(gemm.line, SPARSEOPT_ERROR_PARSE,
                   "gemm output y (buffer " + std::to_string(gemm.y.bufferId) +
                       ") is also operand " + o.name +
                       ": cuBLASLt cannot write its result over an input");
  }
  return SPARSEOPT_OK;
}

/// Resolves the send and recv buffers of `a` and checks that `count`
/// elements fit in each.
Status ManifestParser::resolveAllReduce(AllReduceDecl &a) {
  for (auto [name, operand] :
       {std::make_pair("send", &a.send), std::make_pair("recv", &a.recv)}) {
    auto found = bufferById.find(operand->bufferId);
    if (found == bufferById.end())
      return errorAt(a.line, SPARSEOPT_ERROR_PARSE,
                     std::string("allreduce ") + name +
                         " uses unknown buffer b" +
                         std::to_string(operand->bufferId));
    operand->buffer = found->second;
    const BufferDecl &buffer = m.buffers[found->second];
    uint64_t bytes = a.count * gemmDTypeBytes(a.type);
    if (bytes > buffer.bytes)
      return errorAt(a.line, SPARSEOPT_ERROR_PARSE,
                     std::string("allreduce ") + name + " b" +
                         std::to_string(buffer.id) + " has " +
                         std::to_string(buffer.bytes) + " bytes, fewer than " +
                         std::to_string(a.count) + " " + gemmDTypeName(a.type) +
                         " elements (" + std::to_string(bytes) + " bytes)");
  }
  if (m.buffers[a.recv.buffer].kind == BufferKind::Constant ||
      m.buffers[a.recv.buffer].kind == BufferKind::Param)
    return errorAt(a.line, SPARSEOPT_ERROR_PARSE,
                   "allreduce recv b" + std::to_string(a.recv.bufferId) +
                       " is a " + bufferRole(m.buffers[a.recv.buffer]) +
                       " buffer, which a run must not write");
  return SPARSEOPT_OK;
}

/// Prepare steps run at bind time, when there are no inputs or outputs:
/// they may use params, temps and constants only.
Status ManifestParser::prepareStepBuffers(const StepDecl &step) {
  auto refuse = [&](const std::string &what, size_t index) {
    const BufferDecl &buffer = m.buffers[index];
    if (buffer.kind != BufferKind::Input && buffer.kind != BufferKind::Output)
      return SPARSEOPT_OK;
    return errorAt(stepLine(step), SPARSEOPT_ERROR_PARSE,
                   "prepare-stage " + what + " uses buffer " +
                       std::to_string(buffer.id) + " (" + bufferRole(buffer) +
                       "): prepare steps run at bind time and may use only "
                       "params, temps and constants");
  };
  if (step.kind == StepKind::Launch) {
    const LaunchDecl &launch = m.launches[step.index];
    for (size_t a = 0; a < launch.args.size(); ++a) {
      const ArgDecl &arg = launch.args[a];
      if (arg.kind != ArgKind::Buffer && arg.kind != ArgKind::TensorMap)
        continue;
      if (Status s = refuse("launch of kernel " + quoted(launch.kernel) +
                                " argument " + std::to_string(a),
                            arg.buffer))
        return s;
    }
    return SPARSEOPT_OK;
  }
  const GemmDecl &gemm = m.gemms[step.index];
  std::vector<std::pair<const char *, const GemmOperand *>> operands = {
      {"x", &gemm.x}, {"w", &gemm.w}, {"y", &gemm.y}};
  if (gemm.hasBias)
    operands.push_back({"bias", &gemm.bias});
  for (const auto &[name, operand] : operands)
    if (Status s = refuse(std::string("gemm operand ") + name, operand->buffer))
      return s;
  return SPARSEOPT_OK;
}

/// A check reads the first int32 of a temp buffer and reports on a
/// declared param.
Status ManifestParser::resolveCheck(CheckDecl &check) {
  auto found = bufferById.find(check.bufferId);
  if (found == bufferById.end())
    return errorAt(check.line, SPARSEOPT_ERROR_PARSE,
                   "check uses unknown buffer b" +
                       std::to_string(check.bufferId));
  check.buffer = found->second;
  const BufferDecl &buffer = m.buffers[check.buffer];
  if (buffer.kind != BufferKind::Temp)
    return errorAt(check.line, SPARSEOPT_ERROR_PARSE,
                   "check buffer " + std::to_string(buffer.id) + " is " +
                       (buffer.kind == BufferKind::Constant
                            ? std::string("a constant")
                            : "bound to " + bufferRole(buffer)) +
                       ": a check reads a temp buffer");
  if (buffer.bytes < 4)
    return errorAt(check.line, SPARSEOPT_ERROR_PARSE,
                   "check buffer " + std::to_string(buffer.id) + " has " +
                       std::to_string(buffer.bytes) +
                       " bytes: a check reads an int32 (4 bytes)");
  if (size_t(check.param) >= m.params.size())
    return errorAt(
        check.line, SPARSEOPT_ERROR_PARSE,
        "check names param " + std::to_string(check.param) +
            " but the program declares " +
            (m.params.empty()
                 ? std::string("no params")
                 : "params 0.." + std::to_string(m.params.size() - 1)));
  return SPARSEOPT_OK;
}

/// The buffer of a stat line: a temp holding at least one counter.
Status ManifestParser::resolveStat(StatDecl &stat) {
  auto found = bufferById.find(stat.bufferId);
  if (found == bufferById.end())
    return errorAt(stat.line, SPARSEOPT_ERROR_PARSE,
                   "stat " + quoted(stat.name) + " uses unknown buffer b" +
                       std::to_string(stat.bufferId));
  const BufferDecl &buffer = m.buffers[found->second];
  if (buffer.kind != BufferKind::Temp)
    return errorAt(stat.line, SPARSEOPT_ERROR_PARSE,
                   "stat " + quoted(stat.name) + ": buffer " +
                       std::to_string(buffer.id) + " is " + bufferRole(buffer) +
                       "; a stat is a temp buffer");
  if (buffer.bytes < stat.bits / 8)
    return errorAt(stat.line, SPARSEOPT_ERROR_PARSE,
                   "stat " + quoted(stat.name) + ": buffer " +
                       std::to_string(buffer.id) + " has " +
                       std::to_string(buffer.bytes) +
                       " bytes, fewer than "
                       "one u" +
                       std::to_string(stat.bits));
  stat.buffer = found->second;
  return SPARSEOPT_OK;
}

} // namespace sparseopt
