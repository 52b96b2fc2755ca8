//===- ManifestDeclLines.cpp - The lines that declare a program -----------===//
//
// The parsers of the manifest lines that declare rather than enqueue: the
// `sparseopt-program` header and `end`, `module`, `arena`, `buffer`, `stage`,
// and the prepare stage's `check` and the run's `stat` lines.
//
//===----------------------------------------------------------------------===//

#include "Files.h"
#include "ManifestParser.h"

#include <algorithm>
#include <cctype>
#include <climits>
#include <cstdlib>

namespace sparseopt {

namespace {

constexpr const char *kCheckSyntax =
    "check b<id> param <index> pattern <n>:<m> groups <G>";
constexpr const char *kStatSyntax =
    "stat <name> b<id> <u32|u64> [of <total> [limit <fraction>]]";

} // namespace

Status ManifestParser::parseHeader() {
  if (headerLine != 0)
    return error("repeated 'sparseopt-program' header (first at line " +
                 std::to_string(headerLine) + ")");
  if (tokens.size() != 2)
    return error("expected 'sparseopt-program <version>'");
  if (!parseNumber(tokens[1], version))
    return error("invalid manifest version " + quoted(tokens[1]));
  if (version < kOldestManifestVersion || version > kManifestVersion)
    return error("unsupported manifest version " + std::to_string(version) +
                 " (this runtime reads versions " +
                 std::to_string(kOldestManifestVersion) + " to " +
                 std::to_string(kManifestVersion) +
                 "): recompile the model with this release's sparse-opt");
  headerLine = line;
  return SPARSEOPT_OK;
}

/// end: the last directive of every program, so that a file cut short
/// is an error rather than a shorter program.
Status ManifestParser::parseEnd() {
  if (tokens.size() != 1)
    return error("expected 'end' alone on its line");
  endLine = line;
  return SPARSEOPT_OK;
}

Status ManifestParser::parseModule() {
  if (m.moduleLine != 0)
    return error("a second 'module' directive (the first is at line " +
                 std::to_string(m.moduleLine) +
                 "); a program has exactly one module");
  if (tokens.size() != 2)
    return error("expected 'module <path>'");
  m.modulePath = joinPath(m.dir, tokens[1]);
  m.moduleLine = line;
  uint64_t size = 0;
  std::string reason;
  if (!regularFileSize(m.modulePath, size, reason))
    return errorAt(line, SPARSEOPT_ERROR_IO,
                   "module file " + quoted(tokens[1]) + " (" + m.modulePath +
                       "): " + reason);
  return SPARSEOPT_OK;
}

/// arena <bytes>: once, before any temp that lives in it.
Status ManifestParser::parseArena() {
  if (tokens.size() != 2)
    return error("expected 'arena <bytes>'");
  if (m.arenaLine != 0)
    return error("duplicate arena (first declared at line " +
                 std::to_string(m.arenaLine) + ")");
  if (Status s = unsignedField(1, "arena size", UINT64_MAX, m.arenaBytes))
    return s;
  m.arenaLine = line;
  return SPARSEOPT_OK;
}

Status ManifestParser::parseBuffer() {
  if (tokens.size() < 3)
    return error(
        "expected 'buffer <id> <input|output|param|constant|temp> ...'");
  BufferDecl buffer;
  buffer.line = line;
  if (Status s = unsignedField(1, "buffer id", UINT64_MAX, buffer.id))
    return s;
  auto previous = bufferById.find(buffer.id);
  if (previous != bufferById.end())
    return error("duplicate buffer id " + std::to_string(buffer.id) +
                 " (first declared at line " +
                 std::to_string(m.buffers[previous->second].line) + ")");

  const std::string &kind = tokens[2];
  Status status = SPARSEOPT_OK;
  if (kind == "input")
    status = parseSlotBuffer(buffer, BufferKind::Input);
  else if (kind == "output")
    status = parseSlotBuffer(buffer, BufferKind::Output);
  else if (kind == "param")
    status = parseSlotBuffer(buffer, BufferKind::Param);
  else if (kind == "constant")
    status = parseConstantBuffer(buffer);
  else if (kind == "temp")
    status = parseTempBuffer(buffer);
  else
    status = error("unknown buffer kind " + quoted(kind) +
                   " (expected input, output, param, constant or temp)");
  if (status != SPARSEOPT_OK)
    return status;

  bufferById.emplace(buffer.id, m.buffers.size());
  m.buffers.push_back(std::move(buffer));
  return SPARSEOPT_OK;
}

/// buffer <id> input|output|param <index> <bytes>: each kind has its
/// own index space.
Status ManifestParser::parseSlotBuffer(BufferDecl &buffer,
                                       BufferKind slotKind) {
  const char *kind = slotKind == BufferKind::Input    ? "input"
                     : slotKind == BufferKind::Output ? "output"
                                                      : "param";
  if (tokens.size() != 5)
    return error(std::string("expected 'buffer <id> ") + kind +
                 " <index> <bytes>'");
  buffer.kind = slotKind;
  if (Status s = unsignedField(3, "slot index", INT_MAX - 1, buffer.slot))
    return s;
  if (Status s = byteSize(4, buffer.bytes))
    return s;
  std::map<int, size_t> &slots = slotKind == BufferKind::Input    ? inputSlots
                                 : slotKind == BufferKind::Output ? outputSlots
                                                                  : paramSlots;
  auto previous = slots.find(buffer.slot);
  if (previous != slots.end()) {
    const BufferDecl &other = m.buffers[previous->second];
    return error(std::string(kind) + " index " + std::to_string(buffer.slot) +
                 " is already bound to buffer " + std::to_string(other.id) +
                 " (line " + std::to_string(other.line) + ")");
  }
  slots.emplace(buffer.slot, m.buffers.size());
  return SPARSEOPT_OK;
}

/// buffer <id> constant <file> <bytes>
Status ManifestParser::parseConstantBuffer(BufferDecl &buffer) {
  if (tokens.size() != 5)
    return error("expected 'buffer <id> constant <file> <bytes>'");
  buffer.kind = BufferKind::Constant;
  if (Status s = byteSize(4, buffer.bytes))
    return s;
  buffer.file = joinPath(m.dir, tokens[3]);
  uint64_t size = 0;
  std::string reason;
  if (!regularFileSize(buffer.file, size, reason))
    return errorAt(line, SPARSEOPT_ERROR_IO,
                   "constant file " + quoted(tokens[3]) + " of buffer " +
                       std::to_string(buffer.id) + " (" + buffer.file +
                       "): " + reason);
  if (size != buffer.bytes)
    return error("constant file " + quoted(tokens[3]) + " of buffer " +
                 std::to_string(buffer.id) + " has " + std::to_string(size) +
                 " bytes but the manifest declares " +
                 std::to_string(buffer.bytes));
  return SPARSEOPT_OK;
}

/// buffer <id> temp <bytes> [arena <offset>]
Status ManifestParser::parseTempBuffer(BufferDecl &buffer) {
  if (tokens.size() != 4 && !(tokens.size() == 6 && tokens[4] == "arena"))
    return error("expected 'buffer <id> temp <bytes> [arena <offset>]'");
  buffer.kind = BufferKind::Temp;
  if (Status s = byteSize(3, buffer.bytes))
    return s;
  if (tokens.size() == 4)
    return SPARSEOPT_OK;
  if (m.arenaLine == 0)
    return error("temp buffer " + std::to_string(buffer.id) +
                 " lives in the arena, but no 'arena <bytes>' line "
                 "precedes it");
  uint64_t offset = 0;
  if (Status s = unsignedField(5, "arena offset", UINT64_MAX, offset))
    return s;
  if (offset > m.arenaBytes || buffer.bytes > m.arenaBytes - offset)
    return error("temp buffer " + std::to_string(buffer.id) + " (" +
                 std::to_string(buffer.bytes) + " bytes at arena offset " +
                 std::to_string(offset) + ") does not fit in the arena of " +
                 std::to_string(m.arenaBytes) + " bytes");
  buffer.arenaOffset = int64_t(offset);
  return SPARSEOPT_OK;
}

/// stage prepare | stage run. Each at most once, prepare first; steps
/// before any stage line are run steps, so 'stage prepare' must precede
/// every step.
Status ManifestParser::parseStage() {
  if (tokens.size() != 2 || (tokens[1] != "prepare" && tokens[1] != "run")) {
    std::string got;
    for (const std::string &token : tokens)
      got += (got.empty() ? "" : " ") + token;
    return error("expected 'stage prepare' or 'stage run', got " + quoted(got));
  }
  if (tokens[1] == "prepare") {
    if (prepareLine != 0)
      return error("a second 'stage prepare' (the first is at line " +
                   std::to_string(prepareLine) + ")");
    if (runLine != 0)
      return error("'stage prepare' after 'stage run' (line " +
                   std::to_string(runLine) +
                   "): the prepare stage comes first");
    if (!m.steps.empty())
      return error("'stage prepare' after a step (line " +
                   std::to_string(stepLine(m.steps.front())) +
                   "): steps before any 'stage' line are run steps, and "
                   "the prepare stage comes first");
    prepareLine = line;
    stage = StepStage::Prepare;
    return SPARSEOPT_OK;
  }
  if (runLine != 0)
    return error("a second 'stage run' (the first is at line " +
                 std::to_string(runLine) + ")");
  runLine = line;
  stage = StepStage::Run;
  return SPARSEOPT_OK;
}

/// check b<id> param <index> pattern <n>:<m> groups <G>
/// The buffer and the param are resolved in finish().
Status ManifestParser::parseCheck() {
  if (stage != StepStage::Prepare)
    return error(std::string("a 'check' line is only allowed in the prepare "
                             "stage (after 'stage prepare'") +
                 (runLine != 0 ? ", before 'stage run' at line " +
                                     std::to_string(runLine)
                               : std::string()) +
                 ")");
  auto syntax = [&](const std::string &why) {
    return error(why + " (" + kCheckSyntax + ")");
  };
  if (tokens.size() != 8)
    return syntax("expected 8 fields on a check line, got " +
                  std::to_string(tokens.size()));
  for (auto [index, expected] : {std::make_pair(size_t(2), "param"),
                                 std::make_pair(size_t(4), "pattern"),
                                 std::make_pair(size_t(6), "groups")})
    if (tokens[index] != expected)
      return syntax(std::string("expected '") + expected + "', got " +
                    quoted(tokens[index]));
  CheckDecl check;
  check.line = line;
  const std::string &buffer = tokens[1];
  if (!parseBufferRef(buffer, check.bufferId))
    return error("check: expected b<buffer id>, got " + quoted(buffer));
  if (Status s =
          unsignedField(3, "check param index", INT_MAX - 1, check.param))
    return s;
  if (Status s = checkPattern(tokens[5], check))
    return s;
  if (!parseNumber(tokens[7], check.groups) || check.groups == 0 ||
      check.groups > kMaxCheckGroups)
    return error("check groups: expected an integer from 1 to " +
                 std::to_string(kMaxCheckGroups) + ", got " +
                 quoted(tokens[7]));
  m.checks.push_back(check);
  return SPARSEOPT_OK;
}

/// <n>:<m>, 2:4 or (2N-2):2N for N = 2..8: the patterns the sparse kernels
/// compute.
Status ManifestParser::checkPattern(const std::string &text, CheckDecl &check) {
  size_t colon = text.find(':');
  unsigned n = 0, groupSize = 0;
  bool numbers = colon != std::string::npos &&
                 parseNumber(text.substr(0, colon), n) &&
                 parseNumber(text.substr(colon + 1), groupSize);
  if (!numbers || groupSize < 4 || groupSize > 16 || groupSize % 2 != 0 ||
      n != groupSize - 2)
    return error("check pattern " + quoted(text) +
                 ": expected <n>:<m> with m even, 4 <= m <= 16 and n = m - "
                 "2 (2:4, 4:6, 6:8, 8:10, 10:12, 12:14 or 14:16)");
  check.n = n;
  check.m = groupSize;
  return SPARSEOPT_OK;
}

/// stat <name> b<id> <u32|u64> [of <total> [limit <fraction>]]
/// The buffer is resolved in finish().
Status ManifestParser::parseStat() {
  auto syntax = [&](const std::string &why) {
    return error(why + " (" + kStatSyntax + ")");
  };
  if (tokens.size() != 4 && tokens.size() != 6 && tokens.size() != 8)
    return syntax("expected 4, 6 or 8 fields on a stat line, got " +
                  std::to_string(tokens.size()));
  StatDecl stat;
  stat.line = line;
  stat.name = tokens[1];
  bool named = std::all_of(stat.name.begin(), stat.name.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.';
  });
  if (!named)
    return syntax("stat name " + quoted(stat.name) +
                  ": expected letters, digits, '_' and '.'");
  for (const StatDecl &other : m.stats)
    if (other.name == stat.name)
      return error("stat " + quoted(stat.name) +
                   " is already declared at line " +
                   std::to_string(other.line));
  const std::string &buffer = tokens[2];
  if (!parseBufferRef(buffer, stat.bufferId))
    return syntax("stat: expected b<buffer id>, got " + quoted(buffer));
  if (tokens[3] != "u32" && tokens[3] != "u64")
    return syntax("stat type: expected u32 or u64, got " + quoted(tokens[3]));
  stat.bits = tokens[3] == "u32" ? 32 : 64;
  if (tokens.size() >= 6) {
    if (tokens[4] != "of")
      return syntax("expected 'of', got " + quoted(tokens[4]));
    if (!parseNumber(tokens[5], stat.total) || stat.total == 0)
      return syntax("stat total: expected a positive integer, got " +
                    quoted(tokens[5]));
  }
  if (tokens.size() == 8) {
    if (tokens[6] != "limit")
      return syntax("expected 'limit', got " + quoted(tokens[6]));
    const std::string &text = tokens[7];
    char *end = nullptr;
    double limit = std::strtod(text.c_str(), &end);
    if (text.empty() || end != text.c_str() + text.size() ||
        !(limit >= 0.0 && limit <= 1.0))
      return syntax("stat limit: expected a fraction from 0 to 1, got " +
                    quoted(text));
    stat.limit = limit;
  }
  m.stats.push_back(stat);
  return SPARSEOPT_OK;
}

} // namespace sparseopt
