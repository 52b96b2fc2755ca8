//===- Context.cpp - Initialization, device queries, context binding ------===//

#include "Context.h"

#include <atomic>
#include <mutex>

namespace sparseopt {
namespace {

/// The device chosen by the first successful sparseopt_init().
struct DeviceState {
  std::mutex mutex;              // serializes initialization
  std::atomic<bool> ready{false}; // set once everything below is valid
  int ordinal = -1;
  CUdevice device = 0;
  CUcontext context = nullptr; // retained primary context, never released
  int multiprocessors = 0;     // what persistent grids are sized by
};

DeviceState state;

/// Makes the primary context current on this thread if it is not already.
Status bindContext(const char *api) noexcept {
  CUcontext current = nullptr;
  CUresult result = driver().cuCtxGetCurrent(&current);
  if (result != CUDA_SUCCESS)
    return cudaFail(result, api, "cuCtxGetCurrent");
  if (current == state.context)
    return SPARSEOPT_OK;
  result = driver().cuCtxSetCurrent(state.context);
  if (result != CUDA_SUCCESS)
    return cudaFail(result, api, "cuCtxSetCurrent(primary context)");
  return SPARSEOPT_OK;
}

/// Loads the driver and retains the primary context of `ordinal`.
Status initializeLocked(int ordinal) {
  const char *api = "sparseopt_init";
  // The driver's message ("CUDA driver library ... not found: ...") is
  // complete on its own.
  if (Status status = loadDriver(); status != SPARSEOPT_OK)
    return status;
  const DriverApi &cu = driver();

  CUresult result = cu.cuInit(0);
  if (result != CUDA_SUCCESS)
    return cudaFail(result, api, "cuInit");

  int count = 0;
  result = cu.cuDeviceGetCount(&count);
  if (result != CUDA_SUCCESS)
    return cudaFail(result, api, "cuDeviceGetCount");
  if (ordinal >= count)
    return fail(SPARSEOPT_ERROR_NO_DEVICE, api,
                "CUDA device " + std::to_string(ordinal) +
                    " requested but " + std::to_string(count) +
                    " device(s) are present");

  CUdevice device = 0;
  result = cu.cuDeviceGet(&device, ordinal);
  if (result != CUDA_SUCCESS)
    return cudaFail(result, api, "cuDeviceGet(" + std::to_string(ordinal) + ")");

  int multiprocessors = 0;
  result = cu.cuDeviceGetAttribute(
      &multiprocessors, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, device);
  if (result != CUDA_SUCCESS)
    return cudaFail(result, api, "cuDeviceGetAttribute(multiprocessor count)");

  CUcontext context = nullptr;
  result = cu.cuDevicePrimaryCtxRetain(&context, device);
  if (result != CUDA_SUCCESS)
    return cudaFail(result, api, "cuDevicePrimaryCtxRetain");

  result = cu.cuCtxSetCurrent(context);
  if (result != CUDA_SUCCESS) {
    Status status = cudaFail(result, api, "cuCtxSetCurrent(primary context)");
    cu.cuDevicePrimaryCtxRelease_v2(device);
    return status;
  }

  state.ordinal = ordinal;
  state.device = device;
  state.context = context;
  state.multiprocessors = multiprocessors;
  state.ready.store(true, std::memory_order_release);
  return SPARSEOPT_OK;
}

} // namespace

Status requireContext(const char *api) noexcept {
  if (!state.ready.load(std::memory_order_acquire))
    return fail(SPARSEOPT_ERROR_NOT_INITIALIZED, api,
                "the runtime is not initialized: call sparseopt_init() first");
  return bindContext(api);
}

int deviceMultiprocessors() noexcept { return state.multiprocessors; }

} // namespace sparseopt

using namespace sparseopt;

extern "C" {

sparseopt_status sparseopt_init(int device) {
  const char *api = "sparseopt_init";
  return guarded(api, [&]() -> Status {
    if (device < 0)
      return fail(SPARSEOPT_ERROR_INVALID_ARGUMENT, api,
                  "device ordinal " + std::to_string(device) +
                      " is negative");
    std::lock_guard<std::mutex> lock(state.mutex);
    if (state.ready.load(std::memory_order_acquire)) {
      if (device != state.ordinal)
        return fail(SPARSEOPT_ERROR_INVALID_ARGUMENT, api,
                    "already initialized on device " +
                        std::to_string(state.ordinal) +
                        ", cannot switch to device " + std::to_string(device));
      return bindContext(api);
    }
    return initializeLocked(device);
  });
}

sparseopt_status sparseopt_device_name(char *buf, size_t len) {
  const char *api = "sparseopt_device_name";
  return guarded(api, [&]() -> Status {
    if (buf == nullptr)
      return nullArgument(api, "buf");
    if (len == 0)
      return fail(SPARSEOPT_ERROR_INVALID_ARGUMENT, api, "len must be > 0");
    if (Status status = requireContext(api); status != SPARSEOPT_OK)
      return status;
    char name[256] = {0};
    CUresult result =
        driver().cuDeviceGetName(name, int(sizeof(name)), state.device);
    if (result != CUDA_SUCCESS)
      return cudaFail(result, api, "cuDeviceGetName");
    size_t n = 0;
    while (n + 1 < len && name[n] != '\0') {
      buf[n] = name[n];
      ++n;
    }
    buf[n] = '\0';
    return SPARSEOPT_OK;
  });
}

sparseopt_status sparseopt_synchronize(void) {
  const char *api = "sparseopt_synchronize";
  return guarded(api, [&]() -> Status {
    if (Status status = requireContext(api); status != SPARSEOPT_OK)
      return status;
    CUresult result = driver().cuCtxSynchronize();
    if (result != CUDA_SUCCESS)
      return cudaFail(result, api, "cuCtxSynchronize");
    return SPARSEOPT_OK;
  });
}

} // extern "C"
