//===- Comm.h - Communicators: NCCL plus a communication stream -*- C++ -*-===//
//
// A sparseopt_comm is one rank's NCCL communicator and the stream its
// collectives run on. Programs with allreduce lines enqueue on that stream
// (ProgramRun.cpp) and every wait on it goes through awaitComm(), which polls
// NCCL against a deadline: a dead peer is an error, never a hang.
//
//===----------------------------------------------------------------------===//

#ifndef SPARSEOPT_RUNTIME_COMM_H
#define SPARSEOPT_RUNTIME_COMM_H

#include "Nccl.h"

#include <chrono>
#include <mutex>
#include <string>

/// The public sparseopt_comm handle.
struct sparseopt_comm_s {
  ncclComm_t comm = nullptr;
  bool owned = true; ///< false for an adopted communicator
  int rank = 0, size = 1;
  CUstream stream = nullptr; ///< the communication stream (owned)
  /// Set once the communicator was aborted (after an error or a timeout);
  /// `abortReason` says why, and every later use fails with it.
  bool aborted = false;
  std::string abortReason;
  /// Guards `aborted`/`abortReason` and serializes the NCCL calls made
  /// through this handle.
  std::mutex mutex;
};

namespace sparseopt {

using Clock = std::chrono::steady_clock;

/// The deadline `timeoutMs` from now; 0 means the default
/// (SPARSEOPT_COMM_TIMEOUT_MS, else 600000 ms).
Clock::time_point commDeadline(int timeoutMs);

/// Fails with COLLECTIVE when `c` was aborted. The caller holds c.mutex.
Status checkNotAborted(const char *api, const sparseopt_comm_s &c);

/// Polls ncclCommGetAsyncError until the communicator is no longer in
/// progress. On an NCCL error, or when `deadline` passes, aborts it and
/// fails with COLLECTIVE: "<what> failed: <NCCL error>" or "<what> timed
/// out". The caller holds c.mutex.
Status awaitComm(const char *api, sparseopt_comm_s &c,
                 Clock::time_point deadline, const std::string &what);

/// Enqueues the all-reduce `a` over `send`/`recv` on c's stream after
/// checking the communicator; ncclInProgress is awaited within the default
/// deadline.
Status enqueueAllReduce(const char *api, sparseopt_comm_s &c, CUdeviceptr send,
                        CUdeviceptr recv, const AllReduceDecl &a);

/// How rank 0's NCCL unique id reaches the other ranks of a torchrun-style
/// group (Bootstrap.cpp): a file every rank sees, or TCP to rank 0.
struct IdChannel {
  std::string file; ///< SPARSEOPT_COMM_ID_FILE, when set
  std::string host; ///< else MASTER_ADDR
  int port = 0;     ///< and SPARSEOPT_COMM_PORT, else MASTER_PORT + 1
  /// TCP: SPARSEOPT_COMM_TOKEN, the secret every rank shows rank 0 before
  /// it gets the id (a connection without it is ignored and logged).
  std::string token;
};

/// Reads the channel from the environment. Errors: INVALID_ARGUMENT (no
/// file and no address, a port that is not one, or TCP without a token).
Status idChannelFromEnv(const char *api, int worldSize, IdChannel &out);

/// Hands rank 0's `id` to the other ranks over `channel` (on rank 0), or
/// receives it into `id` (on the others), by `deadline`. Errors: COLLECTIVE
/// (the file cannot be written, the port cannot be listened on, or the
/// deadline passed; the message names the file or the address).
Status exchangeUniqueId(const char *api, const IdChannel &channel, int rank,
                        int worldSize, ncclUniqueId &id,
                        Clock::time_point deadline);

} // namespace sparseopt

#endif // SPARSEOPT_RUNTIME_COMM_H
