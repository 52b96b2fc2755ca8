//===- CollectiveFaultTest.cpp - A failing or hanging peer, without a GPU -===//
//
// Ranks are child processes that load the runtime against a stand-in CUDA
// driver and NCCL (FakeCudaNccl.cpp, chosen with SPARSEOPT_CUDA_LIBRARY and
// SPARSEOPT_NCCL_LIBRARY). Each healthy rank makes a communicator and runs a
// program of two all-reduces; one peer misbehaves: it hangs, exits, fails in
// NCCL or never joins. The survivors must return SPARSEOPT_ERROR_COLLECTIVE
// within their deadline, and nothing may hang: the parent kills every rank
// still running after a minute and fails the test.
//
//===----------------------------------------------------------------------===//

#include "TestSupport.h"

#include "sparseopt/runtime.h"

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <ostream>
#include <map>
#include <sstream>
#include <string>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>
#include <vector>

using namespace sparseopt_test;

namespace {

constexpr int kWorld = 3;
constexpr int kCount = 256;

/// What a peer does instead of its part.
enum class Fault { None, HangAfterJoin, ExitAfterJoin, NcclFails, NeverJoins };

/// One rank's outcome, as the child reports it.
struct Outcome {
  std::string step;   ///< "init", "run", "sync" or "done"
  std::string status; ///< the status name of the failing step (or OK)
  long elapsedMs = 0; ///< how long the failing (or last) step took
  std::string message;
};

const char *kProgram = "sparseopt-program 2\n"
                       "buffer 0 input 0 1024\n"
                       "buffer 1 output 0 1024\n"
                       "buffer 2 output 1 1024\n"
                       "allreduce slot=0 send=b0 recv=b1 count=256 type=f32 "
                       "op=sum\n"
                       "allreduce slot=1 send=b0 recv=b2 count=256 type=f32 "
                       "op=max\n"
                       "wait slot=0\n"
                       "wait slot=1\n";

float valueOf(int rank, int i) { return float(rank + 1) * 0.5f + float(i); }

/// The body of rank `rank` in a child process: writes its outcome to
/// <dir>/outcome.<rank> and exits.
[[noreturn]] void runRank(const std::string &dir, const std::string &program,
                          int rank, Fault fault, int timeoutMs) {
  setenv("SPARSEOPT_CUDA_LIBRARY", SPARSEOPT_FAKE_LIBRARY, 1);
  setenv("SPARSEOPT_NCCL_LIBRARY", SPARSEOPT_FAKE_LIBRARY, 1);
  setenv("SPARSEOPT_FAKE_NCCL_DIR", dir.c_str(), 1);
  if (fault == Fault::NcclFails)
    setenv("SPARSEOPT_FAKE_NCCL_FAIL", "1", 1);
  if (fault == Fault::NeverJoins)
    for (;;)
      pause();

  using Clock = std::chrono::steady_clock;
  Outcome out;
  Clock::time_point start = Clock::now();
  auto finish = [&](const std::string &step, sparseopt_status status,
                    std::string message = "") {
    out.step = step;
    out.status = sparseopt_status_string(status);
    out.elapsedMs = long(std::chrono::duration_cast<std::chrono::milliseconds>(
                             Clock::now() - start)
                             .count());
    if (message.empty() && status != SPARSEOPT_OK)
      message = sparseopt_last_error();
    out.message = message;
    std::ofstream file(dir + "/outcome." + std::to_string(rank));
    file << out.step << "\n" << out.status << "\n" << out.elapsedMs << "\n"
         << out.message << "\n";
    file.close();
    _exit(status == SPARSEOPT_OK ? 0 : 1);
  };

  sparseopt_status s = sparseopt_init(0);
  if (s != SPARSEOPT_OK)
    finish("init", s);
  unsigned char id[SPARSEOPT_COMM_ID_BYTES] = {};
  sparseopt_comm comm = nullptr;
  s = sparseopt_comm_init(rank, kWorld, id, timeoutMs, &comm);
  if (s != SPARSEOPT_OK)
    finish("init", s);
  if (fault == Fault::HangAfterJoin)
    for (;;)
      pause();
  if (fault == Fault::ExitAfterJoin)
    _exit(3);

  sparseopt_program p = nullptr;
  sparseopt_deviceptr in = 0, outs[2] = {0, 0};
  std::vector<float> x(kCount);
  for (int i = 0; i < kCount; ++i)
    x[size_t(i)] = valueOf(rank, i);
  if ((s = sparseopt_program_load(program.c_str(), &p)) != SPARSEOPT_OK ||
      (s = sparseopt_program_set_comm(p, comm)) != SPARSEOPT_OK ||
      (s = sparseopt_malloc(1024, &in)) != SPARSEOPT_OK ||
      (s = sparseopt_malloc(1024, &outs[0])) != SPARSEOPT_OK ||
      (s = sparseopt_malloc(1024, &outs[1])) != SPARSEOPT_OK ||
      (s = sparseopt_memcpy_htod(in, x.data(), 1024)) != SPARSEOPT_OK)
    finish("load", s);
  start = Clock::now();
  if ((s = sparseopt_program_run(p, &in, outs, nullptr)) != SPARSEOPT_OK)
    finish("run", s);
  start = Clock::now();
  if ((s = sparseopt_comm_synchronize(comm, nullptr, timeoutMs)) !=
      SPARSEOPT_OK) {
    // After a failure the communicator is aborted: a further run is
    // refused at once, with the reason.
    std::string first = sparseopt_last_error();
    sparseopt_status again = sparseopt_program_run(p, &in, outs, nullptr);
    std::string second = sparseopt_last_error();
    finish("sync", s, first + " | then: " + sparseopt_status_string(again) +
                          " " + second);
  }
  // Healthy: the sum and the max over the ranks.
  std::vector<float> sum(kCount), max(kCount);
  if ((s = sparseopt_memcpy_dtoh(sum.data(), outs[0], 1024)) != SPARSEOPT_OK ||
      (s = sparseopt_memcpy_dtoh(max.data(), outs[1], 1024)) != SPARSEOPT_OK)
    finish("copy", s);
  for (int i = 0; i < kCount; ++i) {
    float expected = 0.0f;
    for (int r = 0; r < kWorld; ++r)
      expected += valueOf(r, i);
    if (sum[size_t(i)] != expected || max[size_t(i)] != valueOf(kWorld - 1, i))
      finish("values", SPARSEOPT_ERROR_INVALID_ARGUMENT);
  }
  finish("done", SPARSEOPT_OK);
  _exit(0); // not reached: finish exits
}

std::ostream &operator<<(std::ostream &os, const Outcome &o) {
  return os << "[step " << o.step << ", " << o.status << " after "
            << o.elapsedMs << " ms: " << o.message << "]";
}

/// Runs kWorld ranks, rank kWorld - 1 with `fault`; returns the outcomes of
/// the others. Fails the test (and kills everyone) if a healthy rank is
/// still running after a minute.
std::map<int, Outcome> runGroup(Fault fault, int timeoutMs) {
  TempDir dir;
  TempDir program;
  program.writeProgram(kProgram);
  std::map<pid_t, int> ranks;
  for (int r = 0; r < kWorld; ++r) {
    pid_t pid = fork();
    if (pid == 0)
      runRank(dir.path(), program.path(), r,
              r == kWorld - 1 ? fault : Fault::None, timeoutMs);
    ranks[pid] = r;
  }
  // Reap every child as it exits (a dead peer must not linger as a
  // zombie that still looks alive), until the healthy ranks are done.
  auto deadline = std::chrono::steady_clock::now() + std::chrono::minutes(1);
  auto healthyRunning = [&] {
    for (auto &[pid, r] : ranks)
      if (r != kWorld - 1 || fault == Fault::None || fault == Fault::NcclFails)
        return true;
    return false;
  };
  while (healthyRunning() && std::chrono::steady_clock::now() < deadline) {
    int status = 0;
    pid_t done = waitpid(-1, &status, WNOHANG);
    if (done > 0)
      ranks.erase(done);
    else
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  bool hung = healthyRunning();
  for (auto &[pid, r] : ranks) {
    kill(pid, SIGKILL);
    waitpid(pid, nullptr, 0);
  }
  EXPECT_FALSE(hung) << "a healthy rank was still running after a minute";

  std::map<int, Outcome> outcomes;
  for (int r = 0; r < kWorld; ++r) {
    if (fault != Fault::None && r == kWorld - 1 && fault != Fault::NcclFails)
      continue;
    std::ifstream file(dir.path() + "/outcome." + std::to_string(r));
    Outcome o;
    std::string ms;
    if (std::getline(file, o.step) && std::getline(file, o.status) &&
        std::getline(file, ms)) {
      o.elapsedMs = std::atol(ms.c_str());
      std::getline(file, o.message);
    } else {
      o.step = "missing";
    }
    outcomes[r] = o;
  }
  return outcomes;
}

/// Whether survivor `r` failed with `reason` (true) or, racing another
/// survivor that failed with it first and exited, with NCCL's remote error
/// naming that survivor (false); anything else fails the test. Survivors
/// share the fault and the deadline, so either may report first.
bool failedWith(const Outcome &o, int r, const std::string &reason) {
  if (contains(o.message, reason))
    return true;
  bool survivorLeft = false;
  for (int other = 0; other < kWorld - 1; ++other)
    survivorLeft |= other != r && contains(o.message, "ncclRemoteError") &&
                    contains(o.message, "rank " + std::to_string(other) +
                                            " (process");
  EXPECT_TRUE(survivorLeft) << "neither '" << reason
                            << "' nor a survivor's exit: " << o;
  return false;
}

TEST(CollectiveFaults, HealthyGroupReducesAcrossProcesses) {
  std::map<int, Outcome> outcomes = runGroup(Fault::None, 20000);
  ASSERT_EQ(outcomes.size(), size_t(kWorld));
  for (auto &[r, o] : outcomes) {
    EXPECT_EQ(o.step, "done") << o;
    EXPECT_EQ(o.status, "SPARSEOPT_OK") << o;
  }
}

TEST(CollectiveFaults, HangingPeerTimesOutAtTheDeadline) {
  const int timeoutMs = 1500;
  std::map<int, Outcome> outcomes = runGroup(Fault::HangAfterJoin, timeoutMs);
  int reported = 0;
  for (int r = 0; r < kWorld - 1; ++r) {
    const Outcome &o = outcomes[r];
    EXPECT_EQ(o.step, "sync") << o;
    EXPECT_EQ(o.status, "SPARSEOPT_ERROR_COLLECTIVE") << o;
    reported += failedWith(o, r, "waiting for the streams timed out; the "
                                 "communicator was aborted");
    EXPECT_GE(o.elapsedMs, timeoutMs - 50) << o;
    EXPECT_LT(o.elapsedMs, timeoutMs + 20000) << o;
    EXPECT_TRUE(contains(o.message, "then: SPARSEOPT_ERROR_COLLECTIVE")) << o;
    EXPECT_TRUE(contains(o.message, "the communicator was aborted earlier")) << o;
  }
  EXPECT_GE(reported, 1);
}

TEST(CollectiveFaults, ExitedPeerIsARemoteErrorBeforeTheDeadline) {
  const int timeoutMs = 30000;
  std::map<int, Outcome> outcomes = runGroup(Fault::ExitAfterJoin, timeoutMs);
  int reported = 0;
  for (int r = 0; r < kWorld - 1; ++r) {
    const Outcome &o = outcomes[r];
    EXPECT_EQ(o.step, "sync") << o;
    EXPECT_EQ(o.status, "SPARSEOPT_ERROR_COLLECTIVE") << o;
    EXPECT_TRUE(contains(o.message, "ncclRemoteError")) << o;
    reported += failedWith(o, r, "rank 2 (process");
    EXPECT_TRUE(contains(o.message, "the communicator was aborted")) << o;
    EXPECT_LT(o.elapsedMs, timeoutMs / 2) << o;
  }
  EXPECT_GE(reported, 1);
}

TEST(CollectiveFaults, PeerWhoseNcclFailsFailsItselfAndTheOthers) {
  const int timeoutMs = 30000;
  std::map<int, Outcome> outcomes = runGroup(Fault::NcclFails, timeoutMs);
  const Outcome &peer = outcomes[kWorld - 1];
  EXPECT_EQ(peer.step, "run") << peer;
  EXPECT_EQ(peer.status, "SPARSEOPT_ERROR_COLLECTIVE") << peer;
  EXPECT_TRUE(contains(peer.message, "ncclAllReduce failed: ncclSystemError")) << peer;
  int reported = 0;
  for (int r = 0; r < kWorld - 1; ++r) {
    const Outcome &o = outcomes[r];
    EXPECT_EQ(o.step, "sync") << o;
    EXPECT_EQ(o.status, "SPARSEOPT_ERROR_COLLECTIVE") << o;
    EXPECT_TRUE(contains(o.message, "ncclRemoteError")) << o;
    reported += failedWith(o, r, "rank 2 reported a failure");
    EXPECT_LT(o.elapsedMs, timeoutMs / 2) << o;
  }
  EXPECT_GE(reported, 1);
}

TEST(CollectiveFaults, PeerThatNeverJoinsTimesOutTheInit) {
  const int timeoutMs = 1500;
  std::map<int, Outcome> outcomes = runGroup(Fault::NeverJoins, timeoutMs);
  int timedOut = 0;
  for (int r = 0; r < kWorld - 1; ++r) {
    const Outcome &o = outcomes[r];
    EXPECT_EQ(o.step, "init") << o;
    EXPECT_EQ(o.status, "SPARSEOPT_ERROR_COLLECTIVE") << o;
    timedOut += failedWith(o, r,
                           "joining the group as rank " + std::to_string(r) +
                               " of 3 timed out");
    EXPECT_GE(o.elapsedMs, timeoutMs - 50) << o;
    EXPECT_LT(o.elapsedMs, timeoutMs + 20000) << o;
  }
  EXPECT_GE(timedOut, 1);
}

} // namespace
