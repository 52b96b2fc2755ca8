//===- Manifest.cpp - Parser and validator for program.txt ----------------===//
//
// parseManifest and the parser's line loop: each line cut into tokens and
// handed to the parser of its directive (ManifestParser.h), then the
// whole-file checks; and the field readers the line parsers share.
//
//===----------------------------------------------------------------------===//

#include "ManifestParser.h"

#include "Files.h"

namespace sparseopt {

Status ManifestParser::parse(const std::string &text) {
  size_t pos = 0;
  while (pos < text.size()) {
    size_t newline = text.find('\n', pos);
    if (newline == std::string::npos)
      newline = text.size();
    ++line;
    tokens = tokenize(text.substr(pos, newline - pos));
    pos = newline + 1;
    if (tokens.empty())
      continue;
    if (Status status = parseDirective(); status != SPARSEOPT_OK)
      return status;
  }
  return finish();
}

Status ManifestParser::parseDirective() {
  const std::string &directive = tokens[0];
  if (headerLine == 0 && directive != SPARSEOPT_DIRECTIVE_HEADER)
    return error("the first directive must be 'sparseopt-program " +
                 std::to_string(kManifestVersion) + "', got " +
                 quoted(directive));
  if (endLine != 0)
    return error("directive " + quoted(directive) +
                 " after the program's 'end' line (line " +
                 std::to_string(endLine) + ")");
  if (directive == SPARSEOPT_DIRECTIVE_HEADER)
    return parseHeader();
  if (directive == SPARSEOPT_DIRECTIVE_END)
    return parseEnd();
  if (directive == SPARSEOPT_DIRECTIVE_MODULE)
    return parseModule();
  if (directive == SPARSEOPT_DIRECTIVE_BUFFER)
    return parseBuffer();
  if (directive == SPARSEOPT_DIRECTIVE_LAUNCH)
    return parseLaunch();
  if (directive == SPARSEOPT_DIRECTIVE_GEMM)
    return parseGemm();
  if (directive == SPARSEOPT_DIRECTIVE_ATTENTION)
    return parseAttention();
  if (directive == SPARSEOPT_DIRECTIVE_STAGE)
    return parseStage();
  if (directive == SPARSEOPT_DIRECTIVE_CHECK)
    return parseCheck();
  if (directive == SPARSEOPT_DIRECTIVE_ALLREDUCE)
    return parseAllReduce();
  if (directive == SPARSEOPT_DIRECTIVE_WAIT)
    return parseWait();
  if (directive == SPARSEOPT_DIRECTIVE_STAT)
    return parseStat();
  if (directive == SPARSEOPT_DIRECTIVE_ARENA)
    return parseArena();
  return error("unknown directive " + quoted(directive) +
               " (expected 'module', 'buffer', 'launch', 'gemm', "
               "'attention', 'stage', 'check', 'allreduce', 'wait', 'stat', "
               "'arena' or 'end')");
}

/// Checks that the token at `index` is `keyword`.
Status ManifestParser::keyword(size_t index, const char *expected) {
  if (index >= tokens.size())
    return error(std::string("launch line ends early: expected '") + expected +
                 "'");
  if (tokens[index] != expected)
    return error(std::string("expected '") + expected + "', got " +
                 quoted(tokens[index]));
  return SPARSEOPT_OK;
}

/// A buffer's byte size: at least one byte (an empty buffer is a
/// compiler bug or an overflowed size, never a program).
Status ManifestParser::byteSize(size_t index, uint64_t &out) {
  return unsignedField(index, "byte size", UINT64_MAX, out, uint64_t(1));
}

/// The manifest line of `step`.
int ManifestParser::stepLine(const StepDecl &step) const {
  switch (step.kind) {
  case StepKind::Launch:
    return m.launches[step.index].line;
  case StepKind::Gemm:
    return m.gemms[step.index].line;
  case StepKind::Attention:
    return m.attentions[step.index].line;
  case StepKind::AllReduce:
    return m.allReduces[step.index].line;
  case StepKind::Wait:
    return m.allReduces[step.index].waitLine;
  }
  return 0;
}

Status parseManifest(const std::string &artifactDir, Manifest &out) {
  out = Manifest();
  out.dir = artifactDir;
  out.manifestPath = joinPath(artifactDir, kManifestFileName);
  std::string text, reason;
  if (!readFile(out.manifestPath, text, reason))
    return fail(SPARSEOPT_ERROR_IO,
                "cannot read manifest " + out.manifestPath + ": " + reason);
  if (Status s = ManifestParser(out).parse(text))
    return s;
  return readSignature(out);
}

} // namespace sparseopt
