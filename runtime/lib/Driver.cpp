//===- Driver.cpp - dlopen the CUDA driver and resolve its entry points ---===//

#include "Driver.h"
#include "EntryPoints.h"

#include <dlfcn.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <mutex>

namespace sparseopt {
namespace {

// The entry-point table lists no macro (EntryPoints.h).
SPARSEOPT_DRIVER_ENTRY_POINTS(SPARSEOPT_CHECK_NOT_A_MACRO)
#undef SPARSEOPT_CHECK_NOT_A_MACRO

/// Fallback symbols for entry points whose versioned name is recent:
/// cuEventElapsedTime_v2 appeared in CUDA 12.8 drivers; the older symbol has
/// the same prototype.
const char *fallbackSymbol(const char *symbol) {
  if (std::strcmp(symbol, "cuEventElapsedTime_v2") == 0)
    return "cuEventElapsedTime";
  return nullptr;
}

DriverApi loadedApi;
std::mutex loadMutex;
std::atomic<bool> loaded{false};

/// Resolves `symbol` (or its fallback) from `library` into `slot`.
template <typename Fn>
bool resolve(void *library, const char *symbol, Fn &slot) {
  void *address = dlsym(library, symbol);
  if (address == nullptr) {
    if (const char *fallback = fallbackSymbol(symbol))
      address = dlsym(library, fallback);
  }
  slot = reinterpret_cast<Fn>(address);
  return address != nullptr;
}

Status loadLocked() {
  const char *name = std::getenv(kDriverLibraryEnvVar);
  if (name == nullptr || *name == '\0')
    name = kDefaultDriverLibrary;

  void *library = dlopen(name, RTLD_NOW | RTLD_LOCAL);
  if (library == nullptr) {
    const char *reason = dlerror();
    return fail(SPARSEOPT_ERROR_NO_DRIVER,
                std::string("CUDA driver library ") + name +
                    " not found: this command needs an NVIDIA GPU and driver (" +
                    (reason != nullptr ? reason : "dlopen failed") + ")");
  }

  DriverApi table;
#define SPARSEOPT_RESOLVE_ENTRY_POINT(sym)                                     \
  if (!resolve(library, #sym, table.sym)) {                                    \
    dlclose(library);                                                          \
    return fail(SPARSEOPT_ERROR_NO_DRIVER,                                     \
                std::string("CUDA driver library ") + name +                   \
                    " does not export " #sym                                   \
                    ": the NVIDIA driver is too old or the library is not "    \
                    "libcuda");                                                \
  }
  SPARSEOPT_DRIVER_ENTRY_POINTS(SPARSEOPT_RESOLVE_ENTRY_POINT)
#undef SPARSEOPT_RESOLVE_ENTRY_POINT
  resolve(library, "cuFuncGetParamInfo", table.cuFuncGetParamInfo);
  resolve(library, "cuLaunchKernelEx", table.cuLaunchKernelEx);

  // The library stays open for the life of the process.
  loadedApi = table;
  loaded.store(true, std::memory_order_release);
  return SPARSEOPT_OK;
}

} // namespace

Status loadDriver() noexcept {
  if (loaded.load(std::memory_order_acquire))
    return SPARSEOPT_OK;
  try {
    std::lock_guard<std::mutex> lock(loadMutex);
    if (loaded.load(std::memory_order_acquire))
      return SPARSEOPT_OK;
    return loadLocked();
  } catch (...) {
    return fail(SPARSEOPT_ERROR_NO_DRIVER,
                "loading the CUDA driver failed: out of host memory");
  }
}

const DriverApi &driver() noexcept { return loadedApi; }

std::string cudaErrorText(CUresult result) {
  const char *name = nullptr;
  const char *description = nullptr;
  if (loaded.load(std::memory_order_acquire)) {
    if (loadedApi.cuGetErrorName(result, &name) != CUDA_SUCCESS)
      name = nullptr;
    if (loadedApi.cuGetErrorString(result, &description) != CUDA_SUCCESS)
      description = nullptr;
  }
  std::string text = name != nullptr
                         ? std::string(name)
                         : "CUDA error " + std::to_string(int(result));
  if (description != nullptr)
    text += std::string(" (") + description + ")";
  return text;
}

Status statusForCudaError(CUresult result) noexcept {
  switch (result) {
  case CUDA_SUCCESS:
    return SPARSEOPT_OK;
  case CUDA_ERROR_OUT_OF_MEMORY:
    return SPARSEOPT_ERROR_OUT_OF_MEMORY;
  case CUDA_ERROR_NO_DEVICE:
  case CUDA_ERROR_INVALID_DEVICE:
    return SPARSEOPT_ERROR_NO_DEVICE;
  case CUDA_ERROR_NOT_FOUND:
    return SPARSEOPT_ERROR_NOT_FOUND;
  default:
    return SPARSEOPT_ERROR_CUDA;
  }
}

Status cudaFail(CUresult result, const char *api,
                const std::string &call) noexcept {
  Status status = statusForCudaError(result);
  try {
    return fail(status, api, call + " failed: " + cudaErrorText(result));
  } catch (...) {
    return fail(status, std::string());
  }
}

} // namespace sparseopt
