//===- Program.cpp - Loading and running compiled programs ----------------===//
//
// A program couples a parsed manifest with its GPU resources: the loaded
// module, one resolved kernel per launch, the device memory of its constant
// and temporary buffers, the encoded TMA tensor maps of its `tmap:`
// arguments and the cuBLASLt plans of its gemm lines. Running it takes the
// caller's input and output pointers, (re-)encodes the tensor maps whose
// buffer moved, and enqueues the run steps in manifest order. Binding params
// (the prepare stage) is ProgramBind.cpp; the handle's state is
// ProgramState.h.
//
//===----------------------------------------------------------------------===//

#include "ProgramState.h"

#include "Files.h"

#include <climits>
#include <cstdio>
#include <mutex>

using namespace sparseopt;


namespace {

/// Frees whatever GPU resources `p` holds. Returns the first failure but
/// keeps releasing the rest.
Status releaseResources(const char *api, sparseopt_program_s &p) {
  Status first = releaseGemmResources(api, p.gemms);
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
  p.tensorMaps.clear();
  p.loaded = false;
  return first;
}

} // namespace

/// Allocates (and for constants, uploads) buffer `index` of the program.
Status sparseopt::requireLoaded(const char *api, const sparseopt_program_s &p,
                                const char *purpose) {
  if (p.loaded)
    return SPARSEOPT_OK;
  return fail(SPARSEOPT_ERROR_INVALID_ARGUMENT, api,
              "program " + p.manifest.dir +
                  " was only parsed: load it with sparseopt_program_load " +
                  purpose);
}

Status sparseopt::createBuffer(const char *api, sparseopt_program_s &p,
                               size_t index) {
  const BufferDecl &buffer = p.manifest.buffers[index];
  const std::string where = p.manifest.where(buffer.line) + ": buffer " +
                            std::to_string(buffer.id);
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

/// Creates the GPU resources of a parsed program.
Status acquireResources(const char *api, sparseopt_program_s &p) {
  const Manifest &m = p.manifest;
  // Messages read "<api>: <manifest>:<line>: <what failed>".
  auto at = [&](int line) { return std::string(api) + ": " + m.where(line); };
  // Only a program of gemm lines alone may have no module.
  if (m.moduleLine != 0)
    if (Status s = loadModuleFile(at(m.moduleLine).c_str(), m.modulePath,
                                  &p.module))
      return s;
  for (const LaunchDecl &launch : m.launches) {
    sparseopt_function kernel = nullptr;
    if (Status s = getFunction(at(launch.line).c_str(), p.module,
                               launch.kernel, &kernel))
      return s;
    if (Status s = checkKernelParams(at(launch.line), kernel->handle, launch))
      return s;
    p.kernels.push_back(kernel);
    std::array<unsigned, 3> grid = {launch.grid[0], launch.grid[1],
                                    launch.grid[2]};
    if (launch.persistent.units != 0)
      grid[0] = persistentGridX(launch.persistent,
                                unsigned(deviceMultiprocessors()));
    p.grids.push_back(grid);
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

/// Parses `dir` into a new program (no GPU work). Messages are the
/// parser's own ("<manifest>:<line>: ...") without an API prefix.
Status parseProgram(const char *dir,
                    std::unique_ptr<sparseopt_program_s> &out) {
  auto program = std::make_unique<sparseopt_program_s>();
  if (Status s = parseManifest(dir, program->manifest))
    return s;
  const Manifest &m = program->manifest;
  for (const StepDecl &step : m.steps) {
    switch (step.kind) {
    case StepKind::Launch:
      program->stepText.push_back("launch " + m.launches[step.index].kernel);
      break;
    case StepKind::Gemm:
      program->stepText.push_back(describeGemm(m.gemms[step.index]));
      break;
    case StepKind::AllReduce:
      program->stepText.push_back(describeAllReduce(m.allReduces[step.index]));
      break;
    case StepKind::Wait:
      program->stepText.push_back(
          "wait slot=" + std::to_string(m.allReduces[step.index].slot));
      break;
    }
  }
  for (const CheckDecl &check : m.checks)
    program->checkText.push_back(describeCheck(check));
  for (const StepDecl &step : m.steps)
    program->hasPrepareSteps |= step.stage == StepStage::Prepare;
  out = std::move(program);
  return SPARSEOPT_OK;
}

/// The alignment every caller buffer must have.
constexpr uint64_t kBufferAlignment = 16;

} // namespace

/// Checks the caller's pointers for the program's slots.
Status sparseopt::checkPointers(const char *api, const Manifest &m,
                                const std::vector<size_t> &slots,
                                const sparseopt_deviceptr *pointers,
                                const char *kind) {
  if (slots.empty())
    return SPARSEOPT_OK;
  if (pointers == nullptr)
    return fail(SPARSEOPT_ERROR_INVALID_ARGUMENT, api,
                std::string(kind) + "s must not be NULL: the program has " +
                    std::to_string(slots.size()) + " " + kind + "(s)");
  for (size_t i = 0; i < slots.size(); ++i) {
    if (m.buffers[slots[i]].bytes == 0)
      continue;
    if (pointers[i] == 0)
      return fail(SPARSEOPT_ERROR_INVALID_ARGUMENT, api,
                  std::string(kind) + " " + std::to_string(i) +
                      " is a null device pointer");
    // Generated kernels read and write 16-byte vectors (and tensor maps and
    // cuBLASLt need 16-byte alignment): a misaligned pointer would fault
    // on the device and poison the context.
    if (pointers[i] % kBufferAlignment != 0) {
      char text[2 + 16 + 1];
      std::snprintf(text, sizeof(text), "0x%llx",
                    static_cast<unsigned long long>(pointers[i]));
      return fail(SPARSEOPT_ERROR_INVALID_ARGUMENT, api,
                  std::string(kind) + " " + std::to_string(i) +
                      ": device pointer " + text + " is not " +
                      std::to_string(kBufferAlignment) +
                      "-byte aligned (the program's kernels use 16-byte "
                      "vector accesses)");
    }
  }
  return SPARSEOPT_OK;
}

namespace {


/// "0x7f0000001000" for messages.
std::string hexAddress(CUdeviceptr address) {
  char text[2 + 16 + 1];
  std::snprintf(text, sizeof(text), "0x%llx",
                static_cast<unsigned long long>(address));
  return text;
}

/// "kernel 'k' argument 1 (tensor map over buffer 2, input 0)" for messages.
std::string tensorMapArgName(const Manifest &m, const LaunchDecl &launch,
                             size_t index) {
  const BufferDecl &buffer = m.buffers[launch.args[index].buffer];
  return "kernel '" + launch.kernel + "' argument " + std::to_string(index) +
         " (tensor map over buffer " + std::to_string(buffer.id) + ", " +
         bufferRole(buffer) + ")";
}

/// Encodes the tensor map of argument `index` of `launch` over the buffer
/// at `address` into `slot`, unless `slot` already holds it for that
/// address.
Status encodeTensorMap(const char *api, const Manifest &m,
                       const LaunchDecl &launch, size_t index,
                       CUdeviceptr address, EncodedTensorMap &slot) {
  if (slot.address == address && address != 0)
    return SPARSEOPT_OK;
  const TensorMapDecl &map = launch.args[index].tensorMap;
  if (address % 16 != 0)
    return fail(SPARSEOPT_ERROR_INVALID_ARGUMENT, api,
                tensorMapArgName(m, launch, index) + ": device pointer " +
                    hexAddress(address) +
                    " is not 16-byte aligned, as a tensor map needs");

  // The driver takes dimensions innermost first; the manifest lists them
  // outermost first. Strides (bytes) are those of a dense row-major tensor,
  // for every dimension but the innermost.
  cuuint64_t globalDim[kMaxTensorMapRank] = {};
  cuuint64_t globalStrides[kMaxTensorMapRank] = {};
  cuuint32_t boxDim[kMaxTensorMapRank] = {};
  cuuint32_t elementStrides[kMaxTensorMapRank] = {};
  cuuint64_t stride = map.elementBytes;
  for (unsigned i = 0; i < map.rank; ++i) {
    unsigned from = map.rank - 1 - i;
    globalDim[i] = map.dims[from];
    boxDim[i] = map.box[from];
    elementStrides[i] = 1;
    if (i > 0)
      globalStrides[i - 1] = stride;
    stride *= map.dims[from];
  }
  CUtensorMapDataType dataType = CU_TENSOR_MAP_DATA_TYPE_FLOAT16;
  switch (map.dtype) {
  case TensorMapDType::F16:
    dataType = CU_TENSOR_MAP_DATA_TYPE_FLOAT16;
    break;
  case TensorMapDType::BF16:
    dataType = CU_TENSOR_MAP_DATA_TYPE_BFLOAT16;
    break;
  case TensorMapDType::F32:
    dataType = CU_TENSOR_MAP_DATA_TYPE_FLOAT32;
    break;
  case TensorMapDType::I32:
    dataType = CU_TENSOR_MAP_DATA_TYPE_INT32;
    break;
  }
  CUtensorMapSwizzle swizzle = CU_TENSOR_MAP_SWIZZLE_NONE;
  switch (map.swizzle) {
  case 32:
    swizzle = CU_TENSOR_MAP_SWIZZLE_32B;
    break;
  case 64:
    swizzle = CU_TENSOR_MAP_SWIZZLE_64B;
    break;
  case 128:
    swizzle = CU_TENSOR_MAP_SWIZZLE_128B;
    break;
  }

  // Out-of-bounds elements read as zero (OOB_FILL_NONE); L2 lines are
  // fetched 128 bytes at a time.
  CUresult result = driver().cuTensorMapEncodeTiled(
      &slot.map, dataType, map.rank, reinterpret_cast<void *>(address),
      globalDim, globalStrides, boxDim, elementStrides,
      CU_TENSOR_MAP_INTERLEAVE_NONE, swizzle,
      CU_TENSOR_MAP_L2_PROMOTION_L2_128B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (result != CUDA_SUCCESS) {
    slot.address = 0; // the storage may be partly written
    return cudaFail(result, api,
                    tensorMapArgName(m, launch, index) +
                        ": cuTensorMapEncodeTiled(" + describeTensorMap(map) +
                        ", device pointer " + hexAddress(address) + ")");
  }
  slot.address = address;
  return SPARSEOPT_OK;
}

/// Enqueues launch `index` of a loaded program with the buffers at
/// `address`; `params` is scratch storage for the kernel parameters.
Status runLaunch(const char *api, sparseopt_program_s &p, size_t index,
                 std::vector<CUdeviceptr> &address, std::vector<void *> &params,
                 CUstream stream) {
  const Manifest &m = p.manifest;
  const LaunchDecl &launch = m.launches[index];
  params.clear();
  for (size_t a = 0; a < launch.args.size(); ++a) {
    const ArgDecl &arg = launch.args[a];
    // cuLaunchKernel only reads through these pointers; it copies a
    // tensor map's 128 bytes as the by-value parameter.
    switch (arg.kind) {
    case ArgKind::Buffer:
      params.push_back(&address[arg.buffer]);
      break;
    case ArgKind::TensorMap: {
      EncodedTensorMap &slot = p.tensorMaps[arg.tensorMap.slot];
      if (Status s = encodeTensorMap(api, m, launch, a, address[arg.buffer],
                                     slot))
        return s;
      params.push_back(&slot.map);
      break;
    }
    case ArgKind::I32:
    case ArgKind::I64:
    case ArgKind::F32:
      params.push_back(const_cast<unsigned char *>(arg.value));
      break;
    }
  }
  return launchKernel(api, p.kernels[index], p.grids[index].data(),
                      launch.block,
                      launch.sharedBytes, stream,
                      params.empty() ? nullptr : params.data());
}

/// An allreduce step forks the communication stream off `stream` with an
/// event, enqueues NCCL there and records its completion; a wait step joins
/// that completion back into `stream`. Both are stream-ordered, so a run
/// with collectives can be captured in a CUDA graph.
Status runCollectiveStep(const char *api, sparseopt_program_s &p,
                         const StepDecl &step,
                         const std::vector<CUdeviceptr> &address,
                         CUstream stream) {
  const AllReduceDecl &a = p.manifest.allReduces[step.index];
  const DriverApi &cu = driver();
  if (step.kind == StepKind::Wait) {
    CUresult result = cu.cuStreamWaitEvent(stream, p.doneEvents[step.index], 0);
    return result == CUDA_SUCCESS ? SPARSEOPT_OK
                                  : cudaFail(result, api, "cuStreamWaitEvent");
  }
  sparseopt_comm_s &c = *p.comm;
  CUresult result = cu.cuEventRecord(p.readyEvents[step.index], stream);
  if (result == CUDA_SUCCESS)
    result = cu.cuStreamWaitEvent(c.stream, p.readyEvents[step.index], 0);
  if (result != CUDA_SUCCESS)
    return cudaFail(result, api, "forking the communication stream");
  if (Status s = enqueueAllReduce(api, c, address[a.send.buffer],
                                  address[a.recv.buffer], a))
    return s;
  result = cu.cuEventRecord(p.doneEvents[step.index], c.stream);
  return result == CUDA_SUCCESS
             ? SPARSEOPT_OK
             : cudaFail(result, api, "recording the all-reduce's completion");
}

} // namespace

/// Enqueues the steps of stage `stage` of a loaded program, in manifest
/// order, over the buffers at `address` (parallel to the manifest's
/// buffers). The caller holds the run mutex when the program has state.
Status sparseopt::runSteps(const char *api, sparseopt_program_s &p,
                           StepStage stage, std::vector<CUdeviceptr> &address,
                           CUstream stream) {
  const Manifest &m = p.manifest;
  std::vector<void *> params;
  for (const StepDecl &step : m.steps) {
    if (step.stage != stage)
      continue;
    if (step.kind == StepKind::Launch) {
      if (Status s = runLaunch(api, p, step.index, address, params, stream)) {
        addErrorContext(api, "launch " + std::to_string(step.index) + " (" +
                                 m.where(m.launches[step.index].line) + ")");
        return s;
      }
      continue;
    }
    if (step.kind == StepKind::AllReduce || step.kind == StepKind::Wait) {
      if (Status s = runCollectiveStep(api, p, step, address, stream)) {
        const AllReduceDecl &a = m.allReduces[step.index];
        addErrorContext(api, std::string(step.kind == StepKind::Wait
                                             ? "wait for allreduce "
                                             : "allreduce ") +
                                 std::to_string(step.index) + " (" +
                                 m.where(step.kind == StepKind::Wait
                                             ? a.waitLine
                                             : a.line) +
                                 ")");
        return s;
      }
      continue;
    }
    if (Status s = runGemm(api, m, step.index, p.gemms, address, stream)) {
      addErrorContext(api, "gemm " + std::to_string(step.index) + " (" +
                               m.where(m.gemms[step.index].line) + ")");
      return s;
    }
  }
  return SPARSEOPT_OK;
}

namespace {


/// True when the program's state (tensor maps, gemm descriptors, bound
/// params) must be guarded by the run mutex.
bool hasRunState(const sparseopt_program_s &p) {
  const Manifest &m = p.manifest;
  return !p.tensorMaps.empty() || !m.gemms.empty() || !m.params.empty() ||
         !m.allReduces.empty() || p.hasPrepareSteps;
}

/// Enqueues the run steps of a loaded, bound program, in manifest order.
Status runProgram(const char *api, sparseopt_program_s &p,
                  const sparseopt_deviceptr *inputs,
                  const sparseopt_deviceptr *outputs, CUstream stream) {
  const Manifest &m = p.manifest;
  std::unique_lock<std::mutex> lock(p.runMutex, std::defer_lock);
  if (hasRunState(p))
    lock.lock();
  if (!p.bound)
    return fail(SPARSEOPT_ERROR_INVALID_ARGUMENT, api,
                "the program has " + std::to_string(m.params.size()) +
                    " params: bind them first (sparseopt_program_bind)");
  // Device address of every buffer for this run.
  std::vector<CUdeviceptr> address(p.memory);
  for (size_t i = 0; i < m.inputs.size(); ++i)
    address[m.inputs[i]] = CUdeviceptr(inputs[i]);
  for (size_t i = 0; i < m.outputs.size(); ++i)
    address[m.outputs[i]] = CUdeviceptr(outputs[i]);
  for (size_t i = 0; i < m.params.size(); ++i)
    address[m.params[i]] = p.params[i];
  if (!m.allReduces.empty() && p.comm == nullptr)
    return fail(SPARSEOPT_ERROR_INVALID_ARGUMENT, api,
                "the program has " + std::to_string(m.allReduces.size()) +
                    " allreduce line(s): give it a communicator first "
                    "(sparseopt_program_set_comm)");
  return runSteps(api, p, StepStage::Run, address, stream);
}

/// Reports a NULL program for the query `api`.
bool validProgram(const char *api, sparseopt_program p) {
  if (p != nullptr)
    return true;
  nullArgument(api, "p");
  return false;
}

/// Reports a NULL program or an out-of-range index for the query `api`.
bool validIndex(const char *api, sparseopt_program p, int index,
                size_t count) {
  if (!validProgram(api, p))
    return false;
  if (index < 0 || size_t(index) >= count) {
    fail(SPARSEOPT_ERROR_INVALID_ARGUMENT, api,
         "index " + std::to_string(index) + " out of range (the program has " +
             std::to_string(count) + ")");
    return false;
  }
  return true;
}

int countOf(size_t n) { return n > size_t(INT_MAX) ? INT_MAX : int(n); }

/// The argument checks and manifest parsing shared by parse and load.
Status parseArguments(const char *api, const char *artifactDir,
                      sparseopt_program *out,
                      std::unique_ptr<sparseopt_program_s> &program) {
  if (artifactDir == nullptr)
    return nullArgument(api, "artifact_dir");
  if (out == nullptr)
    return nullArgument(api, "out");
  return parseProgram(artifactDir, program);
}

} // namespace

extern "C" {

sparseopt_status sparseopt_program_parse(const char *artifact_dir,
                                         sparseopt_program *out) {
  const char *api = "sparseopt_program_parse";
  return guarded(api, [&]() -> Status {
    std::unique_ptr<sparseopt_program_s> program;
    if (Status s = parseArguments(api, artifact_dir, out, program))
      return s;
    *out = program.release();
    return SPARSEOPT_OK;
  });
}

sparseopt_status sparseopt_program_load(const char *artifact_dir,
                                        sparseopt_program *out) {
  const char *api = "sparseopt_program_load";
  return guarded(api, [&]() -> Status {
    std::unique_ptr<sparseopt_program_s> program;
    if (Status s = parseArguments(api, artifact_dir, out, program))
      return s;
    // Like parse errors, a missing library is reported with and without a
    // GPU; programs without gemm lines never open it.
    const Manifest &m = program->manifest;
    if (!m.gemms.empty())
      if (Status s = loadCublasLt(std::string(api) + ": " +
                                  m.where(m.gemms.front().line)))
        return s;
    if (Status s = requireContext(api))
      return s;
    Status s = acquireResources(api, *program);
    // A program without params is bound at load: its prepare steps (if
    // any) run now, on the legacy default stream.
    if (s == SPARSEOPT_OK && m.params.empty()) {
      if (program->hasPrepareSteps)
        s = bindProgram(api, *program, nullptr, nullptr);
      else
        program->bound = true;
    }
    if (s != SPARSEOPT_OK) {
      std::string message = sparseopt_last_error();
      releaseResources(api, *program);
      fail(s, message); // keep the first error, not a cleanup one
      return s;
    }
    *out = program.release();
    return SPARSEOPT_OK;
  });
}

int sparseopt_program_num_inputs(sparseopt_program p) {
  const char *api = "sparseopt_program_num_inputs";
  return guardedValue(api, -1, [&]() {
    return validProgram(api, p) ? countOf(p->manifest.inputs.size()) : -1;
  });
}

int sparseopt_program_num_outputs(sparseopt_program p) {
  const char *api = "sparseopt_program_num_outputs";
  return guardedValue(api, -1, [&]() {
    return validProgram(api, p) ? countOf(p->manifest.outputs.size()) : -1;
  });
}

int sparseopt_program_num_params(sparseopt_program p) {
  const char *api = "sparseopt_program_num_params";
  return guardedValue(api, -1, [&]() {
    return validProgram(api, p) ? countOf(p->manifest.params.size()) : -1;
  });
}

size_t sparseopt_program_param_bytes(sparseopt_program p, int i) {
  const char *api = "sparseopt_program_param_bytes";
  return guardedValue(api, size_t(0), [&]() -> size_t {
    if (!validIndex(api, p, i, p ? p->manifest.params.size() : 0))
      return 0;
    return size_t(p->manifest.buffers[p->manifest.params[i]].bytes);
  });
}

int sparseopt_program_num_launches(sparseopt_program p) {
  const char *api = "sparseopt_program_num_launches";
  return guardedValue(api, -1, [&]() {
    return validProgram(api, p) ? countOf(p->manifest.launches.size()) : -1;
  });
}

size_t sparseopt_program_input_bytes(sparseopt_program p, int i) {
  const char *api = "sparseopt_program_input_bytes";
  return guardedValue(api, size_t(0), [&]() -> size_t {
    if (!validIndex(api, p, i, p ? p->manifest.inputs.size() : 0))
      return 0;
    return size_t(p->manifest.buffers[p->manifest.inputs[i]].bytes);
  });
}

size_t sparseopt_program_output_bytes(sparseopt_program p, int i) {
  const char *api = "sparseopt_program_output_bytes";
  return guardedValue(api, size_t(0), [&]() -> size_t {
    if (!validIndex(api, p, i, p ? p->manifest.outputs.size() : 0))
      return 0;
    return size_t(p->manifest.buffers[p->manifest.outputs[i]].bytes);
  });
}

/// The signature text of argument `argument` of a program with a
/// signature.json, or "".
static const char *signatureText(const sparseopt_program_s &p,
                                 const std::vector<size_t> &arguments,
                                 const std::vector<TensorSpecDecl> &specs,
                                 int i) {
  const SignatureDecl &sig = p.manifest.signature;
  if (!sig.present)
    return "";
  return specs[arguments[size_t(i)]].text.c_str();
}

const char *sparseopt_program_input_type(sparseopt_program p, int i) {
  const char *api = "sparseopt_program_input_type";
  return guardedValue(api, (const char *)nullptr, [&]() -> const char * {
    if (!validIndex(api, p, i, p ? p->manifest.inputs.size() : 0))
      return nullptr;
    return signatureText(*p, p->manifest.signature.inputArguments,
                         p->manifest.signature.arguments, i);
  });
}

const char *sparseopt_program_param_type(sparseopt_program p, int i) {
  const char *api = "sparseopt_program_param_type";
  return guardedValue(api, (const char *)nullptr, [&]() -> const char * {
    if (!validIndex(api, p, i, p ? p->manifest.params.size() : 0))
      return nullptr;
    return signatureText(*p, p->manifest.signature.paramArguments,
                         p->manifest.signature.arguments, i);
  });
}

const char *sparseopt_program_output_type(sparseopt_program p, int i) {
  const char *api = "sparseopt_program_output_type";
  return guardedValue(api, (const char *)nullptr, [&]() -> const char * {
    if (!validIndex(api, p, i, p ? p->manifest.outputs.size() : 0))
      return nullptr;
    const SignatureDecl &sig = p->manifest.signature;
    return sig.present ? sig.outputs[size_t(i)].text.c_str() : "";
  });
}

int sparseopt_program_num_steps(sparseopt_program p) {
  const char *api = "sparseopt_program_num_steps";
  return guardedValue(api, -1, [&]() {
    return validProgram(api, p) ? countOf(p->manifest.steps.size()) : -1;
  });
}

const char *sparseopt_program_step(sparseopt_program p, int i) {
  const char *api = "sparseopt_program_step";
  return guardedValue(api, static_cast<const char *>(nullptr),
                      [&]() -> const char * {
                        if (!validIndex(api, p, i, p ? p->stepText.size() : 0))
                          return nullptr;
                        return p->stepText[i].c_str();
                      });
}

const char *sparseopt_program_step_stage(sparseopt_program p, int i) {
  const char *api = "sparseopt_program_step_stage";
  return guardedValue(api, static_cast<const char *>(nullptr),
                      [&]() -> const char * {
                        if (!validIndex(api, p, i,
                                        p ? p->manifest.steps.size() : 0))
                          return nullptr;
                        return stepStageName(p->manifest.steps[i].stage);
                      });
}

int sparseopt_program_num_checks(sparseopt_program p) {
  const char *api = "sparseopt_program_num_checks";
  return guardedValue(api, -1, [&]() {
    return validProgram(api, p) ? countOf(p->manifest.checks.size()) : -1;
  });
}

const char *sparseopt_program_check(sparseopt_program p, int i) {
  const char *api = "sparseopt_program_check";
  return guardedValue(api, static_cast<const char *>(nullptr),
                      [&]() -> const char * {
                        if (!validIndex(api, p, i,
                                        p ? p->checkText.size() : 0))
                          return nullptr;
                        return p->checkText[i].c_str();
                      });
}

int sparseopt_program_num_stats(sparseopt_program p) {
  const char *api = "sparseopt_program_num_stats";
  return guardedValue(api, -1, [&]() {
    return validProgram(api, p) ? countOf(p->manifest.stats.size()) : -1;
  });
}

const char *sparseopt_program_stat_name(sparseopt_program p, int i) {
  const char *api = "sparseopt_program_stat_name";
  return guardedValue(api, static_cast<const char *>(nullptr),
                      [&]() -> const char * {
                        if (!validIndex(api, p, i,
                                        p ? p->manifest.stats.size() : 0))
                          return nullptr;
                        return p->manifest.stats[i].name.c_str();
                      });
}

uint64_t sparseopt_program_stat_total(sparseopt_program p, int i) {
  const char *api = "sparseopt_program_stat_total";
  return guardedValue(api, uint64_t(0), [&]() -> uint64_t {
    if (!validIndex(api, p, i, p ? p->manifest.stats.size() : 0))
      return 0;
    return p->manifest.stats[i].total;
  });
}

double sparseopt_program_stat_limit(sparseopt_program p, int i) {
  const char *api = "sparseopt_program_stat_limit";
  return guardedValue(api, -1.0, [&]() -> double {
    if (!validIndex(api, p, i, p ? p->manifest.stats.size() : 0))
      return -1.0;
    return p->manifest.stats[i].limit;
  });
}

sparseopt_status sparseopt_program_read_stat(sparseopt_program p, int i,
                                             sparseopt_stream s,
                                             uint64_t *value) {
  const char *api = "sparseopt_program_read_stat";
  return guarded(api, [&]() -> Status {
    if (p == nullptr)
      return nullArgument(api, "p");
    if (value == nullptr)
      return nullArgument(api, "value");
    const Manifest &m = p->manifest;
    if (i < 0 || size_t(i) >= m.stats.size())
      return fail(SPARSEOPT_ERROR_INVALID_ARGUMENT, api,
                  "stat index " + std::to_string(i) + " out of range (" +
                      std::to_string(m.stats.size()) + " stats)");
    if (Status st = requireLoaded(api, *p, "to read its stats"))
      return st;
    if (Status st = requireContext(api))
      return st;
    const StatDecl &stat = m.stats[i];
    CUresult result = driver().cuStreamSynchronize(toCUstream(s));
    if (result != CUDA_SUCCESS)
      return cudaFail(result, api,
                      "waiting for the run (cuStreamSynchronize)");
    uint64_t bits = 0;
    result = driver().cuMemcpyDtoH_v2(&bits, p->memory[stat.buffer],
                                      stat.bits / 8);
    if (result != CUDA_SUCCESS)
      return cudaFail(result, api,
                      m.where(stat.line) + ": reading stat " + stat.name +
                          " (cuMemcpyDtoH)");
    // Little-endian: a u32 is the low half.
    *value = stat.bits == 32 ? (bits & 0xffffffffu) : bits;
    return SPARSEOPT_OK;
  });
}

const char *sparseopt_program_launch_kernel(sparseopt_program p, int i) {
  const char *api = "sparseopt_program_launch_kernel";
  return guardedValue(api, static_cast<const char *>(nullptr),
                      [&]() -> const char * {
                        if (!validIndex(api, p, i,
                                        p ? p->manifest.launches.size() : 0))
                          return nullptr;
                        return p->manifest.launches[i].kernel.c_str();
                      });
}

sparseopt_status sparseopt_program_run(sparseopt_program p,
                                       const sparseopt_deviceptr *inputs,
                                       const sparseopt_deviceptr *outputs,
                                       sparseopt_stream s) {
  const char *api = "sparseopt_program_run";
  return guarded(api, [&]() -> Status {
    if (p == nullptr)
      return nullArgument(api, "p");
    const Manifest &m = p->manifest;
    if (Status st = checkPointers(api, m, m.inputs, inputs, "input"))
      return st;
    if (Status st = checkPointers(api, m, m.outputs, outputs, "output"))
      return st;
    if (Status st = requireLoaded(api, *p, "to run it"))
      return st;
    if (Status st = requireContext(api))
      return st;
    return runProgram(api, *p, inputs, outputs, toCUstream(s));
  });
}

sparseopt_status sparseopt_program_set_comm(sparseopt_program p,
                                            sparseopt_comm c) {
  const char *api = "sparseopt_program_set_comm";
  return guarded(api, [&]() -> Status {
    if (p == nullptr)
      return nullArgument(api, "p");
    if (Status st = requireLoaded(api, *p, "first"))
      return st;
    std::lock_guard<std::mutex> lock(p->runMutex);
    p->comm = c;
    return SPARSEOPT_OK;
  });
}

int sparseopt_program_num_allreduces(sparseopt_program p) {
  const char *api = "sparseopt_program_num_allreduces";
  return guardedValue(api, -1, [&]() {
    return validProgram(api, p) ? countOf(p->manifest.allReduces.size()) : -1;
  });
}

sparseopt_status sparseopt_program_destroy(sparseopt_program p) {
  const char *api = "sparseopt_program_destroy";
  return guarded(api, [&]() -> Status {
    if (p == nullptr)
      return nullArgument(api, "p");
    std::unique_ptr<sparseopt_program_s> owned(p);
    if (!owned->loaded)
      return SPARSEOPT_OK;
    if (Status s = requireContext(api))
      return s;
    return releaseResources(api, *owned);
  });
}

} // extern "C"
