//===- Comm.cpp - Communicators and their public API ----------------------===//
//
// Communicators the runtime makes are non-blocking NCCL communicators: the
// initialization returns at once and the runtime polls it against a
// deadline, and so does every later wait (awaitComm). The communication
// stream is non-blocking towards the legacy default stream and has the
// context's highest priority, so its reduction kernels are scheduled ahead
// of queued compute work.
//
//===----------------------------------------------------------------------===//

#include "Comm.h"
#include "Context.h"

#include <climits>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <thread>

using namespace sparseopt;

namespace sparseopt {

Clock::time_point commDeadline(int timeoutMs) {
  long long ms = timeoutMs;
  if (ms <= 0) {
    ms = 600000;
    if (const char *env = std::getenv("SPARSEOPT_COMM_TIMEOUT_MS")) {
      char *end = nullptr;
      long long value = std::strtoll(env, &end, 10);
      if (end != env && *end == '\0' && value > 0)
        ms = value;
    }
  }
  return Clock::now() + std::chrono::milliseconds(ms);
}

Status checkNotAborted(const char *api, const sparseopt_comm_s &c) {
  if (c.aborted)
    return fail(SPARSEOPT_ERROR_COLLECTIVE, api,
                "the communicator was aborted earlier (" + c.abortReason +
                    "); make a new one");
  return SPARSEOPT_OK;
}

namespace {

/// Backs off while polling something that has been pending for `waited`:
/// an enqueue that NCCL reports in progress is normally done within
/// microseconds (sleeping even 100 us per collective made eager decode
/// runs twice as slow), a real wait (a peer still computing) can take
/// seconds.
void pause(Clock::duration waited) {
  if (waited < std::chrono::microseconds(200))
    std::this_thread::yield();
  else if (waited < std::chrono::milliseconds(20))
    std::this_thread::sleep_for(std::chrono::microseconds(20));
  else
    std::this_thread::sleep_for(std::chrono::microseconds(200));
}

/// Aborts `c` (once) and records why.
Status abortWith(const char *api, sparseopt_comm_s &c, const std::string &why) {
  if (!c.aborted) {
    c.aborted = true;
    c.abortReason = why;
    if (c.comm != nullptr)
      nccl().ncclCommAbort(c.comm);
    c.comm = nullptr;
  }
  return fail(SPARSEOPT_ERROR_COLLECTIVE, api,
              why + "; the communicator was aborted");
}

} // namespace

Status awaitComm(const char *api, sparseopt_comm_s &c,
                 Clock::time_point deadline, const std::string &what) {
  if (Status s = checkNotAborted(api, c))
    return s;
  Clock::time_point start = Clock::now();
  while (true) {
    ncclResult_t state = ncclSuccess;
    ncclResult_t result = nccl().ncclCommGetAsyncError(c.comm, &state);
    if (result == ncclSuccess && state == ncclSuccess)
      return SPARSEOPT_OK;
    if (result != ncclSuccess || state != ncclInProgress)
      return abortWith(api, c,
                       what + " failed: " +
                           ncclResultText(result != ncclSuccess ? result
                                                                : state,
                                          c.comm));
    Clock::time_point now = Clock::now();
    if (now >= deadline)
      return abortWith(api, c, what + " timed out");
    pause(now - start);
  }
}

Status enqueueAllReduce(const char *api, sparseopt_comm_s &c, CUdeviceptr send,
                        CUdeviceptr recv, const AllReduceDecl &a) {
  std::lock_guard<std::mutex> lock(c.mutex);
  if (Status s = checkNotAborted(api, c))
    return s;
  ncclResult_t result = nccl().ncclAllReduce(
      reinterpret_cast<const void *>(send), reinterpret_cast<void *>(recv),
      size_t(a.count), ncclType(a.type), ncclOp(a.op), c.comm,
      reinterpret_cast<cudaStream_t>(c.stream));
  if (result == ncclInProgress)
    return awaitComm(api, c, commDeadline(0), "ncclAllReduce");
  if (result != ncclSuccess)
    return abortWith(api, c,
                     "ncclAllReduce failed: " + ncclResultText(result, c.comm));
  return SPARSEOPT_OK;
}

} // namespace sparseopt

namespace {

/// Makes the communication stream of `c`: non-blocking, highest priority.
Status createCommStream(const char *api, sparseopt_comm_s &c) {
  int least = 0, greatest = 0;
  CUresult result = driver().cuCtxGetStreamPriorityRange(&least, &greatest);
  if (result != CUDA_SUCCESS)
    return cudaFail(result, api, "cuCtxGetStreamPriorityRange");
  result = driver().cuStreamCreateWithPriority(&c.stream, CU_STREAM_NON_BLOCKING,
                                               greatest);
  if (result != CUDA_SUCCESS) {
    c.stream = nullptr;
    return cudaFail(result, api, "cuStreamCreateWithPriority");
  }
  return SPARSEOPT_OK;
}

/// Frees what `c` holds (not its NCCL communicator when adopted or gone).
Status releaseComm(const char *api, sparseopt_comm_s &c) {
  Status first = SPARSEOPT_OK;
  if (c.comm != nullptr && c.owned) {
    ncclResult_t result = nccl().ncclCommDestroy(c.comm);
    if (result != ncclSuccess)
      first = fail(SPARSEOPT_ERROR_COLLECTIVE, api,
                   "ncclCommDestroy failed: " + ncclResultText(result));
  }
  c.comm = nullptr;
  if (c.stream != nullptr) {
    CUresult result = driver().cuStreamDestroy_v2(c.stream);
    if (result != CUDA_SUCCESS && first == SPARSEOPT_OK)
      first = cudaFail(result, api, "cuStreamDestroy (communication stream)");
    c.stream = nullptr;
  }
  return first;
}

/// Creates the communicator of `rank` in a group of `worldSize` keyed by
/// `id`, waiting until `deadline` for the others.
Status initComm(const char *api, int rank, int worldSize, const ncclUniqueId &id,
                Clock::time_point deadline, sparseopt_comm *out) {
  auto c = std::make_unique<sparseopt_comm_s>();
  c->rank = rank;
  c->size = worldSize;
  if (Status s = createCommStream(api, *c))
    return s;
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  ncclResult_t result = nccl().ncclCommInitRankConfig(&c->comm, worldSize, id,
                                                      rank, &config);
  if (result != ncclSuccess && result != ncclInProgress) {
    std::string text = ncclResultText(result);
    if (c->comm != nullptr)
      nccl().ncclCommAbort(c->comm);
    c->comm = nullptr;
    releaseComm(api, *c);
    return fail(SPARSEOPT_ERROR_COLLECTIVE, api,
                "ncclCommInitRankConfig (rank " + std::to_string(rank) +
                    " of " + std::to_string(worldSize) + ") failed: " + text);
  }
  {
    std::lock_guard<std::mutex> lock(c->mutex);
    if (Status s = awaitComm(api, *c, deadline,
                             "joining the group as rank " +
                                 std::to_string(rank) + " of " +
                                 std::to_string(worldSize))) {
      releaseComm(api, *c);
      return s;
    }
  }
  *out = c.release();
  return SPARSEOPT_OK;
}

/// Reads integer environment variable `name` into `value` (kept when unset).
Status envInt(const char *api, const char *name, int &value) {
  const char *text = std::getenv(name);
  if (text == nullptr || *text == '\0')
    return SPARSEOPT_OK;
  char *end = nullptr;
  long parsed = std::strtol(text, &end, 10);
  if (end == text || *end != '\0' || parsed < 0 || parsed > INT_MAX)
    return fail(SPARSEOPT_ERROR_INVALID_ARGUMENT, api,
                std::string(name) + "='" + text +
                    "' is not a non-negative integer");
  value = int(parsed);
  return SPARSEOPT_OK;
}

Status prepare(const char *api) {
  if (Status s = requireContext(api))
    return s;
  return loadNccl(api);
}

} // namespace

extern "C" {

sparseopt_status sparseopt_comm_unique_id(unsigned char *id) {
  const char *api = "sparseopt_comm_unique_id";
  return guarded(api, [&]() -> Status {
    if (id == nullptr)
      return nullArgument(api, "id");
    if (Status s = loadNccl(api))
      return s;
    ncclUniqueId unique;
    ncclResult_t result = nccl().ncclGetUniqueId(&unique);
    if (result != ncclSuccess)
      return fail(SPARSEOPT_ERROR_COLLECTIVE, api,
                  "ncclGetUniqueId failed: " + ncclResultText(result));
    static_assert(sizeof(unique.internal) == SPARSEOPT_COMM_ID_BYTES,
                  "an NCCL unique id is SPARSEOPT_COMM_ID_BYTES bytes");
    std::memcpy(id, unique.internal, SPARSEOPT_COMM_ID_BYTES);
    return SPARSEOPT_OK;
  });
}

sparseopt_status sparseopt_comm_init(int rank, int world_size,
                                     const unsigned char *id, int timeout_ms,
                                     sparseopt_comm *out) {
  const char *api = "sparseopt_comm_init";
  return guarded(api, [&]() -> Status {
    if (out == nullptr)
      return nullArgument(api, "out");
    *out = nullptr;
    if (id == nullptr)
      return nullArgument(api, "id");
    if (world_size < 1 || rank < 0 || rank >= world_size)
      return fail(SPARSEOPT_ERROR_INVALID_ARGUMENT, api,
                  "rank " + std::to_string(rank) + " is not in [0, " +
                      std::to_string(world_size) + ")");
    if (Status s = prepare(api))
      return s;
    ncclUniqueId unique;
    std::memcpy(unique.internal, id, SPARSEOPT_COMM_ID_BYTES);
    return initComm(api, rank, world_size, unique, commDeadline(timeout_ms),
                    out);
  });
}

sparseopt_status sparseopt_comm_init_from_env(int timeout_ms,
                                              sparseopt_comm *out) {
  const char *api = "sparseopt_comm_init_from_env";
  return guarded(api, [&]() -> Status {
    if (out == nullptr)
      return nullArgument(api, "out");
    *out = nullptr;
    int rank = 0, worldSize = 1;
    if (Status s = envInt(api, "RANK", rank))
      return s;
    if (Status s = envInt(api, "WORLD_SIZE", worldSize))
      return s;
    if (worldSize < 1 || rank >= worldSize)
      return fail(SPARSEOPT_ERROR_INVALID_ARGUMENT, api,
                  "RANK=" + std::to_string(rank) + " is not in [0, WORLD_SIZE=" +
                      std::to_string(worldSize) + ")");
    IdChannel channel;
    if (worldSize > 1)
      if (Status s = idChannelFromEnv(api, worldSize, channel))
        return s;
    if (Status s = prepare(api))
      return s;
    Clock::time_point deadline = commDeadline(timeout_ms);
    ncclUniqueId unique;
    std::memset(&unique, 0, sizeof(unique));
    if (rank == 0) {
      ncclResult_t result = nccl().ncclGetUniqueId(&unique);
      if (result != ncclSuccess)
        return fail(SPARSEOPT_ERROR_COLLECTIVE, api,
                    "ncclGetUniqueId failed: " + ncclResultText(result));
    }
    if (worldSize > 1)
      if (Status s = exchangeUniqueId(api, channel, rank, worldSize, unique,
                                      deadline))
        return s;
    return initComm(api, rank, worldSize, unique, deadline, out);
  });
}

sparseopt_status sparseopt_comm_adopt(void *nccl_comm, sparseopt_comm *out) {
  const char *api = "sparseopt_comm_adopt";
  return guarded(api, [&]() -> Status {
    if (out == nullptr)
      return nullArgument(api, "out");
    *out = nullptr;
    if (nccl_comm == nullptr)
      return nullArgument(api, "nccl_comm");
    if (Status s = prepare(api))
      return s;
    auto c = std::make_unique<sparseopt_comm_s>();
    c->comm = static_cast<ncclComm_t>(nccl_comm);
    c->owned = false;
    ncclResult_t result = nccl().ncclCommCount(c->comm, &c->size);
    if (result == ncclSuccess)
      result = nccl().ncclCommUserRank(c->comm, &c->rank);
    if (result != ncclSuccess)
      return fail(SPARSEOPT_ERROR_COLLECTIVE, api,
                  "the communicator cannot be queried: " +
                      ncclResultText(result));
    if (Status s = createCommStream(api, *c))
      return s;
    *out = c.release();
    return SPARSEOPT_OK;
  });
}

int sparseopt_comm_rank(sparseopt_comm c) {
  if (c == nullptr) {
    nullArgument("sparseopt_comm_rank", "c");
    return -1;
  }
  return c->rank;
}

int sparseopt_comm_size(sparseopt_comm c) {
  if (c == nullptr) {
    nullArgument("sparseopt_comm_size", "c");
    return -1;
  }
  return c->size;
}

sparseopt_stream sparseopt_comm_stream(sparseopt_comm c) {
  if (c == nullptr) {
    nullArgument("sparseopt_comm_stream", "c");
    return nullptr;
  }
  return reinterpret_cast<sparseopt_stream>(c->stream);
}

sparseopt_status sparseopt_comm_synchronize(sparseopt_comm c,
                                            sparseopt_stream s,
                                            int timeout_ms) {
  const char *api = "sparseopt_comm_synchronize";
  return guarded(api, [&]() -> Status {
    if (c == nullptr)
      return nullArgument(api, "c");
    if (Status st = requireContext(api))
      return st;
    Clock::time_point start = Clock::now();
    Clock::time_point deadline = commDeadline(timeout_ms);
    std::lock_guard<std::mutex> lock(c->mutex);
    for (CUstream stream : {toCUstream(s), c->stream}) {
      while (true) {
        CUresult result = driver().cuStreamQuery(stream);
        if (result == CUDA_SUCCESS)
          break;
        if (result != CUDA_ERROR_NOT_READY)
          return cudaFail(result, api, "cuStreamQuery");
        if (Status st = awaitComm(api, *c, deadline,
                                  "waiting for the streams"))
          return st;
        Clock::time_point now = Clock::now();
        if (now >= deadline)
          return abortWith(api, *c, "waiting for the streams timed out");
        pause(now - start);
      }
    }
    return SPARSEOPT_OK;
  });
}

sparseopt_status sparseopt_comm_destroy(sparseopt_comm c) {
  const char *api = "sparseopt_comm_destroy";
  return guarded(api, [&]() -> Status {
    if (c == nullptr)
      return nullArgument(api, "c");
    std::unique_ptr<sparseopt_comm_s> owned(c);
    if (Status st = requireContext(api))
      return st;
    return releaseComm(api, *owned);
  });
}

} // extern "C"
