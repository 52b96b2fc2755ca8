//===- Files.h - Small file helpers that report errors as text -*- C++ -*-===//
#ifndef SPARSEOPT_RUNTIME_FILES_H
#define SPARSEOPT_RUNTIME_FILES_H

#include <cstdint>
#include <string>

namespace sparseopt {

/// Reads the whole regular file at `path` into `contents`. On failure returns
/// false and sets `error` to the reason (e.g. "No such file or directory").
bool readFile(const std::string &path, std::string &contents,
              std::string &error);

/// Stores the size of the regular file at `path` in `size`. On failure
/// (missing, not a regular file) returns false and sets `error`.
bool regularFileSize(const std::string &path, uint64_t &size,
                     std::string &error);

/// `relative` resolved against directory `dir` (returned unchanged when it is
/// already absolute).
std::string joinPath(const std::string &dir, const std::string &relative);

} // namespace sparseopt

#endif // SPARSEOPT_RUNTIME_FILES_H
