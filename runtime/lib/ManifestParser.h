//===- ManifestParser.h - The parser of program.txt -------------*- C++ -*-===//
//
// The manifest parser's state and its parts, each defined in its own file:
// the line loop and directive dispatch (Manifest.cpp), the lines that
// declare the program (ManifestDeclLines.cpp), `launch` lines
// (ManifestLaunchLines.cpp), `gemm`, `allreduce` and `wait` lines
// (ManifestLibraryLines.cpp), `attention` lines (ManifestAttentionLine.cpp),
// and the whole-file checks once every line has
// been read (ManifestCrossChecks.cpp). parseManifest (Manifest.h) is the
// only caller.
//
//===----------------------------------------------------------------------===//
#ifndef SPARSEOPT_RUNTIME_MANIFESTPARSER_H
#define SPARSEOPT_RUNTIME_MANIFESTPARSER_H

#include "Manifest.h"
#include "ManifestFields.h"

#include <functional>
#include <map>
#include <string>
#include <vector>

namespace sparseopt {

/// Reads one manifest line by line and fills a Manifest.
class ManifestParser {
public:
  explicit ManifestParser(Manifest &manifest) : m(manifest) {}

  /// Parses the whole manifest text, then checks it as a whole (finish).
  Status parse(const std::string &text);

private:
  Manifest &m;
  int line = 0;                    ///< current line (1-based)
  std::vector<std::string> tokens; ///< tokens of the current line
  int headerLine = 0;
  int version = 0;                       ///< the header's version
  int endLine = 0;                       ///< the `end` line (0 while not seen)
  std::map<uint64_t, size_t> bufferById; ///< id -> index into m.buffers
  std::map<int, size_t> inputSlots;      ///< slot -> index into m.buffers
  std::map<int, size_t> outputSlots;     ///< slot -> index into m.buffers
  std::map<int, size_t> paramSlots;      ///< slot -> index into m.buffers
  /// The stage of the steps read from here on, and the lines of the
  /// `stage prepare` and `stage run` directives (0 while not seen).
  StepStage stage = StepStage::Run;
  int prepareLine = 0, runLine = 0;
  /// The all-reduce started under each slot and not yet waited for.
  std::map<int, size_t> openSlots;

  // Messages and fields shared by the line parsers (Manifest.cpp).
  Status errorAt(int where, Status status, const std::string &message) {
    return fail(status, m.where(where) + ": " + message);
  }
  Status error(const std::string &message) {
    return errorAt(line, SPARSEOPT_ERROR_PARSE, message);
  }

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

  Status byteSize(size_t index, uint64_t &out);
  Status keyword(size_t index, const char *expected);
  Status parseDirective();
  int stepLine(const StepDecl &step) const;

  // Lines that declare the program (ManifestDeclLines.cpp).
  Status parseHeader();
  Status parseEnd();
  Status parseModule();
  Status parseArena();
  Status parseBuffer();
  Status parseSlotBuffer(BufferDecl &buffer, BufferKind slotKind);
  Status parseConstantBuffer(BufferDecl &buffer);
  Status parseTempBuffer(BufferDecl &buffer);
  Status parseStage();
  Status parseCheck();
  Status checkPattern(const std::string &text, CheckDecl &check);
  Status parseStat();

  // Launch lines (ManifestLaunchLines.cpp).
  Status parseLaunch();
  Status checkLaunchLimits(const LaunchDecl &launch);
  Status parsePersistentGrid(const std::string &token, LaunchDecl &launch);
  Status parseArg(const std::string &token, ArgDecl &arg);
  Status parseTensorMapArg(const std::string &token, ArgDecl &arg);

  // Gemm, allreduce and wait lines (ManifestLibraryLines.cpp).
  Status parseKeyedFields(
      const char *directive, const char *const *keys, size_t count,
      size_t required, const char *syntax,
      const std::function<Status(size_t, const std::string &)> &field);
  Status parseGemm();
  Status gemmTypes(const GemmDecl &gemm);
  Status gemmField(GemmDecl &gemm, size_t index, const std::string &value);
  Status gemmExtent(const char *key, const std::string &value, uint64_t &out);
  Status gemmDType(const std::string &what, const std::string &value,
                   bool allowF32, GemmDType &out);
  Status gemmBuffer(const std::string &what, const std::string &value,
                    GemmOperand &out);
  Status gemmBias(const std::string &value, GemmDecl &gemm);
  Status parseAllReduce();
  Status parseWait();

  // Attention lines (ManifestAttentionLine.cpp).
  Status parseAttention();
  Status attentionField(AttentionDecl &a, size_t index,
                        const std::string &value);

  // Whole-file checks (ManifestCrossChecks.cpp).
  Status finish();
  Status contiguousSlots(const std::map<int, size_t> &slots, const char *kind,
                         std::vector<size_t> &out);
  Status tensorMapFits(const LaunchDecl &launch, size_t index);
  Status resolveGemm(GemmDecl &gemm);
  Status resolveAttention(AttentionDecl &a);
  Status resolveAllReduce(AllReduceDecl &a);
  Status prepareStepBuffers(const StepDecl &step);
  Status resolveCheck(CheckDecl &check);
  Status resolveStat(StatDecl &stat);
};

} // namespace sparseopt

#endif // SPARSEOPT_RUNTIME_MANIFESTPARSER_H
