//===- ManifestLibraryLines.cpp - Parsing gemm and allreduce lines --------===//
//
// The parsers of the manifest's steps that libraries run: `gemm` lines
// (cuBLASLt), `allreduce` lines and their `wait` lines (NCCL). Their buffers
// are resolved with the whole file (ManifestCrossChecks.cpp).
//
//===----------------------------------------------------------------------===//

#include "ManifestParser.h"

namespace sparseopt {

namespace {

/// The keys of a `gemm` line in the order they must appear; the first
/// kGemmRequiredKeys are required, the rest optional.
constexpr const char *kGemmKeys[] = {"m", "n", "k", "in",   "out",
                                     "x", "w", "y", "bias", "act"};
constexpr size_t kGemmKeyCount = sizeof(kGemmKeys) / sizeof(kGemmKeys[0]);
constexpr size_t kGemmRequiredKeys = 8;
constexpr const char *kGemmSyntax =
    "gemm m=<M> n=<N> k=<K> in=<f16|bf16> out=<f16|bf16|f32> x=b<id> "
    "w=b<id> y=b<id> [bias=b<id>:<f16|bf16|f32>] [act=relu]";

} // namespace

/// The fields of the current line as `<key>=<value>` tokens, with the keys
/// `keys` (`count` of them) in that order, the first `required` required
/// and the rest optional; `field(index, value)` parses the value of
/// keys[index]. Keys are fixed and ordered so that one program has one
/// spelling: the compiler's output can be compared as text and a typo cannot
/// hide an operand. Messages name the line's `directive` and show `syntax`.
Status ManifestParser::parseKeyedFields(
    const char *directive, const char *const *keys, size_t count,
    size_t required, const char *syntax,
    const std::function<Status(size_t, const std::string &)> &field) {
  const std::string name = directive;
  std::string expected;
  for (size_t i = 0; i < count; ++i)
    expected += std::string(i == 0 ? "" : i + 1 == count ? " or " : ", ") +
                keys[i];
  std::vector<bool> seen(count, false);
  size_t next = 0;                // index into keys of the next allowed key
  const char *previous = nullptr; // the key parsed last
  for (size_t t = 1; t < tokens.size(); ++t) {
    const std::string &token = tokens[t];
    size_t equals = token.find('=');
    if (equals == 0 || equals == std::string::npos ||
        equals + 1 == token.size())
      return error("invalid " + name + " field " + quoted(token) +
                   ": expected <key>=<value> (" + syntax + ")");
    std::string key = token.substr(0, equals);
    std::string value = token.substr(equals + 1);
    size_t index = 0;
    while (index < count && key != keys[index])
      ++index;
    if (index == count)
      return error("unknown " + name + " key " + quoted(key) + " (expected " +
                   expected + ")");
    if (seen[index])
      return error("duplicate " + name + " key " + quoted(key));
    if (index < next)
      return error(name + " key " + quoted(key) + " out of order: it must " +
                   "come before " + quoted(previous) + " (" + syntax + ")");
    if (index > next && next < required)
      return error(name + " key " + quoted(key) + " out of order: expected " +
                   quoted(keys[next]) + " first (" + syntax + ")");
    seen[index] = true;
    next = index + 1;
    previous = keys[index];
    if (Status s = field(index, value))
      return s;
  }
  if (next < required)
    return error("missing " + name + " key " + quoted(keys[next]) + " (" +
                 syntax + ")");
  return SPARSEOPT_OK;
}

/// gemm m=<M> n=<N> k=<K> in=<dt> out=<dt> x=b<id> w=b<id> y=b<id>
///      [bias=b<id>:<dt>] [act=relu]
/// Buffers and their sizes are checked in finish().
Status ManifestParser::parseGemm() {
  GemmDecl gemm;
  gemm.line = line;
  if (Status s = parseKeyedFields(
          "gemm", kGemmKeys, kGemmKeyCount, kGemmRequiredKeys, kGemmSyntax,
          [&](size_t index, const std::string &value) {
            return gemmField(gemm, index, value);
          }))
    return s;
  if (Status s = gemmTypes(gemm))
    return s;
  m.steps.push_back({StepKind::Gemm, m.gemms.size(), stage});
  m.gemms.push_back(gemm);
  return SPARSEOPT_OK;
}

/// The type combinations cuBLASLt documents for f32 accumulation with an
/// f32 scale: f16 or bf16 inputs give an output of the same type or f32,
/// and the bias epilogue adds a bias of the output's type. Checked here so
/// that a wrong line fails without a GPU, not at load.
Status ManifestParser::gemmTypes(const GemmDecl &gemm) {
  if (gemm.out != gemm.in && gemm.out != GemmDType::F32)
    return error(std::string("gemm in=") + gemmDTypeName(gemm.in) +
                 " out=" + gemmDTypeName(gemm.out) +
                 ": the output type must be the input type or f32 (what "
                 "cuBLASLt computes from " +
                 gemmDTypeName(gemm.in) + " inputs)");
  if (gemm.hasBias && gemm.biasType != gemm.out)
    return error(std::string("gemm bias type ") + gemmDTypeName(gemm.biasType) +
                 " differs from out=" + gemmDTypeName(gemm.out) +
                 ": cuBLASLt adds a bias of the output's type");
  return SPARSEOPT_OK;
}

/// Parses the value of key kGemmKeys[index] into `gemm`.
Status ManifestParser::gemmField(GemmDecl &gemm, size_t index,
                                 const std::string &value) {
  const char *key = kGemmKeys[index];
  const std::string what = std::string("gemm ") + key;
  switch (index) {
  case 0:
    return gemmExtent(key, value, gemm.m);
  case 1:
    return gemmExtent(key, value, gemm.n);
  case 2:
    return gemmExtent(key, value, gemm.k);
  case 3:
    return gemmDType(what, value, false, gemm.in);
  case 4:
    return gemmDType(what, value, true, gemm.out);
  case 5:
    return gemmBuffer(what, value, gemm.x);
  case 6:
    return gemmBuffer(what, value, gemm.w);
  case 7:
    return gemmBuffer(what, value, gemm.y);
  case 8:
    return gemmBias(value, gemm);
  default:
    if (value != "relu")
      return error("gemm act: unknown activation " + quoted(value) +
                   " (expected relu)");
    gemm.relu = true;
    return SPARSEOPT_OK;
  }
}

/// M, N or K: 1..kMaxGemmExtent.
Status ManifestParser::gemmExtent(const char *key, const std::string &value,
                                  uint64_t &out) {
  if (!parseNumber(value, out) || out == 0 || out > kMaxGemmExtent)
    return error(std::string("gemm ") + key +
                 ": expected an integer from 1 to " +
                 std::to_string(kMaxGemmExtent) + ", got " + quoted(value));
  return SPARSEOPT_OK;
}

/// f16 | bf16, and f32 when `allowF32`.
/// `what` names the field in messages ("gemm in", "allreduce type").
Status ManifestParser::gemmDType(const std::string &what,
                                 const std::string &value, bool allowF32,
                                 GemmDType &out) {
  if (value == "f16")
    out = GemmDType::F16;
  else if (value == "bf16")
    out = GemmDType::BF16;
  else if (value == "f32" && allowF32)
    out = GemmDType::F32;
  else
    return error(what + ": unknown element type " + quoted(value) +
                 (allowF32 ? " (expected f16, bf16 or f32)"
                           : " (expected f16 or bf16)"));
  return SPARSEOPT_OK;
}

/// b<id>
Status ManifestParser::gemmBuffer(const std::string &what,
                                  const std::string &value, GemmOperand &out) {
  if (!parseBufferRef(value, out.bufferId))
    return error(what + ": expected b<buffer id>, got " + quoted(value));
  return SPARSEOPT_OK;
}

/// b<id>:<f16|bf16|f32>
Status ManifestParser::gemmBias(const std::string &value, GemmDecl &gemm) {
  size_t colon = value.find(':');
  if (colon == std::string::npos)
    return error("gemm bias: expected b<buffer id>:<f16|bf16|f32>, got " +
                 quoted(value));
  if (Status s = gemmBuffer("gemm bias", value.substr(0, colon), gemm.bias))
    return s;
  if (Status s =
          gemmDType("gemm bias", value.substr(colon + 1), true, gemm.biasType))
    return s;
  gemm.hasBias = true;
  return SPARSEOPT_OK;
}

/// allreduce slot=<k> send=b<id> recv=b<id> count=<n>
///           type=<f16|bf16|f32> op=<sum|prod|max|min|avg>
/// Keys fixed and ordered, like a gemm line's. Buffers are resolved in
/// finish().
Status ManifestParser::parseAllReduce() {
  static constexpr const char *kSyntax =
      "allreduce slot=<k> send=b<id> recv=b<id> count=<n> "
      "type=<f16|bf16|f32> op=<sum|prod|max|min|avg>";
  static constexpr const char *kKeys[] = {"slot",  "send", "recv",
                                          "count", "type", "op"};
  if (stage != StepStage::Run)
    return error("an 'allreduce' line is only allowed in the run stage: "
                 "prepare steps run at bind time, outside any collective "
                 "order the ranks share");
  if (tokens.size() != 7)
    return error("expected 6 fields on an allreduce line, got " +
                 std::to_string(tokens.size() - 1) + " (" + kSyntax + ")");
  AllReduceDecl a;
  a.line = line;
  for (size_t i = 0; i < 6; ++i) {
    const std::string &token = tokens[i + 1];
    std::string prefix = std::string(kKeys[i]) + "=";
    if (token.compare(0, prefix.size(), prefix) != 0)
      return error("allreduce field " + std::to_string(i + 1) + ": expected " +
                   quoted(prefix + "...") + ", got " + quoted(token) + " (" +
                   kSyntax + ")");
    std::string value = token.substr(prefix.size());
    Status s = SPARSEOPT_OK;
    switch (i) {
    case 0:
      if (!parseNumber(value, a.slot) || a.slot < 0)
        s = error("allreduce slot: expected a non-negative integer, got " +
                  quoted(value));
      break;
    case 1:
      s = gemmBuffer("allreduce send", value, a.send);
      break;
    case 2:
      s = gemmBuffer("allreduce recv", value, a.recv);
      break;
    case 3:
      if (!parseNumber(value, a.count) || a.count == 0 ||
          a.count > kMaxAllReduceCount)
        s = error("allreduce count: expected an integer from 1 to " +
                  std::to_string(kMaxAllReduceCount) + ", got " +
                  quoted(value));
      break;
    case 4:
      s = gemmDType("allreduce type", value, true, a.type);
      break;
    default: {
      bool known = false;
      for (ReduceOp op : {ReduceOp::Sum, ReduceOp::Prod, ReduceOp::Max,
                          ReduceOp::Min, ReduceOp::Avg})
        if (value == reduceOpName(op)) {
          a.op = op;
          known = true;
        }
      if (!known)
        s = error("allreduce op: unknown reduction " + quoted(value) +
                  " (expected sum, prod, max, min or avg)");
    }
    }
    if (s)
      return s;
  }
  auto open = openSlots.find(a.slot);
  if (open != openSlots.end())
    return error("allreduce slot " + std::to_string(a.slot) +
                 " is still in flight (started at line " +
                 std::to_string(m.allReduces[open->second].line) +
                 "): wait for it before reusing the slot");
  openSlots[a.slot] = m.allReduces.size();
  m.steps.push_back({StepKind::AllReduce, m.allReduces.size(), stage});
  m.allReduces.push_back(a);
  return SPARSEOPT_OK;
}

/// wait slot=<k>: the compute stream waits for the all-reduce in flight
/// under slot k.
Status ManifestParser::parseWait() {
  int slot = -1;
  if (tokens.size() != 2 || tokens[1].compare(0, 5, "slot=") != 0 ||
      !parseNumber(tokens[1].substr(5), slot) || slot < 0)
    return error("expected 'wait slot=<k>' with a non-negative slot");
  auto open = openSlots.find(slot);
  if (open == openSlots.end())
    return error("wait for slot " + std::to_string(slot) +
                 ", which has no all-reduce in flight (an 'allreduce "
                 "slot=" +
                 std::to_string(slot) + " ...' line must come first)");
  m.allReduces[open->second].waitLine = line;
  m.steps.push_back({StepKind::Wait, open->second, stage});
  openSlots.erase(open);
  return SPARSEOPT_OK;
}

} // namespace sparseopt
