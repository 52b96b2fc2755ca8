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
  channel.token = "secret";
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

/// Connects to the loopback `port` (retrying while nobody listens), sends
/// `bytes` and returns what arrives before the peer closes (or 1 s).
std::string stranger(int port, const std::string &bytes) {
  for (int attempt = 0; attempt < 200; ++attempt) {
    int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = htons(uint16_t(port));
    if (::connect(fd, reinterpret_cast<sockaddr *>(&addr), sizeof(addr)) != 0) {
      ::close(fd);
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
      continue;
    }
    ::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL);
    timeval tv{1, 0};
    ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    std::string got;
    char buf[256];
    ssize_t n;
    while ((n = ::recv(fd, buf, sizeof(buf), 0)) > 0)
      got.append(buf, size_t(n));
    ::close(fd);
    return got;
  }
  return "no listener";
}

TEST(Bootstrap, TcpStrangersGetNothingAndDoNotCount) {
  // Rank 0 of a world of 3 with a port scan, an HTTP request, a wrong token
  // and a silent connection arriving before the real ranks: each is
  // ignored (nothing sent back, not counted), and ranks 1 and 2 still get
  // the id.
  IdChannel channel;
  channel.host = "127.0.0.1";
  channel.port = freePort();
  channel.token = "secret";
  std::vector<ncclUniqueId> ids(3);
  std::memset(ids.data(), 0, ids.size() * sizeof(ncclUniqueId));
  ids[0] = patternId();
  Clock::time_point deadline = in(20000);
  Status served = SPARSEOPT_OK;
  std::thread rank0([&] {
    served = exchangeUniqueId("test", channel, 0, 3, ids[0], deadline);
  });
  std::string wrong("SOPT\0\5wrong", 11);
  EXPECT_EQ(stranger(channel.port, ""), "");
  EXPECT_EQ(stranger(channel.port, "GET / HTTP/1.0\r\n\r\n"), "");
  EXPECT_EQ(stranger(channel.port, wrong), "");
  std::vector<Status> statuses(3, SPARSEOPT_OK);
  std::vector<std::thread> ranks;
  for (int r = 1; r < 3; ++r)
    ranks.emplace_back([&, r] {
      statuses[r] = exchangeUniqueId("test", channel, r, 3, ids[r], deadline);
    });
  for (std::thread &t : ranks)
    t.join();
  rank0.join();
  EXPECT_EQ(served, SPARSEOPT_OK) << sparseopt_last_error();
  for (int r = 1; r < 3; ++r) {
    EXPECT_EQ(statuses[r], SPARSEOPT_OK) << "rank " << r;
    EXPECT_TRUE(sameId(ids[r], patternId())) << "rank " << r;
  }
}

TEST(Bootstrap, TcpRankWithTheWrongTokenTimesOut) {
  IdChannel server, client;
  server.host = client.host = "127.0.0.1";
  server.port = client.port = freePort();
  server.token = "secret";
  client.token = "guess";
  ncclUniqueId id0 = patternId(), id1;
  Status s0 = SPARSEOPT_OK;
  std::thread rank0([&] { s0 = exchangeUniqueId("test", server, 0, 2, id0, in(600)); });
  EXPECT_EQ(exchangeUniqueId("test", client, 1, 2, id1, in(600)),
            SPARSEOPT_ERROR_COLLECTIVE);
  EXPECT_TRUE(contains(sparseopt_last_error(), "wrong SPARSEOPT_COMM_TOKEN"))
      << sparseopt_last_error();
  rank0.join();
  EXPECT_EQ(s0, SPARSEOPT_ERROR_COLLECTIVE);
}

TEST(Bootstrap, TcpChannelNeedsAToken) {
  setenv("MASTER_ADDR", "127.0.0.1", 1);
  setenv("MASTER_PORT", "29500", 1);
  unsetenv("SPARSEOPT_COMM_ID_FILE");
  unsetenv("SPARSEOPT_COMM_PORT");
  unsetenv("SPARSEOPT_COMM_TOKEN");
  IdChannel channel;
  EXPECT_EQ(idChannelFromEnv("test", 2, channel), SPARSEOPT_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(contains(sparseopt_last_error(),
                       "the TCP exchange of the NCCL id needs SPARSEOPT_COMM_TOKEN"));
  setenv("SPARSEOPT_COMM_TOKEN", "abc", 1);
  EXPECT_EQ(idChannelFromEnv("test", 2, channel), SPARSEOPT_OK);
  EXPECT_EQ(channel.token, "abc");
  EXPECT_EQ(channel.port, 29501);
  unsetenv("SPARSEOPT_COMM_TOKEN");
  unsetenv("MASTER_ADDR");
  unsetenv("MASTER_PORT");
}

} // namespace
