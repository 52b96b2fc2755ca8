//===- Driver.h - The CUDA driver, loaded at run time ----------*- C++ -*-===//
//
// The runtime never links against libcuda: it dlopen()s the driver library
// and resolves each entry point it uses into a table of function pointers.
// The pointer types come from the declarations in cuda.h, so the compiler
// checks every call against the real prototype.
//
//===----------------------------------------------------------------------===//
#ifndef SPARSEOPT_RUNTIME_DRIVER_H
#define SPARSEOPT_RUNTIME_DRIVER_H

#include "Errors.h"

#include <cuda.h>

#include <string>

namespace sparseopt {

/// Every driver entry point the runtime uses, by its exported symbol name.
/// cuda.h renames several functions with macros (e.g. `#define cuMemAlloc
/// cuMemAlloc_v2`); the table lists the real, versioned symbols, and
/// Driver.cpp statically checks that no listed name is itself such a macro.
/// cuTensorMapEncodeTiled (TMA tensor maps, `tmap:` program arguments) needs
/// a CUDA 12.0 driver; the PTX the compiler writes needs a newer one anyway.
#define SPARSEOPT_DRIVER_ENTRY_POINTS(X)                                      \
  X(cuGetErrorName)                                                            \
  X(cuGetErrorString)                                                          \
  X(cuInit)                                                                    \
  X(cuDeviceGetCount)                                                          \
  X(cuDeviceGet)                                                               \
  X(cuDeviceGetName)                                                           \
  X(cuDeviceGetAttribute)                                                      \
  X(cuDevicePrimaryCtxRetain)                                                  \
  X(cuDevicePrimaryCtxRelease_v2)                                              \
  X(cuCtxGetCurrent)                                                           \
  X(cuCtxSetCurrent)                                                           \
  X(cuCtxSynchronize)                                                          \
  X(cuMemAlloc_v2)                                                             \
  X(cuMemFree_v2)                                                              \
  X(cuMemcpyHtoD_v2)                                                           \
  X(cuMemcpyDtoH_v2)                                                           \
  X(cuMemsetD8_v2)                                                             \
  X(cuMemsetD8Async)                                                           \
  X(cuStreamCreate)                                                            \
  X(cuStreamDestroy_v2)                                                        \
  X(cuStreamSynchronize)                                                       \
  X(cuStreamCreateWithPriority)                                                \
  X(cuStreamWaitEvent)                                                         \
  X(cuStreamQuery)                                                             \
  X(cuCtxGetStreamPriorityRange)                                               \
  X(cuEventCreate)                                                             \
  X(cuEventDestroy_v2)                                                         \
  X(cuEventRecord)                                                             \
  X(cuEventSynchronize)                                                        \
  X(cuEventElapsedTime_v2)                                                     \
  X(cuModuleLoadDataEx)                                                        \
  X(cuModuleUnload)                                                            \
  X(cuModuleGetFunction)                                                       \
  X(cuFuncSetAttribute)                                                        \
  X(cuLaunchKernel)                                                            \
  X(cuTensorMapEncodeTiled)

/// Function pointers into the loaded driver, one member per entry point,
/// named like the symbol (e.g. `driver().cuMemAlloc_v2(&ptr, bytes)`).
struct DriverApi {
#define SPARSEOPT_DECLARE_ENTRY_POINT(name) decltype(&::name) name = nullptr;
  SPARSEOPT_DRIVER_ENTRY_POINTS(SPARSEOPT_DECLARE_ENTRY_POINT)
#undef SPARSEOPT_DECLARE_ENTRY_POINT
  /// Optional (a CUDA 12.4 driver): each kernel parameter's offset and
  /// size, to check a launch's arguments against the kernel; null when the
  /// driver lacks it.
  decltype(&::cuFuncGetParamInfo) cuFuncGetParamInfo = nullptr;
  /// Optional (a CUDA 12.0 driver): launches with attributes, for
  /// programmatic dependent launches; null when the driver lacks it (the
  /// runtime then launches every kernel after the step before it ends).
  decltype(&::cuLaunchKernelEx) cuLaunchKernelEx = nullptr;
};

/// Name of the environment variable that overrides the driver library.
inline constexpr const char *kDriverLibraryEnvVar = "SPARSEOPT_CUDA_LIBRARY";
/// The driver library opened when the variable is unset or empty.
inline constexpr const char *kDefaultDriverLibrary = "libcuda.so.1";

/// Opens the driver library and resolves every entry point. Thread-safe; a
/// success is permanent (later calls return OK at once), a failure is not
/// cached, so a later call tries again. Errors: NO_DRIVER.
Status loadDriver() noexcept;

/// The entry-point table. Only valid after loadDriver() returned OK.
const DriverApi &driver() noexcept;

/// "CUDA_ERROR_OUT_OF_MEMORY (out of memory)" for `result`, using the
/// driver's own names when it is loaded.
std::string cudaErrorText(CUresult result);

/// The status that represents a failed driver call returning `result`.
Status statusForCudaError(CUresult result) noexcept;

/// Records "<api>: <call> failed: <cudaErrorText>" and returns the matching
/// status. `call` describes what was attempted, e.g. "cuMemAlloc(64 bytes)".
Status cudaFail(CUresult result, const char *api,
                const std::string &call) noexcept;

} // namespace sparseopt

#endif // SPARSEOPT_RUNTIME_DRIVER_H
