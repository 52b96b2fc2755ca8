//===- ProgramRun.cpp - Running a loaded program --------------------------===//
//
// sparseopt_program_run and the enqueueing of a stage's steps (runSteps,
// which binding uses for the prepare stage too): the caller's pointers
// checked, the tensor maps whose buffer moved re-encoded, launches, gemms,
// allreduces and waits enqueued in manifest order; and
// sparseopt_program_set_comm, the communicator of the allreduce lines.
//
//===----------------------------------------------------------------------===//

#include "ProgramState.h"

#include <cstdio>
#include <mutex>

using namespace sparseopt;

namespace {

/// The alignment every caller buffer must have.
constexpr uint64_t kBufferAlignment = 16;

/// "0x7f0000001000" for messages.
std::string hexAddress(CUdeviceptr address) {
  char text[2 + 16 + 1];
  std::snprintf(text, sizeof(text), "0x%llx",
                static_cast<unsigned long long>(address));
  return text;
}

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
      return fail(SPARSEOPT_ERROR_INVALID_ARGUMENT, api,
                  std::string(kind) + " " + std::to_string(i) +
                      ": device pointer " + hexAddress(pointers[i]) +
                      " is not " + std::to_string(kBufferAlignment) +
                      "-byte aligned (the program's kernels use 16-byte "
                      "vector accesses)");
    }
  }
  return SPARSEOPT_OK;
}

namespace {

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
      if (Status s =
              encodeTensorMap(api, m, launch, a, address[arg.buffer], slot))
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
                      launch.block, launch.sharedBytes, stream,
                      params.empty() ? nullptr : params.data(),
                      p.programmatic[index]);
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
        addErrorContext(
            api,
            std::string(step.kind == StepKind::Wait ? "wait for allreduce "
                                                    : "allreduce ") +
                std::to_string(step.index) + " (" +
                m.where(step.kind == StepKind::Wait ? a.waitLine : a.line) +
                ")");
        return s;
      }
      continue;
    }
    if (step.kind == StepKind::Attention) {
      if (Status s = runAttention(api, m, step.index, p.attentions, address,
                                  stream)) {
        addErrorContext(api, "attention " + std::to_string(step.index) +
                                 " (" +
                                 m.where(m.attentions[step.index].line) + ")");
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
  return !p.tensorMaps.empty() || !m.gemms.empty() ||
         !m.attentions.empty() || !m.params.empty() ||
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

} // namespace

extern "C" {

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

} // extern "C"
