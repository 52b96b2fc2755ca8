//===- BootstrapTest.cpp - Handing rank 0's NCCL id to the other ranks ----===//
//
// The id exchange of torchrun-style groups (runtime/lib/Bootstrap.cpp),
// compiled into this test directly: ranks are threads of this process, the
// file channel uses a temp directory and the TCP channel the loopback
// interface. No GPU and no NCCL library are needed.
//
//===----------------------------------------------------------------------===//

#include "Comm.h"
#include "TestSupport.h"

#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

using namespace sparseopt;

namespace {

ncclUniqueId patternId() {
  ncclUniqueId id;
  for (size_t i = 0; i < sizeof(id.internal); ++i)
    id.internal[i] = char(i * 7 + 3);
  return id;
}

bool sameId(const ncclUniqueId &a, const ncclUniqueId &b) {
  return std::memcmp(a.internal, b.internal, sizeof(a.internal)) == 0;
}

using sparseopt_test::contains;

/// A loopback TCP port nobody listens on right now.
int freePort() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  ::bind(fd, reinterpret_cast<sockaddr *>(&addr), sizeof(addr));
  socklen_t len = sizeof(addr);
  ::getsockname(fd, reinterpret_cast<sockaddr *>(&addr), &len);
  ::close(fd);
  return ntohs(addr.sin_port);
}

Clock::time_point in(int ms) {
  return Clock::now() + std::chrono::milliseconds(ms);
}

/// Runs rank 0 and ranks 1..world-1 of an exchange over `channel`, each in
/// its own thread; returns the statuses and fills `ids` (rank 0 keeps the
/// pattern).
std::vector<Status> exchange(const IdChannel &channel, int world,
                             std::vector<ncclUniqueId> &ids, int timeoutMs,
                             int ranksThatShowUp) {
  ids.assign(size_t(world), ncclUniqueId());
  std::memset(ids.data(), 0, ids.size() * sizeof(ncclUniqueId));
  ids[0] = patternId();
  std::vector<Status> statuses(size_t(world), SPARSEOPT_OK);
  std::vector<std::thread> threads;
  Clock::time_point deadline = in(timeoutMs);
  for (int r = 0; r < ranksThatShowUp; ++r)
    threads.emplace_back([&, r] {
      statuses[r] = exchangeUniqueId("test", channel, r, world, ids[r], deadline);
    });
  for (std::thread &t : threads)
    t.join();
  return statuses;
}

TEST(Bootstrap, FileChannelReachesEveryRank) {
  std::string path = ::testing::TempDir() + "sparseopt-id-" +
                     std::to_string(::getpid());
  std::filesystem::remove(path);
  IdChannel channel;
  channel.file = path;
  std::vector<ncclUniqueId> ids;
  std::vector<Status> statuses = exchange(channel, 4, ids, 10000, 4);
  for (int r = 0; r < 4; ++r) {
    EXPECT_EQ(statuses[r], SPARSEOPT_OK) << "rank " << r;
    EXPECT_TRUE(sameId(ids[r], patternId())) << "rank " << r;
  }
  std::filesystem::remove(path);
}

TEST(Bootstrap, FileReaderTimesOut) {
  IdChannel channel;
  channel.file = ::testing::TempDir() + "sparseopt-id-never-written";
  std::filesystem::remove(channel.file);
  ncclUniqueId id;
  Status s = exchangeUniqueId("test", channel, 1, 2, id, in(100));
  EXPECT_EQ(s, SPARSEOPT_ERROR_COLLECTIVE);
  EXPECT_TRUE(contains(sparseopt_last_error(),
                       "test: timed out waiting for rank 0 to write the NCCL "
                       "id file " + channel.file));
}

TEST(Bootstrap, FileWriterReportsAnUnwritableDirectory) {
  IdChannel channel;
  channel.file = "/nonexistent-dir/id";
  ncclUniqueId id = patternId();
  EXPECT_EQ(exchangeUniqueId("test", channel, 0, 2, id, in(100)),
            SPARSEOPT_ERROR_COLLECTIVE);
  EXPECT_TRUE(contains(sparseopt_last_error(),
                       "cannot write the NCCL id file /nonexistent-dir/id"));
}

TEST(Bootstrap, TcpChannelReachesEveryRank) {
  IdChannel channel;
  channel.host = "127.0.0.1";
  channel.port = freePort();
  std::vector<ncclUniqueId> ids;
  std::vector<Status> statuses = exchange(channel, 4, ids, 10000, 4);
  for (int r = 0; r < 4; ++r) {
    EXPECT_EQ(statuses[r], SPARSEOPT_OK) << "rank " << r;
    EXPECT_TRUE(sameId(ids[r], patternId())) << "rank " << r;
  }
}

TEST(Bootstrap, TcpFetchTimesOutWithoutRankZero) {
  IdChannel channel;
  channel.host = "127.0.0.1";
  channel.port = freePort();
  ncclUniqueId id;
  EXPECT_EQ(exchangeUniqueId("test", channel, 1, 2, id, in(200)),
            SPARSEOPT_ERROR_COLLECTIVE);
  EXPECT_TRUE(contains(sparseopt_last_error(),
                       "timed out fetching the NCCL id from rank 0 at "
                       "127.0.0.1:" + std::to_string(channel.port)));
}

TEST(Bootstrap, TcpServerTimesOutWhenARankIsMissing) {
  IdChannel channel;
  channel.host = "127.0.0.1";
  channel.port = freePort();
  std::vector<ncclUniqueId> ids;
  // World of 3, only ranks 0 and 1 show up.
  std::vector<Status> statuses = exchange(channel, 3, ids, 300, 2);
  EXPECT_EQ(statuses[0], SPARSEOPT_ERROR_COLLECTIVE);
  EXPECT_EQ(statuses[1], SPARSEOPT_OK);
  EXPECT_TRUE(sameId(ids[1], patternId()));
}

TEST(Bootstrap, TcpServerMessageCountsTheRanksServed) {
  IdChannel channel;
  channel.host = "127.0.0.1";
  channel.port = freePort();
  ncclUniqueId id = patternId();
  EXPECT_EQ(exchangeUniqueId("test", channel, 0, 3, id, in(100)),
            SPARSEOPT_ERROR_COLLECTIVE);
  EXPECT_TRUE(contains(sparseopt_last_error(),
                       "timed out on port " + std::to_string(channel.port) +
                           " after 0 of 2 ranks received the NCCL id"));
}

} // namespace
