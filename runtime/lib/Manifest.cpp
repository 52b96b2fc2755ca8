//===- Manifest.cpp - Parser and validator for program.txt ----------------===//

#include "Manifest.h"

#include "Files.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <map>

namespace sparseopt {

namespace {

/// The keys of a `gemm` line in the order they must appear; the first
/// kGemmRequiredKeys are required, the rest optional.
constexpr const char *kGemmKeys[] = {"m", "n", "k", "in", "out",
                                     "x", "w", "y", "bias", "act"};
constexpr size_t kGemmKeyCount = sizeof(kGemmKeys) / sizeof(kGemmKeys[0]);
constexpr size_t kGemmRequiredKeys = 8;
constexpr const char *kCheckSyntax =
    "check b<id> param <index> pattern <n>:<m> groups <G>";
constexpr const char *kStatSyntax =
    "stat <name> b<id> <u32|u64> [of <total> [limit <fraction>]]";
constexpr const char *kGemmSyntax =
    "gemm m=<M> n=<N> k=<K> in=<f16|bf16> out=<f16|bf16|f32> x=b<id> "
    "w=b<id> y=b<id> [bias=b<id>:<f16|bf16|f32>] [act=relu]";

/// Splits `text` at every `separator` (an empty text is one empty field).
std::vector<std::string> split(const std::string &text, char separator) {
  std::vector<std::string> fields;
  size_t start = 0;
  while (true) {
    size_t end = text.find(separator, start);
    if (end == std::string::npos) {
      fields.push_back(text.substr(start));
      return fields;
    }
    fields.push_back(text.substr(start, end - start));
    start = end + 1;
  }
}

/// Splits `line` at blanks, dropping everything from the first '#'.
std::vector<std::string> tokenize(const std::string &line) {
  std::vector<std::string> tokens;
  const char *blanks = " \t\r\v\f";
  size_t end = line.find('#');
  if (end == std::string::npos)
    end = line.size();
  size_t pos = 0;
  while (pos < end) {
    size_t start = line.find_first_not_of(blanks, pos);
    if (start == std::string::npos || start >= end)
      break;
    size_t stop = line.find_first_of(blanks, start);
    if (stop == std::string::npos || stop > end)
      stop = end;
    tokens.push_back(line.substr(start, stop - start));
    pos = stop;
  }
  return tokens;
}

/// Parses all of `text` as a number of type T (no sign for unsigned T, no
/// leading '+', no blanks). Returns false on any leftover or overflow.
template <typename T> bool parseNumber(const std::string &text, T &out) {
  const char *first = text.data();
  const char *last = first + text.size();
  if (first == last || *first == '+')
    return false;
  auto [ptr, ec] = std::from_chars(first, last, out);
  return ec == std::errc() && ptr == last;
}

/// Reads one manifest line by line and fills a Manifest.
class Parser {
public:
  explicit Parser(Manifest &manifest) : m(manifest) {}

  Status parse(const std::string &text) {
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

private:
  Manifest &m;
  int line = 0;                    ///< current line (1-based)
  std::vector<std::string> tokens; ///< tokens of the current line
  int headerLine = 0;
  int version = 0; ///< the header's version
  int endLine = 0; ///< the `end` line (0 while not seen)
  std::map<uint64_t, size_t> bufferById;    ///< id -> index into m.buffers
  std::map<int, size_t> inputSlots;         ///< slot -> index into m.buffers
  std::map<int, size_t> outputSlots;        ///< slot -> index into m.buffers
  std::map<int, size_t> paramSlots;         ///< slot -> index into m.buffers
  /// The stage of the steps read from here on, and the lines of the
  /// `stage prepare` and `stage run` directives (0 while not seen).
  StepStage stage = StepStage::Run;
  int prepareLine = 0, runLine = 0;

  Status errorAt(int where, Status status, const std::string &message) {
    return fail(status, m.where(where) + ": " + message);
  }
  Status error(const std::string &message) {
    return errorAt(line, SPARSEOPT_ERROR_PARSE, message);
  }
  static std::string quoted(const std::string &text) { return "'" + text + "'"; }

  /// Parses an unsigned field from `min` to `max`.
  template <typename T>
  Status unsignedField(size_t index, const char *what, T max, T &out,
                       T min = 0) {
    uint64_t value = 0;
    if (!parseNumber(tokens[index], value) || value > uint64_t(max) ||
        value < uint64_t(min))
      return error(std::string(what) + ": expected an integer from " +
                   std::to_string(min) + " to " + std::to_string(max) +
                   ", got " + quoted(tokens[index]));
    out = T(value);
    return SPARSEOPT_OK;
  }

  /// A buffer's byte size: at least one byte (an empty buffer is a
  /// compiler bug or an overflowed size, never a program).
  Status byteSize(size_t index, uint64_t &out) {
    return unsignedField(index, "byte size", UINT64_MAX, out, uint64_t(1));
  }

  /// Checks that the token at `index` is `keyword`.
  Status keyword(size_t index, const char *expected) {
    if (index >= tokens.size())
      return error(std::string("launch line ends early: expected '") +
                   expected + "'");
    if (tokens[index] != expected)
      return error(std::string("expected '") + expected + "', got " +
                   quoted(tokens[index]));
    return SPARSEOPT_OK;
  }

  Status parseDirective() {
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
                 " (expected 'module', 'buffer', 'launch', 'gemm', 'stage', "
                 "'check', 'allreduce', 'wait', 'stat', 'arena' or 'end')");
  }

  /// end: the last directive of every program, so that a file cut short
  /// is an error rather than a shorter program.
  Status parseEnd() {
    if (tokens.size() != 1)
      return error("expected 'end' alone on its line");
    endLine = line;
    return SPARSEOPT_OK;
  }

  /// arena <bytes>: once, before any temp that lives in it.
  Status parseArena() {
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

  /// stage prepare | stage run. Each at most once, prepare first; steps
  /// before any stage line are run steps, so 'stage prepare' must precede
  /// every step.
  Status parseStage() {
    if (tokens.size() != 2 ||
        (tokens[1] != "prepare" && tokens[1] != "run")) {
      std::string got;
      for (const std::string &token : tokens)
        got += (got.empty() ? "" : " ") + token;
      return error("expected 'stage prepare' or 'stage run', got " +
                   quoted(got));
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

  /// The manifest line of `step`.
  int stepLine(const StepDecl &step) const {
    switch (step.kind) {
    case StepKind::Launch:
      return m.launches[step.index].line;
    case StepKind::Gemm:
      return m.gemms[step.index].line;
    case StepKind::AllReduce:
      return m.allReduces[step.index].line;
    case StepKind::Wait:
      return m.allReduces[step.index].waitLine;
    }
    return 0;
  }

  /// The all-reduce started under each slot and not yet waited for.
  std::map<int, size_t> openSlots;

  /// allreduce slot=<k> send=b<id> recv=b<id> count=<n>
  ///           type=<f16|bf16|f32> op=<sum|prod|max|min|avg>
  /// Keys fixed and ordered, like a gemm line's. Buffers are resolved in
  /// finish().
  Status parseAllReduce() {
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
        return error("allreduce field " + std::to_string(i + 1) +
                     ": expected " + quoted(prefix + "...") + ", got " +
                     quoted(token) + " (" + kSyntax + ")");
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
  Status parseWait() {
    int slot = -1;
    if (tokens.size() != 2 || tokens[1].compare(0, 5, "slot=") != 0 ||
        !parseNumber(tokens[1].substr(5), slot) || slot < 0)
      return error("expected 'wait slot=<k>' with a non-negative slot");
    auto open = openSlots.find(slot);
    if (open == openSlots.end())
      return error("wait for slot " + std::to_string(slot) +
                   ", which has no all-reduce in flight (an 'allreduce "
                   "slot=" + std::to_string(slot) +
                   " ...' line must come first)");
    m.allReduces[open->second].waitLine = line;
    m.steps.push_back({StepKind::Wait, open->second, stage});
    openSlots.erase(open);
    return SPARSEOPT_OK;
  }

  /// check b<id> param <index> pattern <n>:<m> groups <G>
  /// The buffer and the param are resolved in finish().
  Status parseCheck() {
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
    if (buffer.size() < 2 || buffer[0] != 'b' ||
        !parseNumber(buffer.substr(1), check.bufferId))
      return error("check: expected b<buffer id>, got " + quoted(buffer));
    if (Status s = unsignedField(3, "check param index", INT_MAX - 1,
                                 check.param))
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

  /// stat <name> b<id> <u32|u64> [of <total> [limit <fraction>]]
  /// The buffer is resolved in finish().
  Status parseStat() {
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
      return std::isalnum(static_cast<unsigned char>(c)) || c == '_' ||
             c == '.';
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
    if (buffer.size() < 2 || buffer[0] != 'b' ||
        !parseNumber(buffer.substr(1), stat.bufferId))
      return syntax("stat: expected b<buffer id>, got " + quoted(buffer));
    if (tokens[3] != "u32" && tokens[3] != "u64")
      return syntax("stat type: expected u32 or u64, got " +
                    quoted(tokens[3]));
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

  /// The buffer of a stat line: a temp holding at least one counter.
  Status resolveStat(StatDecl &stat) {
    auto found = bufferById.find(stat.bufferId);
    if (found == bufferById.end())
      return errorAt(stat.line, SPARSEOPT_ERROR_PARSE,
                     "stat " + quoted(stat.name) + " uses unknown buffer b" +
                         std::to_string(stat.bufferId));
    const BufferDecl &buffer = m.buffers[found->second];
    if (buffer.kind != BufferKind::Temp)
      return errorAt(stat.line, SPARSEOPT_ERROR_PARSE,
                     "stat " + quoted(stat.name) + ": buffer " +
                         std::to_string(buffer.id) + " is " +
                         bufferRole(buffer) + "; a stat is a temp buffer");
    if (buffer.bytes < stat.bits / 8)
      return errorAt(stat.line, SPARSEOPT_ERROR_PARSE,
                     "stat " + quoted(stat.name) + ": buffer " +
                         std::to_string(buffer.id) + " has " +
                         std::to_string(buffer.bytes) + " bytes, fewer than "
                         "one u" + std::to_string(stat.bits));
    stat.buffer = found->second;
    return SPARSEOPT_OK;
  }

  /// <n>:<m>, 2:4 or (2N-2):2N for N = 2..8: the patterns the sparse kernels
  /// compute.
  Status checkPattern(const std::string &text, CheckDecl &check) {
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

  Status parseHeader() {
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

  Status parseModule() {
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
                     "module file " + quoted(tokens[1]) + " (" +
                         m.modulePath + "): " + reason);
    return SPARSEOPT_OK;
  }

  Status parseBuffer() {
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
  Status parseSlotBuffer(BufferDecl &buffer, BufferKind slotKind) {
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
    std::map<int, size_t> &slots = slotKind == BufferKind::Input ? inputSlots
                                   : slotKind == BufferKind::Output
                                       ? outputSlots
                                       : paramSlots;
    auto previous = slots.find(buffer.slot);
    if (previous != slots.end()) {
      const BufferDecl &other = m.buffers[previous->second];
      return error(std::string(kind) + " index " +
                   std::to_string(buffer.slot) + " is already bound to buffer " +
                   std::to_string(other.id) + " (line " +
                   std::to_string(other.line) + ")");
    }
    slots.emplace(buffer.slot, m.buffers.size());
    return SPARSEOPT_OK;
  }

  /// buffer <id> constant <file> <bytes>
  Status parseConstantBuffer(BufferDecl &buffer) {
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
  Status parseTempBuffer(BufferDecl &buffer) {
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

  static bool isKernelName(const std::string &name) {
    auto first = [](char c) {
      return std::isalpha(static_cast<unsigned char>(c)) || c == '_' ||
             c == '$';
    };
    if (name.empty() || !first(name[0]))
      return false;
    for (char c : name)
      if (!first(c) && !std::isdigit(static_cast<unsigned char>(c)))
        return false;
    return true;
  }

  /// CUDA's launch limits on every GPU the runtime runs on (a device with
  /// less opt-in shared memory is checked when the program is loaded).
  Status checkLaunchLimits(const LaunchDecl &launch) {
    const unsigned *g = launch.grid, *b = launch.block;
    if (g[0] > kMaxGridX || g[1] > kMaxGridYZ || g[2] > kMaxGridYZ)
      return error("grid " + std::to_string(g[0]) + " " + std::to_string(g[1]) +
                   " " + std::to_string(g[2]) +
                   " exceeds CUDA's limits (x < 2^31, y and z <= 65535)");
    uint64_t threads = uint64_t(b[0]) * b[1] * b[2];
    if (b[0] > kMaxBlockThreads || b[1] > kMaxBlockThreads ||
        b[2] > kMaxBlockZ || threads > kMaxBlockThreads)
      return error("block " + std::to_string(b[0]) + " " +
                   std::to_string(b[1]) + " " + std::to_string(b[2]) +
                   " exceeds CUDA's limits (at most 1024 threads, z <= 64)");
    if (launch.sharedBytes > kMaxSharedBytes)
      return error("smem " + std::to_string(launch.sharedBytes) +
                   " exceeds the 232448 bytes (227 KiB) of shared memory a "
                   "block can opt in to on any supported GPU");
    return SPARSEOPT_OK;
  }

  /// persistent:<units>:<cluster>:<reserved>, a launch's grid x (version 3
  /// on): units and cluster at least 1, cluster at most 16, the largest
  /// grid (units * cluster) within CUDA's limit.
  Status parsePersistentGrid(const std::string &token, LaunchDecl &launch) {
    const char *syntax = " (expected persistent:<units>:<cluster>:<reserved>)";
    if (version < SPARSEOPT_PROGRAM_PERSISTENT_GRID_VERSION)
      return error("a persistent grid needs program version " +
                   std::to_string(SPARSEOPT_PROGRAM_PERSISTENT_GRID_VERSION) +
                   ", this program is version " + std::to_string(version));
    // Three decimal fields after the prefix, separated by ':'.
    std::vector<std::string> parts;
    std::string rest =
        token.substr(std::strlen(SPARSEOPT_PERSISTENT_GRID_PREFIX)) + ":";
    for (size_t at = 0, colon; (colon = rest.find(':', at)) != std::string::npos;
         at = colon + 1)
      parts.push_back(rest.substr(at, colon - at));
    unsigned fields[3];
    if (parts.size() != 3)
      return error("invalid persistent grid " + quoted(token) + syntax);
    for (int i = 0; i < 3; ++i) {
      if (parts[i].empty() || parts[i].size() > 9 ||
          parts[i].find_first_not_of("0123456789") != std::string::npos)
        return error("invalid persistent grid " + quoted(token) + syntax);
      fields[i] = unsigned(std::stoul(parts[i]));
    }
    PersistentGrid &p = launch.persistent;
    p = {fields[0], fields[1], fields[2]};
    if (p.units == 0 || p.cluster == 0 || p.cluster > 16)
      return error("persistent grid " + quoted(token) +
                   ": units must be >= 1 and the cluster 1 to 16");
    uint64_t most = uint64_t(p.units) * p.cluster;
    if (most > kMaxGridX)
      return error("persistent grid " + quoted(token) +
                   " exceeds CUDA's limit (x < 2^31)");
    launch.grid[0] = unsigned(most);
    return SPARSEOPT_OK;
  }

  /// launch <kernel> grid x y z block x y z smem <bytes> args <arg>...
  Status parseLaunch() {
    LaunchDecl launch;
    launch.line = line;
    if (tokens.size() < 2)
      return error("expected 'launch <kernel> grid <x> <y> <z> block <x> <y> "
                   "<z> smem <bytes> args <arg>...'");
    launch.kernel = tokens[1];
    if (!isKernelName(launch.kernel))
      return error("kernel name " + quoted(launch.kernel) +
                   " is not a PTX identifier ([A-Za-z_$][A-Za-z0-9_$]*)");
    size_t next = 2;
    for (auto [name, dims] : {std::make_pair("grid", launch.grid),
                              std::make_pair("block", launch.block)}) {
      if (Status s = keyword(next++, name))
        return s;
      for (int d = 0; d < 3; ++d, ++next) {
        if (next >= tokens.size())
          return error(std::string("launch line ends early: expected 3 ") +
                       name + " dimensions");
        if (dims == launch.grid && d == 0 &&
            tokens[next].rfind(SPARSEOPT_PERSISTENT_GRID_PREFIX, 0) == 0) {
          if (Status s = parsePersistentGrid(tokens[next], launch))
            return s;
          continue;
        }
        if (Status s = unsignedField(next, name, UINT_MAX, dims[d]))
          return s;
        if (dims[d] == 0)
          return error(std::string(name) + " dimensions must be >= 1");
      }
    }
    if (Status s = keyword(next++, "smem"))
      return s;
    if (next >= tokens.size())
      return error("launch line ends early: expected the shared memory size");
    if (Status s = unsignedField(next++, "smem", UINT_MAX, launch.sharedBytes))
      return s;
    if (Status s = checkLaunchLimits(launch))
      return s;
    if (Status s = keyword(next++, "args"))
      return s;
    for (; next < tokens.size(); ++next) {
      ArgDecl arg;
      if (Status s = parseArg(tokens[next], arg))
        return s;
      launch.args.push_back(arg);
    }
    m.steps.push_back({StepKind::Launch, m.launches.size(), stage});
    m.launches.push_back(std::move(launch));
    return SPARSEOPT_OK;
  }

  /// gemm m=<M> n=<N> k=<K> in=<dt> out=<dt> x=b<id> w=b<id> y=b<id>
  ///      [bias=b<id>:<dt>] [act=relu]
  /// Keys are fixed and ordered so that one program has one spelling: the
  /// compiler's output can be compared as text and a typo cannot hide an
  /// operand. Buffers and their sizes are checked in finish().
  Status parseGemm() {
    GemmDecl gemm;
    gemm.line = line;
    bool seen[kGemmKeyCount] = {};
    size_t next = 0;        // index into kGemmKeys of the next allowed key
    const char *previous = nullptr; // the key parsed last
    for (size_t t = 1; t < tokens.size(); ++t) {
      const std::string &token = tokens[t];
      size_t equals = token.find('=');
      if (equals == 0 || equals == std::string::npos ||
          equals + 1 == token.size())
        return error("invalid gemm field " + quoted(token) +
                     ": expected <key>=<value> (" + kGemmSyntax + ")");
      std::string key = token.substr(0, equals);
      std::string value = token.substr(equals + 1);
      size_t index = 0;
      while (index < kGemmKeyCount && key != kGemmKeys[index])
        ++index;
      if (index == kGemmKeyCount)
        return error("unknown gemm key " + quoted(key) +
                     " (expected m, n, k, in, out, x, w, y, bias or act)");
      if (seen[index])
        return error("duplicate gemm key " + quoted(key));
      if (index < next)
        return error("gemm key " + quoted(key) + " out of order: it must " +
                     "come before " + quoted(previous) + " (" + kGemmSyntax +
                     ")");
      if (index > next && next < kGemmRequiredKeys)
        return error("gemm key " + quoted(key) + " out of order: expected " +
                     quoted(kGemmKeys[next]) + " first (" + kGemmSyntax + ")");
      seen[index] = true;
      next = index + 1;
      previous = kGemmKeys[index];
      if (Status s = gemmField(gemm, index, value))
        return s;
    }
    if (next < kGemmRequiredKeys)
      return error("missing gemm key " + quoted(kGemmKeys[next]) + " (" +
                   kGemmSyntax + ")");
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
  Status gemmTypes(const GemmDecl &gemm) {
    if (gemm.out != gemm.in && gemm.out != GemmDType::F32)
      return error(std::string("gemm in=") + gemmDTypeName(gemm.in) +
                   " out=" + gemmDTypeName(gemm.out) +
                   ": the output type must be the input type or f32 (what "
                   "cuBLASLt computes from " + gemmDTypeName(gemm.in) +
                   " inputs)");
    if (gemm.hasBias && gemm.biasType != gemm.out)
      return error(std::string("gemm bias type ") +
                   gemmDTypeName(gemm.biasType) + " differs from out=" +
                   gemmDTypeName(gemm.out) +
                   ": cuBLASLt adds a bias of the output's type");
    return SPARSEOPT_OK;
  }

  /// Parses the value of key kGemmKeys[index] into `gemm`.
  Status gemmField(GemmDecl &gemm, size_t index, const std::string &value) {
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
  Status gemmExtent(const char *key, const std::string &value, uint64_t &out) {
    if (!parseNumber(value, out) || out == 0 || out > kMaxGemmExtent)
      return error(std::string("gemm ") + key +
                   ": expected an integer from 1 to " +
                   std::to_string(kMaxGemmExtent) + ", got " + quoted(value));
    return SPARSEOPT_OK;
  }

  /// f16 | bf16, and f32 when `allowF32`.
  /// `what` names the field in messages ("gemm in", "allreduce type").
  Status gemmDType(const std::string &what, const std::string &value,
                   bool allowF32, GemmDType &out) {
    if (value == "f16")
      out = GemmDType::F16;
    else if (value == "bf16")
      out = GemmDType::BF16;
    else if (value == "f32" && allowF32)
      out = GemmDType::F32;
    else
      return error(what + ": unknown element type " +
                   quoted(value) +
                   (allowF32 ? " (expected f16, bf16 or f32)"
                             : " (expected f16 or bf16)"));
    return SPARSEOPT_OK;
  }

  /// b<id>
  Status gemmBuffer(const std::string &what, const std::string &value,
                    GemmOperand &out) {
    if (value.size() < 2 || value[0] != 'b' ||
        !parseNumber(value.substr(1), out.bufferId))
      return error(what + ": expected b<buffer id>, got " + quoted(value));
    return SPARSEOPT_OK;
  }

  /// b<id>:<f16|bf16|f32>
  Status gemmBias(const std::string &value, GemmDecl &gemm) {
    size_t colon = value.find(':');
    if (colon == std::string::npos)
      return error("gemm bias: expected b<buffer id>:<f16|bf16|f32>, got " +
                   quoted(value));
    if (Status s = gemmBuffer("gemm bias", value.substr(0, colon), gemm.bias))
      return s;
    if (Status s = gemmDType("gemm bias", value.substr(colon + 1), true,
                             gemm.biasType))
      return s;
    gemm.hasBias = true;
    return SPARSEOPT_OK;
  }

  /// b<id> | i32:<v> | i64:<v> | f32:<v> | tmap:...
  Status parseArg(const std::string &token, ArgDecl &arg) {
    auto invalid = [&](const std::string &why) {
      return error("invalid launch argument " + quoted(token) + ": " + why);
    };
    if (token.compare(0, 5, "tmap:") == 0)
      return parseTensorMapArg(token, arg);
    if (token.size() > 1 && token[0] == 'b') {
      arg.kind = ArgKind::Buffer;
      if (!parseNumber(token.substr(1), arg.bufferId))
        return invalid("expected b<buffer id>");
      return SPARSEOPT_OK;
    }
    if (token.size() > 4 && token[3] == ':') {
      std::string type = token.substr(0, 3);
      std::string value = token.substr(4);
      if (type == "i32") {
        // Accept the signed and the unsigned 32-bit range.
        int64_t wide = 0;
        if (!parseNumber(value, wide) || wide < INT32_MIN || wide > UINT32_MAX)
          return invalid("expected a 32-bit integer");
        uint32_t bits = uint32_t(wide);
        arg.kind = ArgKind::I32;
        std::memcpy(arg.value, &bits, sizeof(bits));
        return SPARSEOPT_OK;
      }
      if (type == "i64") {
        int64_t signedValue = 0;
        uint64_t bits = 0;
        if (parseNumber(value, signedValue))
          bits = uint64_t(signedValue);
        else if (!parseNumber(value, bits))
          return invalid("expected a 64-bit integer");
        arg.kind = ArgKind::I64;
        std::memcpy(arg.value, &bits, sizeof(bits));
        return SPARSEOPT_OK;
      }
      if (type == "f32") {
        float f = 0;
        if (!parseNumber(value, f))
          return invalid("expected a floating-point number");
        arg.kind = ArgKind::F32;
        std::memcpy(arg.value, &f, sizeof(f));
        return SPARSEOPT_OK;
      }
    }
    return invalid("expected b<id>, i32:<value>, i64:<value>, f32:<value> or "
                   "tmap:b<id>:<dtype>:<dims>:<box>:<swizzle>");
  }

  /// tmap:b<id>:<dtype>:<d0>x<d1>...:<box0>x<box1>...:<swizzle>, dimensions
  /// and box outermost first. Checks what cuTensorMapEncodeTiled requires of
  /// a tiled map without interleave over a dense row-major tensor.
  Status parseTensorMapArg(const std::string &token, ArgDecl &arg) {
    constexpr uint64_t kMaxDim = uint64_t(1) << 32;
    constexpr uint32_t kMaxBox = 256;
    constexpr uint64_t kMaxPitch = uint64_t(1) << 40;
    auto invalid = [&](const std::string &why) {
      return error("invalid tensor map argument " + quoted(token) + ": " + why);
    };
    std::vector<std::string> fields = split(token, ':');
    if (fields.size() != 6)
      return invalid("expected tmap:b<id>:<dtype>:<dims>:<box>:<swizzle> "
                     "(e.g. tmap:b2:f16:4096x2048:128x32:64)");
    arg.kind = ArgKind::TensorMap;
    TensorMapDecl &map = arg.tensorMap;

    const std::string &buffer = fields[1];
    if (buffer.size() < 2 || buffer[0] != 'b' ||
        !parseNumber(buffer.substr(1), arg.bufferId))
      return invalid("expected b<buffer id>, got " + quoted(buffer));

    const std::string &dtype = fields[2];
    if (dtype == "f16" || dtype == "bf16") {
      map.dtype = dtype == "f16" ? TensorMapDType::F16 : TensorMapDType::BF16;
      map.elementBytes = 2;
    } else if (dtype == "f32" || dtype == "i32") {
      map.dtype = dtype == "f32" ? TensorMapDType::F32 : TensorMapDType::I32;
      map.elementBytes = 4;
    } else {
      return invalid("unknown element type " + quoted(dtype) +
                     " (expected f16, bf16, f32 or i32)");
    }

    std::vector<std::string> dims = split(fields[3], 'x');
    if (dims.size() > kMaxTensorMapRank)
      return invalid("a tensor map has 1 to " +
                     std::to_string(kMaxTensorMapRank) + " dimensions, got " +
                     std::to_string(dims.size()));
    map.rank = unsigned(dims.size());
    for (unsigned i = 0; i < map.rank; ++i)
      if (!parseNumber(dims[i], map.dims[i]) || map.dims[i] == 0 ||
          map.dims[i] > kMaxDim)
        return invalid("dimension " + quoted(dims[i]) +
                       ": expected an integer from 1 to " +
                       std::to_string(kMaxDim));

    std::vector<std::string> box = split(fields[4], 'x');
    if (box.size() != map.rank)
      return invalid("the box has " + std::to_string(box.size()) +
                     " dimension(s) but the tensor has " +
                     std::to_string(map.rank));
    for (unsigned i = 0; i < map.rank; ++i)
      if (!parseNumber(box[i], map.box[i]) || map.box[i] == 0 ||
          map.box[i] > kMaxBox)
        return invalid("box dimension " + quoted(box[i]) +
                       ": expected an integer from 1 to " +
                       std::to_string(kMaxBox));

    const std::string &swizzle = fields[5];
    if (!parseNumber(swizzle, map.swizzle) ||
        (map.swizzle != 0 && map.swizzle != 32 && map.swizzle != 64 &&
         map.swizzle != 128))
      return invalid("swizzle: expected 0, 32, 64 or 128 (bytes), got " +
                     quoted(swizzle));

    uint64_t inner = uint64_t(map.box[map.rank - 1]) * map.elementBytes;
    if (inner % 16 != 0)
      return invalid("the innermost box extent is " + std::to_string(inner) +
                     " bytes; it must be a multiple of 16");
    if (map.swizzle != 0 && inner > map.swizzle)
      return invalid("the innermost box extent of " + std::to_string(inner) +
                     " bytes exceeds the " + std::to_string(map.swizzle) +
                     "-byte swizzle span");

    // Row pitches (byte strides of all but the innermost dimension); each is
    // a multiple of the next, so only the innermost can break the 16-byte
    // rule. Stops before a product could overflow.
    uint64_t pitch = map.elementBytes;
    for (int i = int(map.rank) - 2; i >= 0; --i) {
      if (map.dims[i + 1] > (kMaxPitch - 1) / pitch)
        return invalid("the row pitch of dimension " + std::to_string(i) +
                       " is 2^40 bytes or more (the limit of a tensor map)");
      pitch *= map.dims[i + 1];
      if (pitch % 16 != 0)
        return invalid("the row pitch of dimension " + std::to_string(i) +
                       " is " + std::to_string(pitch) +
                       " bytes; it must be a multiple of 16");
    }

    map.slot = m.tensorMaps++;
    return SPARSEOPT_OK;
  }

  /// Whole-file checks once every line has been read.
  Status finish() {
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
    // A program of gemm and allreduce lines alone needs no kernels.
    bool gemmsOnly =
        m.launches.empty() && (!m.gemms.empty() || !m.allReduces.empty());
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

  /// Prepare steps run at bind time, when there are no inputs or outputs:
  /// they may use params, temps and constants only.
  Status prepareStepBuffers(const StepDecl &step) {
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
      if (Status s = refuse(std::string("gemm operand ") + name,
                            operand->buffer))
        return s;
    return SPARSEOPT_OK;
  }

  /// A check reads the first int32 of a temp buffer and reports on a
  /// declared param.
  Status resolveCheck(CheckDecl &check) {
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
      return errorAt(check.line, SPARSEOPT_ERROR_PARSE,
                     "check names param " + std::to_string(check.param) +
                         " but the program declares " +
                         (m.params.empty()
                              ? std::string("no params")
                              : "params 0.." +
                                    std::to_string(m.params.size() - 1)));
    return SPARSEOPT_OK;
  }

  /// Binds the operands of `gemm` to their buffers and checks that each
  /// buffer holds the operand, and that the output overwrites no input
  /// (cuBLASLt does not compute in place).
  /// Resolves the send and recv buffers of `a` and checks that `count`
  /// elements fit in each.
  Status resolveAllReduce(AllReduceDecl &a) {
    for (auto [name, operand] : {std::make_pair("send", &a.send),
                                 std::make_pair("recv", &a.recv)}) {
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
                           std::to_string(a.count) + " " +
                           gemmDTypeName(a.type) + " elements (" +
                           std::to_string(bytes) + " bytes)");
    }
    if (m.buffers[a.recv.buffer].kind == BufferKind::Constant ||
        m.buffers[a.recv.buffer].kind == BufferKind::Param)
      return errorAt(a.line, SPARSEOPT_ERROR_PARSE,
                     "allreduce recv b" + std::to_string(a.recv.bufferId) +
                         " is a " + bufferRole(m.buffers[a.recv.buffer]) +
                         " buffer, which a run must not write");
    return SPARSEOPT_OK;
  }

  Status resolveGemm(GemmDecl &gemm) {
    struct Operand {
      const char *name;
      GemmOperand *operand;
      uint64_t rows, cols;
      GemmDType dtype;
    };
    std::vector<Operand> operands = {
        {"x", &gemm.x, gemm.m, gemm.k, gemm.in},
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
        std::string shape = o.rows == 1 && o.operand == &gemm.bias
                                ? std::to_string(o.cols)
                                : std::to_string(o.rows) + "x" +
                                      std::to_string(o.cols);
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
                     "gemm output y (buffer " +
                         std::to_string(gemm.y.bufferId) +
                         ") is also operand " + o.name +
                         ": cuBLASLt cannot write its result over an input");
    }
    return SPARSEOPT_OK;
  }

  /// Checks that the tensor map of argument `index` of `launch` lies within
  /// its buffer's declared size.
  Status tensorMapFits(const LaunchDecl &launch, size_t index) {
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

  /// Checks that `slots` are exactly 0..n-1 and lists their buffers.
  Status contiguousSlots(const std::map<int, size_t> &slots, const char *kind,
                         std::vector<size_t> &out) {
    int expected = 0;
    for (const auto &[slot, buffer] : slots) {
      if (slot != expected)
        return errorAt(m.buffers[buffer].line, SPARSEOPT_ERROR_PARSE,
                       std::string(kind) + " indices must be contiguous from "
                       "0: index " + std::to_string(slot) +
                           " is declared but index " +
                           std::to_string(expected) + " is missing");
      out.push_back(buffer);
      ++expected;
    }
    return SPARSEOPT_OK;
  }
};

} // namespace

Status parseManifest(const std::string &artifactDir, Manifest &out) {
  out = Manifest();
  out.dir = artifactDir;
  out.manifestPath = joinPath(artifactDir, kManifestFileName);
  std::string text, reason;
  if (!readFile(out.manifestPath, text, reason))
    return fail(SPARSEOPT_ERROR_IO,
                "cannot read manifest " + out.manifestPath + ": " + reason);
  if (Status s = Parser(out).parse(text))
    return s;
  return readSignature(out);
}

} // namespace sparseopt
