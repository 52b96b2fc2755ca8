//===- Module.cpp - Module loading, kernel lookup and launches ------------===//

#include "Module.h"

#include "Files.h"

#include <cstdlib>
#include <cstring>
#include <vector>

using namespace sparseopt;

namespace {

/// Size of the buffer that receives the driver's JIT error log.
constexpr size_t kJitLogBytes = 16 * 1024;

std::string dim3Text(const unsigned d[3]) {
  return "(" + std::to_string(d[0]) + "," + std::to_string(d[1]) + "," +
         std::to_string(d[2]) + ")";
}

std::string kernelText(sparseopt_function f) {
  std::string text = "kernel '" + f->name + "'";
  if (f->origin != nullptr)
    text += " of " + *f->origin;
  return text;
}

/// Raises the function's dynamic shared memory limit to `bytes` if needed.
Status ensureDynamicShared(const char *api, sparseopt_function f,
                           unsigned bytes) {
  if (bytes <= f->dynamicSharedLimit.load(std::memory_order_acquire))
    return SPARSEOPT_OK;
  std::lock_guard<std::mutex> lock(f->attributeMutex);
  if (bytes <= f->dynamicSharedLimit.load(std::memory_order_acquire))
    return SPARSEOPT_OK;
  CUresult result = driver().cuFuncSetAttribute(
      f->handle, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, int(bytes));
  if (result != CUDA_SUCCESS)
    return cudaFail(result, api,
                    "setting MAX_DYNAMIC_SHARED_SIZE_BYTES to " +
                        std::to_string(bytes) + " on " + kernelText(f));
  f->dynamicSharedLimit.store(bytes, std::memory_order_release);
  return SPARSEOPT_OK;
}

} // namespace

namespace sparseopt {

Status loadModuleImage(const char *api, const char *image,
                       const std::string &origin, sparseopt_module *out) {
  std::vector<char> log(kJitLogBytes, '\0');
  CUjit_option options[] = {CU_JIT_ERROR_LOG_BUFFER,
                            CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
  void *values[] = {log.data(),
                    reinterpret_cast<void *>(uintptr_t(log.size() - 1))};

  CUmodule handle = nullptr;
  CUresult result = driver().cuModuleLoadDataEx(&handle, image, 2, options,
                                                values);
  if (result != CUDA_SUCCESS) {
    std::string message = std::string(api) + ": loading module " + origin +
                          " failed: " + cudaErrorText(result);
    if (log[0] != '\0')
      message += std::string("\nJIT error log:\n") + log.data();
    return fail(statusForCudaError(result), message);
  }

  auto module = std::make_unique<sparseopt_module_s>();
  module->handle = handle;
  module->origin = origin;
  *out = module.release();
  return SPARSEOPT_OK;
}

Status loadModuleFile(const char *api, const std::string &path,
                      sparseopt_module *out) {
  std::string contents, error;
  if (!readFile(path, contents, error))
    return fail(SPARSEOPT_ERROR_IO, api,
                "cannot read module file '" + path + "': " + error);
  // PTX must be NUL-terminated; the extra byte is harmless for binaries.
  contents.push_back('\0');
  return loadModuleImage(api, contents.data(), "'" + path + "'", out);
}

Status unloadModule(const char *api, sparseopt_module module) {
  std::unique_ptr<sparseopt_module_s> owned(module);
  CUresult result = driver().cuModuleUnload(owned->handle);
  if (result != CUDA_SUCCESS)
    return cudaFail(result, api, "unloading module " + owned->origin);
  return SPARSEOPT_OK;
}

Status getFunction(const char *api, sparseopt_module module,
                   const std::string &name, sparseopt_function *out) {
  std::lock_guard<std::mutex> lock(module->mutex);
  auto found = module->functions.find(name);
  if (found != module->functions.end()) {
    *out = found->second.get();
    return SPARSEOPT_OK;
  }
  CUfunction handle = nullptr;
  CUresult result =
      driver().cuModuleGetFunction(&handle, module->handle, name.c_str());
  if (result != CUDA_SUCCESS)
    return cudaFail(result, api,
                    "looking up kernel '" + name + "' in module " +
                        module->origin);
  auto function = std::make_unique<sparseopt_function_s>();
  function->handle = handle;
  function->name = name;
  function->origin = &module->origin;
  *out = function.get();
  module->functions.emplace(name, std::move(function));
  return SPARSEOPT_OK;
}

bool programmaticLaunchEnabled() {
  const char *env = std::getenv("SPARSEOPT_PDL");
  return !(env && std::strcmp(env, "0") == 0) &&
         driver().cuLaunchKernelEx != nullptr;
}

/// cuLaunchKernelEx with programmatic stream serialization: the kernel may
/// begin once every block of the kernel before it has started its
/// dependents (`griddepcontrol.launch_dependents`) or exited.
static CUresult launchProgrammatic(sparseopt_function f, const unsigned grid[3],
                                   const unsigned block[3],
                                   unsigned sharedBytes, CUstream stream,
                                   void **args) {
  CUlaunchAttribute attr = {};
  attr.id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
  attr.value.programmaticStreamSerializationAllowed = 1;
  CUlaunchConfig config = {};
  config.gridDimX = grid[0];
  config.gridDimY = grid[1];
  config.gridDimZ = grid[2];
  config.blockDimX = block[0];
  config.blockDimY = block[1];
  config.blockDimZ = block[2];
  config.sharedMemBytes = sharedBytes;
  config.hStream = stream;
  config.attrs = &attr;
  config.numAttrs = 1;
  return driver().cuLaunchKernelEx(&config, f->handle, args, nullptr);
}

Status launchKernel(const char *api, sparseopt_function f,
                    const unsigned grid[3], const unsigned block[3],
                    unsigned sharedBytes, CUstream stream, void **args,
                    bool programmatic) {
  for (int i = 0; i < 3; ++i)
    if (grid[i] == 0 || block[i] == 0)
      return fail(SPARSEOPT_ERROR_INVALID_ARGUMENT, api,
                  "launching " + kernelText(f) + ": grid " + dim3Text(grid) +
                      " and block " + dim3Text(block) +
                      " dimensions must all be >= 1");
  if (Status status = ensureDynamicShared(api, f, sharedBytes);
      status != SPARSEOPT_OK)
    return status;
  CUresult result =
      programmatic
          ? launchProgrammatic(f, grid, block, sharedBytes, stream, args)
          : driver().cuLaunchKernel(f->handle, grid[0], grid[1], grid[2],
                                    block[0], block[1], block[2], sharedBytes,
                                    stream, args, nullptr);
  if (result != CUDA_SUCCESS)
    return cudaFail(result, api,
                    "launching " + kernelText(f) + " with grid " +
                        dim3Text(grid) + " block " + dim3Text(block) +
                        " smem " + std::to_string(sharedBytes));
  return SPARSEOPT_OK;
}

} // namespace sparseopt

extern "C" {

sparseopt_status sparseopt_module_load_ptx(const char *ptx,
                                           sparseopt_module *out) {
  const char *api = "sparseopt_module_load_ptx";
  return guarded(api, [&]() -> Status {
    if (ptx == nullptr)
      return nullArgument(api, "ptx");
    if (out == nullptr)
      return nullArgument(api, "out");
    if (Status status = requireContext(api); status != SPARSEOPT_OK)
      return status;
    return loadModuleImage(api, ptx, "<PTX string>", out);
  });
}

sparseopt_status sparseopt_module_load_file(const char *path,
                                            sparseopt_module *out) {
  const char *api = "sparseopt_module_load_file";
  return guarded(api, [&]() -> Status {
    if (path == nullptr)
      return nullArgument(api, "path");
    if (out == nullptr)
      return nullArgument(api, "out");
    if (Status status = requireContext(api); status != SPARSEOPT_OK)
      return status;
    return loadModuleFile(api, path, out);
  });
}

sparseopt_status sparseopt_module_unload(sparseopt_module m) {
  const char *api = "sparseopt_module_unload";
  return guarded(api, [&]() -> Status {
    if (m == nullptr)
      return nullArgument(api, "m");
    if (Status status = requireContext(api); status != SPARSEOPT_OK)
      return status;
    return unloadModule(api, m);
  });
}

sparseopt_status sparseopt_module_get_function(sparseopt_module m,
                                               const char *name,
                                               sparseopt_function *out) {
  const char *api = "sparseopt_module_get_function";
  return guarded(api, [&]() -> Status {
    if (m == nullptr)
      return nullArgument(api, "m");
    if (name == nullptr)
      return nullArgument(api, "name");
    if (out == nullptr)
      return nullArgument(api, "out");
    if (Status status = requireContext(api); status != SPARSEOPT_OK)
      return status;
    return getFunction(api, m, name, out);
  });
}

sparseopt_status sparseopt_launch(sparseopt_function f, const unsigned grid[3],
                                  const unsigned block[3],
                                  unsigned shared_bytes, sparseopt_stream s,
                                  void **args) {
  const char *api = "sparseopt_launch";
  return guarded(api, [&]() -> Status {
    if (f == nullptr)
      return nullArgument(api, "f");
    if (grid == nullptr)
      return nullArgument(api, "grid");
    if (block == nullptr)
      return nullArgument(api, "block");
    if (Status status = requireContext(api); status != SPARSEOPT_OK)
      return status;
    return launchKernel(api, f, grid, block, shared_bytes, toCUstream(s),
                        args);
  });
}

} // extern "C"
