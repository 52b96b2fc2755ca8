//===- ManifestAttentionLine.cpp - Parsing attention lines ---------------===//
//
// `attention` lines: cuDNN's fused attention (Cudnn.h). Their buffers are
// resolved once the whole file is read (resolveAttention, called by
// finish() in ManifestCrossChecks.cpp).
//
//===----------------------------------------------------------------------===//

#include "ManifestParser.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>

namespace sparseopt {

namespace {

/// The keys of an `attention` line in the order they must appear; all but
/// the last two (mask, layout) are required.
constexpr const char *kAttentionKeys[] = {
    "b", "h", "hkv", "sq", "sk", "d",    "type",  "scale",
    "q", "k", "v",   "o",  "mask", "layout"};
constexpr size_t kAttentionKeyCount =
    sizeof(kAttentionKeys) / sizeof(kAttentionKeys[0]);
constexpr size_t kAttentionRequiredKeys = kAttentionKeyCount - 2;
constexpr const char *kAttentionSyntax =
    "attention b=<B> h=<H> hkv=<Hkv> sq=<Sq> sk=<Sk> d=<D> type=<f16|bf16> "
    "scale=<s> q=b<id> k=b<id> v=b<id> o=b<id> [mask=causal] [layout=bshd]";

} // namespace

/// attention b=<B> h=<H> hkv=<Hkv> sq=<Sq> sk=<Sk> d=<D> type=<dt>
///           scale=<s> q=b<id> k=b<id> v=b<id> o=b<id> [mask=causal]
///           [layout=bshd]
/// (the operands are B x H x S x D, or B x S x H x D with layout=bshd).
/// Run steps only (a prepare stage runs at bind, before any input exists).
/// Buffers and their sizes are checked in finish().
Status ManifestParser::parseAttention() {
  if (stage != StepStage::Run)
    return error("an 'attention' line is only allowed in the run stage");
  AttentionDecl a;
  a.line = line;
  if (Status s = parseKeyedFields(
          "attention", kAttentionKeys, kAttentionKeyCount,
          kAttentionRequiredKeys, kAttentionSyntax,
          [&](size_t index, const std::string &value) {
            return attentionField(a, index, value);
          }))
    return s;
  if (a.h % a.hkv != 0)
    return error("attention h=" + std::to_string(a.h) +
                 " is not a multiple of hkv=" + std::to_string(a.hkv) +
                 " (grouped-query heads share each key/value head)");
  if (a.d % 8 != 0)
    return error("attention d=" + std::to_string(a.d) +
                 ": cuDNN's fused attention needs a head size that is a "
                 "multiple of 8");
  if (a.causal && a.sq != a.sk)
    return error("attention mask=causal needs sq = sk (got sq=" +
                 std::to_string(a.sq) + " sk=" + std::to_string(a.sk) + ")");
  m.steps.push_back({StepKind::Attention, m.attentions.size(), stage});
  m.attentions.push_back(a);
  return SPARSEOPT_OK;
}

/// Parses the value of key kAttentionKeys[index] into `a`.
Status ManifestParser::attentionField(AttentionDecl &a, size_t index,
                                      const std::string &value) {
  const char *key = kAttentionKeys[index];
  const std::string what = std::string("attention ") + key;
  uint64_t *extents[] = {&a.b, &a.h, &a.hkv, &a.sq, &a.sk, &a.d};
  if (index < 6) {
    if (!parseNumber(value, *extents[index]) || *extents[index] == 0 ||
        *extents[index] > kMaxAttentionExtent)
      return error(what + ": expected an integer from 1 to " +
                   std::to_string(kMaxAttentionExtent) + ", got " +
                   quoted(value));
    return SPARSEOPT_OK;
  }
  switch (index) {
  case 6:
    return gemmDType(what, value, false, a.type);
  case 7: {
    errno = 0;
    char *end = nullptr;
    float scale = std::strtof(value.c_str(), &end);
    if (end != value.c_str() + value.size() || errno != 0 ||
        !std::isfinite(scale))
      return error(what + ": expected a finite number, got " + quoted(value));
    a.scale = scale;
    return SPARSEOPT_OK;
  }
  case 8:
    return gemmBuffer(what, value, a.q);
  case 9:
    return gemmBuffer(what, value, a.k);
  case 10:
    return gemmBuffer(what, value, a.v);
  case 11:
    return gemmBuffer(what, value, a.o);
  case 12:
    if (value != "causal")
      return error("attention mask: unknown mask " + quoted(value) +
                   " (expected causal)");
    a.causal = true;
    return SPARSEOPT_OK;
  default:
    if (value != "bshd" && value != "bhsd")
      return error("attention layout: unknown layout " + quoted(value) +
                   " (expected bhsd, the default, or bshd)");
    a.seqMajor = value == "bshd";
    return SPARSEOPT_OK;
  }
}

/// Binds the operands of `a` to their buffers and checks that each buffer
/// holds its operand, that the output overwrites no input (cuDNN does not
/// compute in place) and is no constant or param.
Status ManifestParser::resolveAttention(AttentionDecl &a) {
  struct Operand {
    const char *name;
    GemmOperand *operand;
    uint64_t heads, length;
  };
  const Operand operands[] = {{"q", &a.q, a.h, a.sq},
                              {"k", &a.k, a.hkv, a.sk},
                              {"v", &a.v, a.hkv, a.sk},
                              {"o", &a.o, a.h, a.sq}};
  for (const Operand &o : operands) {
    auto found = bufferById.find(o.operand->bufferId);
    if (found == bufferById.end())
      return errorAt(a.line, SPARSEOPT_ERROR_PARSE,
                     std::string("attention operand ") + o.name +
                         " uses unknown buffer b" +
                         std::to_string(o.operand->bufferId));
    o.operand->buffer = found->second;
    uint64_t need = gemmDTypeBytes(a.type);
    bool overflow = false;
    for (uint64_t extent : {a.b, o.heads, o.length, a.d})
      overflow |= __builtin_mul_overflow(need, extent, &need);
    const BufferDecl &buffer = m.buffers[found->second];
    if (overflow || need > buffer.bytes)
      return errorAt(
          a.line, SPARSEOPT_ERROR_PARSE,
          std::string("attention operand ") + o.name + " (" +
              gemmDTypeName(a.type) + " " + std::to_string(a.b) + "x" +
              std::to_string(o.heads) + "x" + std::to_string(o.length) + "x" +
              std::to_string(a.d) + ") needs " +
              (overflow ? std::string("2^64 or more") : std::to_string(need)) +
              " bytes but buffer " + std::to_string(buffer.id) + " has " +
              std::to_string(buffer.bytes));
  }
  for (const Operand &o : operands) {
    if (o.operand == &a.o || o.operand->buffer != a.o.buffer)
      continue;
    return errorAt(a.line, SPARSEOPT_ERROR_PARSE,
                   "attention output o (buffer " +
                       std::to_string(a.o.bufferId) + ") is also operand " +
                       o.name + ": cuDNN cannot write its result over an "
                                "input");
  }
  const BufferDecl &out = m.buffers[a.o.buffer];
  if (out.kind == BufferKind::Constant || out.kind == BufferKind::Param)
    return errorAt(a.line, SPARSEOPT_ERROR_PARSE,
                   "attention output o (buffer " +
                       std::to_string(a.o.bufferId) + ") is a " +
                       bufferRole(out) + " buffer, which a run must not write");
  return SPARSEOPT_OK;
}

} // namespace sparseopt
