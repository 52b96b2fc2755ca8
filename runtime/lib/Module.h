//===- Module.h - Loaded modules, their kernels and launches ---*- C++ -*-===//
#ifndef SPARSEOPT_RUNTIME_MODULE_H
#define SPARSEOPT_RUNTIME_MODULE_H

#include "Context.h"

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <string>

/// A kernel of a loaded module (the public sparseopt_function handle).
struct sparseopt_function_s {
  CUfunction handle = nullptr;
  std::string name;
  /// Where the module came from, for error messages.
  const std::string *origin = nullptr;
  /// The dynamic shared memory limit already configured on the function
  /// (the driver's default is 48 KiB), so launches only raise it when needed.
  std::atomic<unsigned> dynamicSharedLimit{48u * 1024u};
  std::mutex attributeMutex; // serializes raising that limit
};

/// A loaded module (the public sparseopt_module handle).
struct sparseopt_module_s {
  CUmodule handle = nullptr;
  /// "PTX string" or the file path, for error messages.
  std::string origin;
  std::mutex mutex; // guards `functions`
  std::map<std::string, std::unique_ptr<sparseopt_function_s>> functions;
};

namespace sparseopt {

/// JIT-compiles / loads a NUL-terminated module image (PTX, cubin or
/// fatbin). Failures name `origin` and include the driver's JIT error log.
/// The context must already be current (see requireContext).
Status loadModuleImage(const char *api, const char *image,
                       const std::string &origin, sparseopt_module *out);

/// Reads the file at `path` and loads it with loadModuleImage.
Status loadModuleFile(const char *api, const std::string &path,
                      sparseopt_module *out);

/// Unloads `module` and frees the handle (also on failure).
Status unloadModule(const char *api, sparseopt_module module);

/// Looks up (and caches) kernel `name` of `module`.
Status getFunction(const char *api, sparseopt_module module,
                   const std::string &name, sparseopt_function *out);

/// Launches `function`; messages name the kernel and the configuration.
/// `programmatic`: the kernel waits for the work before it itself
/// (`griddepcontrol.wait`), so it is launched as a programmatic dependent
/// launch (the caller checked programmaticLaunchEnabled()).
Status launchKernel(const char *api, sparseopt_function function,
                    const unsigned grid[3], const unsigned block[3],
                    unsigned sharedBytes, CUstream stream, void **args,
                    bool programmatic = false);

/// Whether launches marked programmatic are launched so: the driver has
/// cuLaunchKernelEx and SPARSEOPT_PDL is not "0" (read at each call; a
/// program reads it when it loads).
bool programmaticLaunchEnabled();

} // namespace sparseopt

#endif // SPARSEOPT_RUNTIME_MODULE_H
