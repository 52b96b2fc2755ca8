//===- Library.h - Opening a CUDA library at run time ----------*- C++ -*-===//
//
// The runtime links no CUDA library: cuBLASLt and NCCL are dlopen()ed the
// first time a program needs them, from a list of file names that an
// environment variable can replace. This is the search both share; each
// library then resolves its own entry-point table from the handle.
//
//===----------------------------------------------------------------------===//

#ifndef SPARSEOPT_RUNTIME_LIBRARY_H
#define SPARSEOPT_RUNTIME_LIBRARY_H

#include <functional>
#include <string>
#include <vector>

namespace sparseopt {

/// Opens the first of `names` (or only the file in environment variable
/// `envVar` when it is set and non-empty) for which `accept(handle,
/// reason)` returns true; `accept` resolves the entry points and otherwise
/// sets `reason`. A rejected handle is closed. Returns the accepted handle
/// (kept open for the life of the process), or null with `tried` listing
/// each file and why it failed, and `fromEnv` telling whether the variable
/// chose the file.
void *openFirstLibrary(const char *envVar, const std::vector<const char *> &names,
                       const std::function<bool(void *, std::string &)> &accept,
                       std::string &tried, bool &fromEnv);

} // namespace sparseopt

#endif // SPARSEOPT_RUNTIME_LIBRARY_H
