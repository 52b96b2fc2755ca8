//===- Manifest.h - The program manifest (program.txt) ---------*- C++ -*-===//
//
// The in-memory form of an artifact directory's manifest and its parser.
// Parsing touches no GPU: it reads program.txt and checks that the module
// file and each constant file exist (constants with the declared size).
// The format is documented in sparseopt/runtime.h.
//
//===----------------------------------------------------------------------===//
#ifndef SPARSEOPT_RUNTIME_MANIFEST_H
#define SPARSEOPT_RUNTIME_MANIFEST_H

#include "Errors.h"

#include <cstdint>
#include <string>
#include <vector>

namespace sparseopt {

/// The manifest file name inside an artifact directory.
inline constexpr const char *kManifestFileName = "program.txt";
/// The only manifest version understood.
inline constexpr int kManifestVersion = 1;

enum class BufferKind { Input, Output, Constant, Temp };

/// One `buffer` line.
struct BufferDecl {
  uint64_t id = 0;
  BufferKind kind = BufferKind::Temp;
  int slot = 0;       ///< input/output index
  uint64_t bytes = 0; ///< size in bytes
  std::string file;   ///< constant: path (artifact dir already prepended)
  int line = 0;
};

enum class ArgKind { Buffer, I32, I64, F32 };

/// One kernel argument of a `launch` line.
struct ArgDecl {
  ArgKind kind = ArgKind::I32;
  uint64_t bufferId = 0; ///< Buffer: the id as written
  size_t buffer = 0;     ///< Buffer: index into Manifest::buffers
  /// Scalars: the value's bytes (4 or 8 of them), ready to be passed to
  /// cuLaunchKernel by address.
  alignas(8) unsigned char value[8] = {0};
};

/// One `launch` line.
struct LaunchDecl {
  std::string kernel;
  unsigned grid[3] = {1, 1, 1};
  unsigned block[3] = {1, 1, 1};
  unsigned sharedBytes = 0;
  std::vector<ArgDecl> args;
  int line = 0;
};

/// A parsed and validated manifest.
struct Manifest {
  std::string dir;          ///< the artifact directory
  std::string manifestPath; ///< <dir>/program.txt
  std::string modulePath;   ///< module file, artifact dir prepended
  int moduleLine = 0;
  std::vector<BufferDecl> buffers;
  std::vector<LaunchDecl> launches;
  /// Index into `buffers` of the buffer bound to each input/output slot.
  std::vector<size_t> inputs;
  std::vector<size_t> outputs;

  /// "<manifestPath>:<line>" for messages.
  std::string where(int line) const;
};

/// Reads and validates <artifactDir>/program.txt into `out`.
/// Errors: IO (a file is missing or unreadable), PARSE (malformed manifest,
/// constant size mismatch); messages start with "<manifest path>:<line>: ".
Status parseManifest(const std::string &artifactDir, Manifest &out);

} // namespace sparseopt

#endif // SPARSEOPT_RUNTIME_MANIFEST_H
