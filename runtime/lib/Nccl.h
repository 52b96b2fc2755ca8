//===- Nccl.h - NCCL, loaded at run time, for collective steps -*- C++ -*-===//
//
// The `allreduce` lines of a program run as NCCL all-reduces on a
// communicator's stream. Like cuBLASLt, NCCL is never linked: it is
// dlopen()ed the first time a communicator is made (a process that runs no
// collective never needs it), and its entry points are typed from nccl.h.
//
// Communicators are non-blocking (ncclConfig_t::blocking = 0) when the
// runtime creates them, so that neither the initialization nor a collective
// can hang the caller: every wait polls ncclCommGetAsyncError against a
// deadline and aborts the communicator when it passes.
//
//===----------------------------------------------------------------------===//

#ifndef SPARSEOPT_RUNTIME_NCCL_H
#define SPARSEOPT_RUNTIME_NCCL_H

#include "Driver.h"
#include "Manifest.h"

#include <nccl.h>

#include <string>

namespace sparseopt {

/// Every NCCL entry point the runtime needs (all exist since NCCL 2.14,
/// which introduced ncclCommInitRankConfig).
#define SPARSEOPT_NCCL_ENTRY_POINTS(X)                                        \
  X(ncclGetVersion)                                                            \
  X(ncclGetUniqueId)                                                           \
  X(ncclCommInitRankConfig)                                                    \
  X(ncclCommDestroy)                                                           \
  X(ncclCommAbort)                                                             \
  X(ncclCommGetAsyncError)                                                     \
  X(ncclCommCount)                                                             \
  X(ncclCommUserRank)                                                          \
  X(ncclGetErrorString)                                                        \
  X(ncclAllReduce)

/// Used only for messages, when the library has it (NCCL 2.13+).
#define SPARSEOPT_NCCL_OPTIONAL_ENTRY_POINTS(X) X(ncclGetLastError)

struct NcclApi {
#define SPARSEOPT_DECLARE_ENTRY_POINT(name) decltype(&::name) name = nullptr;
  SPARSEOPT_NCCL_ENTRY_POINTS(SPARSEOPT_DECLARE_ENTRY_POINT)
  SPARSEOPT_NCCL_OPTIONAL_ENTRY_POINTS(SPARSEOPT_DECLARE_ENTRY_POINT)
#undef SPARSEOPT_DECLARE_ENTRY_POINT
};

/// Name of the environment variable that overrides the library.
inline constexpr const char *kNcclLibraryEnvVar = "SPARSEOPT_NCCL_LIBRARY";

/// The files tried in order when the variable is unset or empty: the soname
/// (dlopen returns a copy already loaded in the process, e.g. PyTorch's),
/// the development link and the CUDA toolkit's locations.
inline constexpr const char *kDefaultNcclLibraries[] = {
    "libnccl.so.2", "libnccl.so", "/usr/local/cuda/lib/libnccl.so.2",
    "/usr/local/cuda/lib64/libnccl.so.2"};

/// Opens NCCL and resolves every entry point. Thread-safe; a success is
/// permanent. Errors: NO_LIBRARY, the message starting "<context>: ".
Status loadNccl(const std::string &context) noexcept;

/// The entry-point table. Only valid after loadNccl() returned OK.
const NcclApi &nccl() noexcept;

/// "unhandled system error (ncclSystemError)"-style text for `result`, plus
/// the communicator's last error message when there is one.
std::string ncclResultText(ncclResult_t result, ncclComm_t comm = nullptr);

/// The NCCL data type of a manifest element type.
ncclDataType_t ncclType(GemmDType dtype);

/// The NCCL reduction of a manifest reduction.
ncclRedOp_t ncclOp(ReduceOp op);

} // namespace sparseopt

#endif // SPARSEOPT_RUNTIME_NCCL_H
