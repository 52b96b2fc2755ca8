//===- ProgramResources.cpp - A program's GPU resources -------------------===//
//
// What sparseopt_program_load creates for a parsed program and
// sparseopt_program_destroy frees: the loaded module, one resolved kernel
// per launch (its arguments checked against the kernel's parameters) with
// its grid on this device, the device memory of constant and temporary
// buffers and of the arena, the cuBLASLt plans of the gemm lines and the
// events of the allreduce lines.
//
//===----------------------------------------------------------------------===//

#include "ProgramState.h"

#include "Files.h"

using namespace sparseopt;

/// Allocates (and for constants, uploads) buffer `index` of the program.
Status sparseopt::createBuffer(const char *api, sparseopt_program_s &p,
                               size_t index) {
  const BufferDecl &buffer = p.manifest.buffers[index];
  const std::string where =
      p.manifest.where(buffer.line) + ": buffer " + std::to_string(buffer.id);
  if (buffer.bytes == 0)
    return SPARSEOPT_OK;

  std::string contents;
  if (buffer.kind == BufferKind::Constant) {
    std::string reason;
    if (!readFile(buffer.file, contents, reason))
      return fail(SPARSEOPT_ERROR_IO, api,
                  where + ": cannot read constant file " + buffer.file + ": " +
                      reason);
    if (contents.size() != buffer.bytes)
      return fail(SPARSEOPT_ERROR_PARSE, api,
                  where + ": constant file " + buffer.file + " has " +
                      std::to_string(contents.size()) +
                      " bytes but the manifest declares " +
                      std::to_string(buffer.bytes));
  }

  CUdeviceptr &ptr = p.memory[index];
  if (buffer.arenaOffset >= 0) { // a view of the arena, zeroed with it
    ptr = p.arena + CUdeviceptr(buffer.arenaOffset);
    return SPARSEOPT_OK;
  }
  CUresult result = driver().cuMemAlloc_v2(&ptr, size_t(buffer.bytes));
  if (result != CUDA_SUCCESS) {
    ptr = 0;
    return cudaFail(result, api,
                    where + ": cuMemAlloc(" + std::to_string(buffer.bytes) +
                        " bytes)");
  }
  if (buffer.kind == BufferKind::Constant)
    result = driver().cuMemcpyHtoD_v2(ptr, contents.data(), contents.size());
  else // Temporaries start zero-filled so runs are deterministic.
    result = driver().cuMemsetD8_v2(ptr, 0, size_t(buffer.bytes));
  if (result != CUDA_SUCCESS)
    return cudaFail(result, api, where + ": initializing device memory");
  return SPARSEOPT_OK;
}

namespace {

/// The bytes cuLaunchKernel reads for an argument of `kind`.
size_t argumentBytes(ArgKind kind) {
  switch (kind) {
  case ArgKind::Buffer:
  case ArgKind::I64:
    return 8;
  case ArgKind::I32:
  case ArgKind::F32:
    return 4;
  case ArgKind::TensorMap:
    return sizeof(CUtensorMap);
  }
  return 0;
}

/// The launch's arguments against the kernel's parameters (count and
/// sizes, as the driver reports them): a program whose launch line does not
/// fit its kernel is an error at load, not memory read out of bounds.
Status checkKernelParams(const std::string &where, CUfunction kernel,
                         const LaunchDecl &launch) {
  auto info = driver().cuFuncGetParamInfo;
  if (info == nullptr)
    return SPARSEOPT_OK; // a driver before CUDA 12.4: not checked
  std::vector<size_t> sizes;
  for (size_t i = 0;; ++i) {
    size_t offset = 0, size = 0;
    if (info(kernel, i, &offset, &size) != CUDA_SUCCESS)
      break;
    sizes.push_back(size);
  }
  auto describe = [](const std::vector<size_t> &v) {
    std::string text;
    for (size_t b : v)
      text += (text.empty() ? "" : ", ") + std::to_string(b);
    return "(" + text + " bytes)";
  };
  std::vector<size_t> given;
  for (const ArgDecl &arg : launch.args)
    given.push_back(argumentBytes(arg.kind));
  if (sizes != given)
    return fail(SPARSEOPT_ERROR_PARSE,
                where + ": kernel '" + launch.kernel + "' takes " +
                    std::to_string(sizes.size()) + " parameters " +
                    describe(sizes) + ", the launch line gives " +
                    std::to_string(given.size()) + " " + describe(given));
  return SPARSEOPT_OK;
}

} // namespace

/// Creates the GPU resources of a parsed program.
Status sparseopt::acquireResources(const char *api, sparseopt_program_s &p) {
  const Manifest &m = p.manifest;
  // Messages read "<api>: <manifest>:<line>: <what failed>".
  auto at = [&](int line) { return std::string(api) + ": " + m.where(line); };
  // Only a program of library lines alone may have no module.
  if (m.moduleLine != 0)
    if (Status s =
            loadModuleFile(at(m.moduleLine).c_str(), m.modulePath, &p.module))
      return s;
  // Read once per load, so that one process can time a program loaded
  // with SPARSEOPT_PDL=0 beside one loaded without.
  const bool pdl = programmaticLaunchEnabled();
  for (const LaunchDecl &launch : m.launches) {
    sparseopt_function kernel = nullptr;
    if (Status s = getFunction(at(launch.line).c_str(), p.module, launch.kernel,
                               &kernel))
      return s;
    if (Status s = checkKernelParams(at(launch.line), kernel->handle, launch))
      return s;
    p.kernels.push_back(kernel);
    std::array<unsigned, 3> grid = {launch.grid[0], launch.grid[1],
                                    launch.grid[2]};
    if (launch.persistent.units != 0)
      grid[0] =
          persistentGridX(launch.persistent, unsigned(deviceMultiprocessors()));
    p.grids.push_back(grid);
    p.programmatic.push_back(launch.programmatic && pdl);
  }
  p.tensorMaps.assign(m.tensorMaps, EncodedTensorMap());
  p.memory.assign(m.buffers.size(), 0);
  p.borrowed.assign(m.buffers.size(), false);
  if (m.arenaBytes != 0) {
    CUresult result = driver().cuMemAlloc_v2(&p.arena, size_t(m.arenaBytes));
    if (result == CUDA_SUCCESS)
      result = driver().cuMemsetD8_v2(p.arena, 0, size_t(m.arenaBytes));
    if (result != CUDA_SUCCESS)
      return cudaFail(result, api,
                      m.where(m.arenaLine) + ": allocating the arena (" +
                          std::to_string(m.arenaBytes) + " bytes)");
  }
  for (size_t i = 0; i < m.buffers.size(); ++i) {
    BufferKind kind = m.buffers[i].kind;
    if (kind != BufferKind::Constant && kind != BufferKind::Temp)
      continue;
    if (Status s = createBuffer(api, p, i))
      return s;
  }
  if (Status s = createGemmResources(api, m, p.gemms))
    return s;
  if (Status s = createAttentionResources(api, m, p.attentions))
    return s;
  for (const AllReduceDecl &a : m.allReduces) {
    for (std::vector<CUevent> *events : {&p.readyEvents, &p.doneEvents}) {
      CUevent event = nullptr;
      CUresult result = driver().cuEventCreate(&event, CU_EVENT_DISABLE_TIMING);
      if (result != CUDA_SUCCESS)
        return cudaFail(result, api, m.where(a.line) + ": cuEventCreate");
      events->push_back(event);
    }
  }
  // Finish the uploads and memsets (queued on the legacy default stream)
  // before the program can run on any stream, including non-blocking ones.
  CUresult result = driver().cuCtxSynchronize();
  if (result != CUDA_SUCCESS)
    return cudaFail(result, api, "waiting for constant uploads");
  p.loaded = true;
  return SPARSEOPT_OK;
}

/// Frees whatever GPU resources `p` holds. Returns the first failure but
/// keeps releasing the rest.
Status sparseopt::releaseResources(const char *api, sparseopt_program_s &p) {
  Status first = releaseGemmResources(api, p.gemms);
  if (Status s = releaseAttentionResources(api, p.attentions))
    if (first == SPARSEOPT_OK)
      first = s;
  for (std::vector<CUevent> *events : {&p.readyEvents, &p.doneEvents}) {
    for (CUevent event : *events) {
      CUresult result = driver().cuEventDestroy_v2(event);
      if (result != CUDA_SUCCESS && first == SPARSEOPT_OK)
        first = cudaFail(result, api, "destroying an allreduce event");
    }
    events->clear();
  }
  for (size_t i = 0; i < p.memory.size(); ++i) {
    CUdeviceptr &ptr = p.memory[i];
    if (ptr == 0 || p.manifest.buffers[i].arenaOffset >= 0 ||
        (i < p.borrowed.size() && p.borrowed[i])) {
      ptr = 0;
      continue;
    }
    CUresult result = driver().cuMemFree_v2(ptr);
    if (result != CUDA_SUCCESS && first == SPARSEOPT_OK)
      first = cudaFail(result, api, "freeing a program buffer");
    ptr = 0;
  }
  if (p.arena != 0) {
    CUresult result = driver().cuMemFree_v2(p.arena);
    if (result != CUDA_SUCCESS && first == SPARSEOPT_OK)
      first = cudaFail(result, api, "freeing the program's arena");
    p.arena = 0;
  }
  if (p.module != nullptr) {
    Status status = unloadModule(api, p.module);
    if (first == SPARSEOPT_OK)
      first = status;
    p.module = nullptr;
  }
  p.kernels.clear();
  p.grids.clear();
  p.programmatic.clear();
  p.tensorMaps.clear();
  p.loaded = false;
  return first;
}
