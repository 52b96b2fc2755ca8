//===- Nccl.cpp - dlopen NCCL ---------------------------------------------===//

#include "Nccl.h"
#include "EntryPoints.h"
#include "Library.h"

#include <dlfcn.h>

#include <atomic>
#include <iterator>
#include <mutex>
#include <vector>

namespace sparseopt {
namespace {

SPARSEOPT_NCCL_ENTRY_POINTS(SPARSEOPT_CHECK_NOT_A_MACRO)
SPARSEOPT_NCCL_OPTIONAL_ENTRY_POINTS(SPARSEOPT_CHECK_NOT_A_MACRO)
#undef SPARSEOPT_CHECK_NOT_A_MACRO

NcclApi loadedApi;
std::mutex loadMutex;
std::atomic<bool> loaded{false};

template <typename Fn> bool resolve(void *library, const char *symbol, Fn &slot) {
  void *address = dlsym(library, symbol);
  slot = reinterpret_cast<Fn>(address);
  return address != nullptr;
}

bool resolveTable(void *library, NcclApi &table, std::string &reason) {
#define SPARSEOPT_RESOLVE_ENTRY_POINT(sym)                                     \
  if (!resolve(library, #sym, table.sym)) {                                    \
    reason = "does not export " #sym ": not NCCL, or older than 2.14";         \
    return false;                                                              \
  }
  SPARSEOPT_NCCL_ENTRY_POINTS(SPARSEOPT_RESOLVE_ENTRY_POINT)
#undef SPARSEOPT_RESOLVE_ENTRY_POINT
#define SPARSEOPT_RESOLVE_OPTIONAL_ENTRY_POINT(sym) resolve(library, #sym, table.sym);
  SPARSEOPT_NCCL_OPTIONAL_ENTRY_POINTS(SPARSEOPT_RESOLVE_OPTIONAL_ENTRY_POINT)
#undef SPARSEOPT_RESOLVE_OPTIONAL_ENTRY_POINT
  return true;
}

} // namespace

Status loadNccl(const std::string &context) noexcept {
  if (loaded.load(std::memory_order_acquire))
    return SPARSEOPT_OK;
  try {
    std::lock_guard<std::mutex> lock(loadMutex);
    if (loaded.load(std::memory_order_relaxed))
      return SPARSEOPT_OK;
    NcclApi table;
    std::string tried;
    bool fromEnv = false;
    void *library = openFirstLibrary(
        kNcclLibraryEnvVar,
        std::vector<const char *>(std::begin(kDefaultNcclLibraries),
                                  std::end(kDefaultNcclLibraries)),
        [&](void *handle, std::string &reason) {
          return resolveTable(handle, table, reason);
        },
        tried, fromEnv);
    if (library != nullptr) {
      loadedApi = table;
      loaded.store(true, std::memory_order_release);
      return SPARSEOPT_OK;
    }
    std::string hint =
        fromEnv ? std::string(" (from ") + kNcclLibraryEnvVar + ")"
                : std::string("; install NCCL (e.g. the nvidia-nccl-cu13 "
                              "wheel or libnccl2) or set ") +
                      kNcclLibraryEnvVar + " to the library's path";
    return fail(SPARSEOPT_ERROR_NO_LIBRARY,
                context + ": collectives need NCCL, which could not be "
                          "opened: tried " + tried + hint);
  } catch (...) {
    return fail(SPARSEOPT_ERROR_OUT_OF_MEMORY, context + ": out of host memory");
  }
}

const NcclApi &nccl() noexcept { return loadedApi; }

std::string ncclResultText(ncclResult_t result, ncclComm_t comm) {
  const char *name = nullptr;
  switch (result) {
  case ncclSuccess: name = "ncclSuccess"; break;
  case ncclUnhandledCudaError: name = "ncclUnhandledCudaError"; break;
  case ncclSystemError: name = "ncclSystemError"; break;
  case ncclInternalError: name = "ncclInternalError"; break;
  case ncclInvalidArgument: name = "ncclInvalidArgument"; break;
  case ncclInvalidUsage: name = "ncclInvalidUsage"; break;
  case ncclRemoteError: name = "ncclRemoteError"; break;
  case ncclInProgress: name = "ncclInProgress"; break;
  default: break;
  }
  std::string text = name != nullptr ? name : "ncclResult " + std::to_string(int(result));
  if (loaded.load(std::memory_order_acquire)) {
    text += std::string(" (") + nccl().ncclGetErrorString(result) + ")";
    if (comm != nullptr && nccl().ncclGetLastError != nullptr) {
      const char *last = nccl().ncclGetLastError(comm);
      if (last != nullptr && *last != '\0')
        text += ": " + std::string(last);
    }
  }
  return text;
}

ncclDataType_t ncclType(GemmDType dtype) {
  switch (dtype) {
  case GemmDType::F16:
    return ncclFloat16;
  case GemmDType::BF16:
    return ncclBfloat16;
  case GemmDType::F32:
    return ncclFloat32;
  }
  return ncclFloat32;
}

ncclRedOp_t ncclOp(ReduceOp op) {
  switch (op) {
  case ReduceOp::Sum:
    return ncclSum;
  case ReduceOp::Prod:
    return ncclProd;
  case ReduceOp::Max:
    return ncclMax;
  case ReduceOp::Min:
    return ncclMin;
  case ReduceOp::Avg:
    return ncclAvg;
  }
  return ncclSum;
}

} // namespace sparseopt
