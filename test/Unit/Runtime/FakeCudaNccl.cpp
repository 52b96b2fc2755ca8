//===- FakeCudaNccl.cpp - A CUDA driver and NCCL stand-in for fault tests -===//
//
// One shared library that exports the CUDA driver and NCCL entry points the
// runtime resolves, so that its collectives can be tested on a machine
// without a GPU (CollectiveFaultTest.cpp). The runtime loads it in place of
// both libraries when SPARSEOPT_CUDA_LIBRARY and SPARSEOPT_NCCL_LIBRARY name
// it (dlopen returns one handle for one path, so the two halves share state).
//
// What it does:
// - Device memory is host memory; copies and memsets are memcpy and memset.
//   Streams and events are handles and order nothing: every operation is
//   done when it is enqueued, except all-reduces.
// - Ranks are processes. They meet in the directory SPARSEOPT_FAKE_NCCL_DIR:
//   joining writes join.<rank> (the process id), an all-reduce writes the
//   send buffer to op<seq>.<rank>. An all-reduce completes when every rank
//   has written its part; until then it is pending, cuStreamQuery answers
//   CUDA_ERROR_NOT_READY (a real NCCL kernel spins on the GPU) and blocking
//   synchronizations wait.
// - Faults, as NCCL reports them: a peer whose process has exited, or that
//   wrote failed.<rank>, makes ncclCommGetAsyncError report ncclRemoteError
//   while an operation waits for it. A peer that hangs leaves the operation
//   pending forever. SPARSEOPT_FAKE_NCCL_FAIL=1 makes this process's
//   ncclAllReduce fail with ncclSystemError (and write failed.<rank>).
// - ncclCommAbort drops the communicator's pending operations, so its
//   streams drain, as aborting a real communicator kills its kernels.
// - Kernels are not run: loading a module fails with CUDA_ERROR_NOT_SUPPORTED.
// Only f32 all-reduces are computed (sum, prod, max, min, avg).
//
//===----------------------------------------------------------------------===//

#include <cuda.h>
#include <nccl.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <mutex>
#include <set>
#include <sstream>
#include <string>
#include <sys/types.h>
#include <thread>
#include <unistd.h>
#include <vector>

namespace {

struct PendingOp {
  unsigned long long seq;
  const float *send;
  float *recv;
  size_t count;
  ncclRedOp_t op;
};

struct FakeComm {
  int rank = 0, size = 1;
  std::string dir;
  bool joined = false;
  unsigned long long nextSeq = 0;
  std::vector<PendingOp> pending;
  ncclResult_t error = ncclSuccess;
  std::string lastError;
};

std::mutex gMutex;
std::set<FakeComm *> gComms;
int gContextToken;

std::string path(const FakeComm &c, const std::string &name) {
  return c.dir + "/" + name;
}

bool exists(const std::string &file) { return access(file.c_str(), F_OK) == 0; }

/// Writes `bytes` to `file` so that readers never see a partial file.
bool writeAtomically(const std::string &file, const void *bytes, size_t size) {
  std::string tmp = file + ".tmp" + std::to_string(getpid());
  FILE *out = std::fopen(tmp.c_str(), "wb");
  if (out == nullptr)
    return false;
  bool ok = std::fwrite(bytes, 1, size, out) == size;
  ok = std::fclose(out) == 0 && ok;
  return ok && std::rename(tmp.c_str(), file.c_str()) == 0;
}

/// True when a peer that `c` still waits for is gone: it reported a
/// failure or its process has exited, and the file `c` waits for from it
/// (`waitedFile`, e.g. "join" or "op3") is still missing. The file is
/// checked after the peer: a peer that wrote its part and then exited (or
/// failed later) does not fail a step it completed, as with NCCL.
bool peerFailed(FakeComm &c, const std::string &waitedFile) {
  for (int r = 0; r < c.size; ++r) {
    if (r == c.rank)
      continue;
    std::string why;
    if (exists(path(c, "failed." + std::to_string(r)))) {
      why = "rank " + std::to_string(r) + " reported a failure";
    } else {
      std::ifstream join(path(c, "join." + std::to_string(r)));
      long pid = 0;
      if (join >> pid && pid > 0 && kill(pid_t(pid), 0) != 0 && errno == ESRCH)
        why = "rank " + std::to_string(r) + " (process " +
              std::to_string(pid) + ") exited";
    }
    if (!why.empty() &&
        !exists(path(c, waitedFile + "." + std::to_string(r)))) {
      c.lastError = why;
      return true;
    }
  }
  return false;
}

/// Completes what can complete; records a remote error when a peer that an
/// unfinished step waits for is gone. Called with gMutex held.
void progress(FakeComm &c) {
  if (c.error != ncclSuccess)
    return;
  if (!c.joined) {
    bool all = true;
    for (int r = 0; r < c.size && all; ++r)
      all = exists(path(c, "join." + std::to_string(r)));
    if (all)
      c.joined = true;
    else if (peerFailed(c, "join"))
      c.error = ncclRemoteError;
    return;
  }
  while (!c.pending.empty()) {
    PendingOp &op = c.pending.front();
    std::vector<std::vector<float>> parts(size_t(c.size));
    bool all = true;
    for (int r = 0; r < c.size && all; ++r) {
      std::ifstream in(path(c, "op" + std::to_string(op.seq) + "." +
                                   std::to_string(r)),
                       std::ios::binary);
      parts[size_t(r)].resize(op.count);
      all = bool(in.read(reinterpret_cast<char *>(parts[size_t(r)].data()),
                         std::streamsize(op.count * sizeof(float))));
    }
    if (!all) {
      if (peerFailed(c, "op" + std::to_string(op.seq)))
        c.error = ncclRemoteError;
      return;
    }
    for (size_t i = 0; i < op.count; ++i) {
      float v = parts[0][i];
      for (int r = 1; r < c.size; ++r) {
        float w = parts[size_t(r)][i];
        switch (op.op) {
        case ncclProd: v *= w; break;
        case ncclMax: v = std::max(v, w); break;
        case ncclMin: v = std::min(v, w); break;
        default: v += w; break;
        }
      }
      op.recv[i] = op.op == ncclAvg ? v / float(c.size) : v;
    }
    c.pending.erase(c.pending.begin());
  }
}

/// True while any communicator of the process has unfinished work.
bool anyPending() {
  std::lock_guard<std::mutex> lock(gMutex);
  bool pending = false;
  for (FakeComm *c : gComms) {
    progress(*c);
    pending = pending || !c->joined || !c->pending.empty();
  }
  return pending;
}

/// What a blocking synchronization does: waits for the pending work, at
/// most a minute (a test that gets here with a hung peer fails, not hangs).
CUresult waitIdle() {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::minutes(1);
  while (anyPending()) {
    if (std::chrono::steady_clock::now() > deadline)
      return CUDA_ERROR_LAUNCH_TIMEOUT;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return CUDA_SUCCESS;
}

} // namespace

extern "C" {

//===----------------------------------------------------------------------===//
// CUDA driver
//===----------------------------------------------------------------------===//

CUresult cuGetErrorName(CUresult error, const char **text) {
  *text = error == CUDA_SUCCESS ? "CUDA_SUCCESS" : "CUDA_ERROR_STAND_IN";
  return CUDA_SUCCESS;
}
CUresult cuGetErrorString(CUresult error, const char **text) {
  *text = error == CUDA_SUCCESS ? "no error" : "an error of the stand-in driver";
  return CUDA_SUCCESS;
}
CUresult cuInit(unsigned int) { return CUDA_SUCCESS; }
CUresult cuDeviceGetCount(int *count) {
  *count = 1;
  return CUDA_SUCCESS;
}
CUresult cuDeviceGet(CUdevice *device, int ordinal) {
  if (ordinal != 0)
    return CUDA_ERROR_INVALID_DEVICE;
  *device = 0;
  return CUDA_SUCCESS;
}
/// Multiprocessors of the stand-in device: SPARSEOPT_FAKE_MULTIPROCESSORS,
/// else 132 (an H200's).
CUresult cuDeviceGetAttribute(int *value, CUdevice_attribute attribute,
                              CUdevice) {
  if (attribute != CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)
    return CUDA_ERROR_NOT_SUPPORTED;
  const char *count = std::getenv("SPARSEOPT_FAKE_MULTIPROCESSORS");
  *value = count && *count ? std::atoi(count) : 132;
  return CUDA_SUCCESS;
}
CUresult cuDeviceGetName(char *name, int length, CUdevice) {
  std::snprintf(name, size_t(length), "SparseOpt stand-in device");
  return CUDA_SUCCESS;
}
CUresult cuDevicePrimaryCtxRetain(CUcontext *context, CUdevice) {
  *context = reinterpret_cast<CUcontext>(&gContextToken);
  return CUDA_SUCCESS;
}
CUresult cuDevicePrimaryCtxRelease_v2(CUdevice) { return CUDA_SUCCESS; }
thread_local CUcontext tCurrent = nullptr;
CUresult cuCtxGetCurrent(CUcontext *context) {
  *context = tCurrent;
  return CUDA_SUCCESS;
}
CUresult cuCtxSetCurrent(CUcontext context) {
  tCurrent = context;
  return CUDA_SUCCESS;
}
CUresult cuCtxSynchronize() { return waitIdle(); }

CUresult cuMemAlloc_v2(CUdeviceptr *pointer, size_t bytes) {
  void *memory = std::calloc(1, bytes == 0 ? 1 : bytes);
  if (memory == nullptr)
    return CUDA_ERROR_OUT_OF_MEMORY;
  *pointer = CUdeviceptr(memory);
  return CUDA_SUCCESS;
}
CUresult cuMemFree_v2(CUdeviceptr pointer) {
  std::free(reinterpret_cast<void *>(pointer));
  return CUDA_SUCCESS;
}
CUresult cuMemcpyHtoD_v2(CUdeviceptr to, const void *from, size_t bytes) {
  std::memcpy(reinterpret_cast<void *>(to), from, bytes);
  return CUDA_SUCCESS;
}
CUresult cuMemcpyDtoH_v2(void *to, CUdeviceptr from, size_t bytes) {
  std::memcpy(to, reinterpret_cast<const void *>(from), bytes);
  return CUDA_SUCCESS;
}
CUresult cuMemsetD8_v2(CUdeviceptr to, unsigned char value, size_t count) {
  std::memset(reinterpret_cast<void *>(to), value, count);
  return CUDA_SUCCESS;
}
CUresult cuMemsetD8Async(CUdeviceptr to, unsigned char value, size_t count,
                         CUstream) {
  return cuMemsetD8_v2(to, value, count);
}

CUresult cuStreamCreate(CUstream *stream, unsigned int) {
  *stream = reinterpret_cast<CUstream>(new int(0));
  return CUDA_SUCCESS;
}
CUresult cuStreamCreateWithPriority(CUstream *stream, unsigned int flags, int) {
  return cuStreamCreate(stream, flags);
}
CUresult cuStreamDestroy_v2(CUstream stream) {
  delete reinterpret_cast<int *>(stream);
  return CUDA_SUCCESS;
}
CUresult cuStreamSynchronize(CUstream) { return waitIdle(); }
CUresult cuStreamWaitEvent(CUstream, CUevent, unsigned int) { return CUDA_SUCCESS; }
CUresult cuStreamQuery(CUstream) {
  return anyPending() ? CUDA_ERROR_NOT_READY : CUDA_SUCCESS;
}
CUresult cuCtxGetStreamPriorityRange(int *least, int *greatest) {
  *least = 0;
  *greatest = -5;
  return CUDA_SUCCESS;
}

CUresult cuEventCreate(CUevent *event, unsigned int) {
  *event = reinterpret_cast<CUevent>(new int(0));
  return CUDA_SUCCESS;
}
CUresult cuEventDestroy_v2(CUevent event) {
  delete reinterpret_cast<int *>(event);
  return CUDA_SUCCESS;
}
CUresult cuEventRecord(CUevent, CUstream) { return CUDA_SUCCESS; }
CUresult cuEventSynchronize(CUevent) { return waitIdle(); }
CUresult cuEventElapsedTime_v2(float *ms, CUevent, CUevent) {
  *ms = 0.0f;
  return CUDA_SUCCESS;
}

// No kernels: a program with launches cannot be loaded.
CUresult cuModuleLoadDataEx(CUmodule *, const void *, unsigned int,
                            CUjit_option *, void **) {
  return CUDA_ERROR_NOT_SUPPORTED;
}
CUresult cuModuleUnload(CUmodule) { return CUDA_SUCCESS; }
CUresult cuModuleGetFunction(CUfunction *, CUmodule, const char *) {
  return CUDA_ERROR_NOT_SUPPORTED;
}
CUresult cuFuncSetAttribute(CUfunction, CUfunction_attribute, int) {
  return CUDA_ERROR_NOT_SUPPORTED;
}
CUresult cuLaunchKernel(CUfunction, unsigned int, unsigned int, unsigned int,
                        unsigned int, unsigned int, unsigned int, unsigned int,
                        CUstream, void **, void **) {
  return CUDA_ERROR_NOT_SUPPORTED;
}
CUresult cuTensorMapEncodeTiled(CUtensorMap *, CUtensorMapDataType, cuuint32_t,
                                void *, const cuuint64_t *, const cuuint64_t *,
                                const cuuint32_t *, const cuuint32_t *,
                                CUtensorMapInterleave, CUtensorMapSwizzle,
                                CUtensorMapL2promotion,
                                CUtensorMapFloatOOBfill) {
  return CUDA_ERROR_NOT_SUPPORTED;
}

//===----------------------------------------------------------------------===//
// NCCL
//===----------------------------------------------------------------------===//

ncclResult_t ncclGetVersion(int *version) {
  *version = NCCL_VERSION_CODE;
  return ncclSuccess;
}
ncclResult_t ncclGetUniqueId(ncclUniqueId *id) {
  std::memset(id, 0, sizeof(*id));
  std::snprintf(id->internal, sizeof(id->internal), "stand-in");
  return ncclSuccess;
}
const char *ncclGetErrorString(ncclResult_t result) {
  switch (result) {
  case ncclSuccess: return "no error";
  case ncclSystemError: return "unhandled system error";
  case ncclRemoteError: return "remote process exited or there was a network error";
  case ncclInvalidArgument: return "invalid argument";
  case ncclInProgress: return "NCCL operation in progress";
  default: return "stand-in error";
  }
}
const char *ncclGetLastError(ncclComm_t comm) {
  auto *c = reinterpret_cast<FakeComm *>(comm);
  return c != nullptr ? c->lastError.c_str() : "";
}

ncclResult_t ncclCommInitRankConfig(ncclComm_t *comm, int size, ncclUniqueId,
                                    int rank, ncclConfig_t *) {
  const char *dir = std::getenv("SPARSEOPT_FAKE_NCCL_DIR");
  if (dir == nullptr || *dir == '\0' || size < 1 || rank < 0 || rank >= size)
    return ncclInvalidArgument;
  auto *c = new FakeComm;
  c->rank = rank;
  c->size = size;
  c->dir = dir;
  std::string pid = std::to_string(getpid());
  if (!writeAtomically(path(*c, "join." + std::to_string(rank)), pid.data(),
                       pid.size())) {
    delete c;
    return ncclSystemError;
  }
  std::lock_guard<std::mutex> lock(gMutex);
  gComms.insert(c);
  *comm = reinterpret_cast<ncclComm_t>(c);
  return ncclInProgress; // non-blocking: joined once every rank has
}

ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t *state) {
  auto *c = reinterpret_cast<FakeComm *>(comm);
  std::lock_guard<std::mutex> lock(gMutex);
  progress(*c);
  *state = c->error != ncclSuccess ? c->error
           : c->joined            ? ncclSuccess
                                  : ncclInProgress;
  return ncclSuccess;
}

ncclResult_t ncclCommCount(const ncclComm_t comm, int *count) {
  *count = reinterpret_cast<FakeComm *>(comm)->size;
  return ncclSuccess;
}
ncclResult_t ncclCommUserRank(const ncclComm_t comm, int *rank) {
  *rank = reinterpret_cast<FakeComm *>(comm)->rank;
  return ncclSuccess;
}

ncclResult_t ncclCommAbort(ncclComm_t comm) {
  auto *c = reinterpret_cast<FakeComm *>(comm);
  std::lock_guard<std::mutex> lock(gMutex);
  gComms.erase(c);
  delete c;
  return ncclSuccess;
}
ncclResult_t ncclCommDestroy(ncclComm_t comm) { return ncclCommAbort(comm); }

ncclResult_t ncclAllReduce(const void *send, void *recv, size_t count,
                           ncclDataType_t type, ncclRedOp_t op, ncclComm_t comm,
                           cudaStream_t) {
  auto *c = reinterpret_cast<FakeComm *>(comm);
  std::lock_guard<std::mutex> lock(gMutex);
  if (type != ncclFloat32)
    return ncclInvalidArgument;
  if (const char *fail = std::getenv("SPARSEOPT_FAKE_NCCL_FAIL");
      fail != nullptr && std::strcmp(fail, "1") == 0) {
    writeAtomically(path(*c, "failed." + std::to_string(c->rank)), "1", 1);
    c->error = ncclSystemError;
    c->lastError = "injected failure (SPARSEOPT_FAKE_NCCL_FAIL=1)";
    return ncclSystemError;
  }
  unsigned long long seq = c->nextSeq++;
  if (!writeAtomically(path(*c, "op" + std::to_string(seq) + "." +
                                    std::to_string(c->rank)),
                       send, count * sizeof(float)))
    return ncclSystemError;
  c->pending.push_back(PendingOp{seq, static_cast<const float *>(send),
                                 static_cast<float *>(recv), count, op});
  return ncclSuccess;
}

} // extern "C"
