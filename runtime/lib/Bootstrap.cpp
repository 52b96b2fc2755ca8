//===- Bootstrap.cpp - Handing rank 0's NCCL unique id to the others ------===//
//
// A torchrun-style job gives every process RANK and WORLD_SIZE but no NCCL
// key; rank 0 makes one and the others must receive it before any of them
// can join. Two channels, both bounded by the caller's deadline:
//   - a file (SPARSEOPT_COMM_ID_FILE) on storage every rank sees: rank 0
//     writes <file>.tmp<pid> and renames it, so readers never see half a key;
//   - TCP: rank 0 listens on MASTER_ADDR at SPARSEOPT_COMM_PORT (else
//     MASTER_PORT + 1, next to torchrun's own store); the others retry until
//     it listens, then send "SOPT", the token's length (2 bytes, network
//     order) and SPARSEOPT_COMM_TOKEN, the secret all ranks share. Rank 0
//     answers a connection that shows the token with the 128 key bytes; one
//     that does not (a stranger, a port scan, a wrong token) gets nothing,
//     does not count as a rank and is logged on stderr.
//
//===----------------------------------------------------------------------===//

#include "Comm.h"

#include <arpa/inet.h>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <thread>
#include <unistd.h>

namespace sparseopt {
namespace {

constexpr size_t kIdBytes = sizeof(ncclUniqueId::internal);

int remainingMs(Clock::time_point deadline) {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
      deadline - Clock::now());
  return left.count() <= 0 ? 0 : int(std::min<long long>(left.count(), 1 << 30));
}

std::string errnoText() { return std::strerror(errno); }

/// Closes a file descriptor when it goes out of scope.
struct Fd {
  int fd = -1;
  ~Fd() {
    if (fd >= 0)
      ::close(fd);
  }
};

Status writeIdFile(const char *api, const std::string &path,
                   const ncclUniqueId &id) {
  std::string temp = path + ".tmp" + std::to_string(::getpid());
  FILE *f = std::fopen(temp.c_str(), "wb");
  if (f == nullptr)
    return fail(SPARSEOPT_ERROR_COLLECTIVE, api,
                "cannot write the NCCL id file " + temp + ": " + errnoText());
  bool ok = std::fwrite(id.internal, 1, kIdBytes, f) == kIdBytes;
  ok = (std::fclose(f) == 0) && ok;
  if (!ok || std::rename(temp.c_str(), path.c_str()) != 0) {
    std::string why = errnoText();
    std::remove(temp.c_str());
    return fail(SPARSEOPT_ERROR_COLLECTIVE, api,
                "cannot write the NCCL id file " + path + ": " + why);
  }
  return SPARSEOPT_OK;
}

Status readIdFile(const char *api, const std::string &path, ncclUniqueId &id,
                  Clock::time_point deadline) {
  while (true) {
    FILE *f = std::fopen(path.c_str(), "rb");
    if (f != nullptr) {
      size_t got = std::fread(id.internal, 1, kIdBytes, f);
      std::fclose(f);
      if (got == kIdBytes)
        return SPARSEOPT_OK;
    }
    if (Clock::now() >= deadline)
      return fail(SPARSEOPT_ERROR_COLLECTIVE, api,
                  "timed out waiting for rank 0 to write the NCCL id file " +
                      path + " (SPARSEOPT_COMM_ID_FILE)");
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

/// Resolves MASTER_ADDR:port (IPv4 or IPv6) for listening or connecting.
Status resolveAddress(const char *api, const std::string &host, int port,
                      bool passive, addrinfo **out) {
  addrinfo hints;
  std::memset(&hints, 0, sizeof(hints));
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = passive ? AI_PASSIVE : 0;
  std::string service = std::to_string(port);
  int rc = ::getaddrinfo(passive ? nullptr : host.c_str(), service.c_str(),
                         &hints, out);
  if (rc != 0)
    return fail(SPARSEOPT_ERROR_COLLECTIVE, api,
                "cannot resolve MASTER_ADDR '" + host + "': " +
                    ::gai_strerror(rc));
  return SPARSEOPT_OK;
}

constexpr char kMagic[4] = {'S', 'O', 'P', 'T'};
constexpr size_t kMaxToken = 1024;
/// How long rank 0 waits for a connection to show the token.
constexpr int kHelloMs = 2000;

/// Reads exactly `n` bytes from `fd` before `deadline`.
bool readExactly(int fd, char *out, size_t n, Clock::time_point deadline) {
  size_t got = 0;
  while (got < n) {
    int wait = remainingMs(deadline);
    if (wait <= 0)
      return false;
    pollfd p{fd, POLLIN, 0};
    int ready = ::poll(&p, 1, std::min(wait, 100));
    if (ready < 0 && errno != EINTR)
      return false;
    if (ready <= 0)
      continue;
    ssize_t r = ::recv(fd, out + got, n - got, 0);
    if (r <= 0)
      return false;
    got += size_t(r);
  }
  return true;
}

bool sendAll(int fd, const char *data, size_t n) {
  size_t sent = 0;
  while (sent < n) {
    ssize_t r = ::send(fd, data + sent, n - sent, MSG_NOSIGNAL);
    if (r <= 0)
      return false;
    sent += size_t(r);
  }
  return true;
}

/// Whether the peer on `fd` shows `token` (compared in constant time).
bool showsToken(int fd, const std::string &token, Clock::time_point deadline,
                std::string &why) {
  char head[6];
  if (!readExactly(fd, head, sizeof(head), deadline)) {
    why = "no greeting";
    return false;
  }
  if (std::memcmp(head, kMagic, sizeof(kMagic)) != 0) {
    why = "not a SparseOpt rank (no SOPT greeting)";
    return false;
  }
  size_t length = (size_t(uint8_t(head[4])) << 8) | uint8_t(head[5]);
  if (length > kMaxToken) {
    why = "a token longer than " + std::to_string(kMaxToken) + " bytes";
    return false;
  }
  std::string shown(length, '\0');
  if (!readExactly(fd, shown.data(), length, deadline)) {
    why = "the token did not arrive";
    return false;
  }
  unsigned char diff = length != token.size();
  for (size_t i = 0; i < length; ++i)
    diff |= uint8_t(shown[i]) ^ uint8_t(token[i % std::max<size_t>(1, token.size())]);
  if (diff) {
    why = "a wrong SPARSEOPT_COMM_TOKEN";
    return false;
  }
  return true;
}

std::string peerName(const sockaddr_storage &addr) {
  char host[INET6_ADDRSTRLEN] = "?";
  int port = 0;
  if (addr.ss_family == AF_INET) {
    auto *a = reinterpret_cast<const sockaddr_in *>(&addr);
    ::inet_ntop(AF_INET, &a->sin_addr, host, sizeof(host));
    port = ntohs(a->sin_port);
  } else if (addr.ss_family == AF_INET6) {
    auto *a = reinterpret_cast<const sockaddr_in6 *>(&addr);
    ::inet_ntop(AF_INET6, &a->sin6_addr, host, sizeof(host));
    port = ntohs(a->sin6_port);
  }
  return std::string(host) + ":" + std::to_string(port);
}

/// Rank 0: listens on `port` and sends the id to worldSize - 1 connections.
Status serveId(const char *api, int port, const std::string &token,
               int worldSize, const ncclUniqueId &id,
               Clock::time_point deadline) {
  addrinfo *info = nullptr;
  if (Status s = resolveAddress(api, "", port, true, &info))
    return s;
  Fd listener;
  std::string why = "no address to listen on";
  for (addrinfo *a = info; a != nullptr && listener.fd < 0; a = a->ai_next) {
    int fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) {
      why = errnoText();
      continue;
    }
    int one = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (::bind(fd, a->ai_addr, a->ai_addrlen) == 0 && ::listen(fd, 64) == 0) {
      listener.fd = fd;
      break;
    }
    why = errnoText();
    ::close(fd);
  }
  ::freeaddrinfo(info);
  if (listener.fd < 0)
    return fail(SPARSEOPT_ERROR_COLLECTIVE, api,
                "rank 0 cannot listen on port " + std::to_string(port) +
                    " for the NCCL id exchange: " + why);
  for (int served = 1; served < worldSize;) {
    pollfd p{listener.fd, POLLIN, 0};
    int ready = ::poll(&p, 1, std::min(remainingMs(deadline), 100));
    if (ready < 0 && errno != EINTR)
      return fail(SPARSEOPT_ERROR_COLLECTIVE, api,
                  "poll on the NCCL id port failed: " + errnoText());
    if (ready > 0) {
      Fd peer;
      sockaddr_storage from{};
      socklen_t fromLength = sizeof(from);
      peer.fd = ::accept4(listener.fd, reinterpret_cast<sockaddr *>(&from),
                          &fromLength, SOCK_CLOEXEC);
      if (peer.fd >= 0) {
        std::string why;
        Clock::time_point hello = std::min(
            deadline, Clock::now() + std::chrono::milliseconds(kHelloMs));
        if (!showsToken(peer.fd, token, hello, why))
          std::fprintf(stderr,
                       "sparseopt: rank 0 ignored a connection from %s on "
                       "the NCCL id port %d: %s\n",
                       peerName(from).c_str(), port, why.c_str());
        else if (sendAll(peer.fd, id.internal, kIdBytes))
          ++served;
      }
    }
    if (served < worldSize && Clock::now() >= deadline)
      return fail(SPARSEOPT_ERROR_COLLECTIVE, api,
                  "timed out on port " + std::to_string(port) +
                      " after " + std::to_string(served - 1) + " of " +
                      std::to_string(worldSize - 1) +
                      " ranks received the NCCL id");
  }
  return SPARSEOPT_OK;
}

/// Ranks > 0: connects to rank 0 (retrying until it listens) and reads the id.
Status fetchId(const char *api, const std::string &host, int port,
               const std::string &token, ncclUniqueId &id,
               Clock::time_point deadline) {
  std::string hello(kMagic, sizeof(kMagic));
  hello += char((token.size() >> 8) & 0xff);
  hello += char(token.size() & 0xff);
  hello += token;
  std::string rejected;
  std::string why;
  while (true) {
    addrinfo *info = nullptr;
    if (Status s = resolveAddress(api, host, port, false, &info))
      return s;
    for (addrinfo *a = info; a != nullptr; a = a->ai_next) {
      Fd fd;
      fd.fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC,
                       a->ai_protocol);
      if (fd.fd < 0 || ::connect(fd.fd, a->ai_addr, a->ai_addrlen) != 0) {
        why = errnoText();
        continue;
      }
      if (!sendAll(fd.fd, hello.data(), hello.size())) {
        why = "sending the token failed: " + errnoText();
        continue;
      }
      size_t got = 0;
      bool closed = false;
      while (got < kIdBytes && Clock::now() < deadline) {
        pollfd p{fd.fd, POLLIN, 0};
        if (::poll(&p, 1, std::min(remainingMs(deadline), 100)) <= 0)
          continue;
        ssize_t n = ::recv(fd.fd, id.internal + got, kIdBytes - got, 0);
        if (n <= 0) {
          closed = true;
          break;
        }
        got += size_t(n);
      }
      if (got == kIdBytes) {
        ::freeaddrinfo(info);
        return SPARSEOPT_OK;
      }
      why = "the connection closed before the whole id arrived";
      if (closed && got == 0)
        rejected = "; rank 0 closed a connection without sending the id, as "
                   "it does on a wrong SPARSEOPT_COMM_TOKEN";
    }
    ::freeaddrinfo(info);
    if (Clock::now() >= deadline)
      return fail(SPARSEOPT_ERROR_COLLECTIVE, api,
                  "timed out fetching the NCCL id from rank 0 at " + host +
                      ":" + std::to_string(port) + " (last error: " + why +
                      ")" + rejected);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

} // namespace

Status idChannelFromEnv(const char *api, int worldSize, IdChannel &out) {
  out = IdChannel();
  const char *file = std::getenv("SPARSEOPT_COMM_ID_FILE");
  if (file != nullptr && *file != '\0') {
    out.file = file;
    return SPARSEOPT_OK;
  }
  const char *host = std::getenv("MASTER_ADDR");
  const char *portText = std::getenv("SPARSEOPT_COMM_PORT");
  int offset = 0;
  if (portText == nullptr || *portText == '\0') {
    portText = std::getenv("MASTER_PORT");
    offset = 1;
  }
  if (host == nullptr || *host == '\0' || portText == nullptr ||
      *portText == '\0')
    return fail(SPARSEOPT_ERROR_INVALID_ARGUMENT, api,
                "WORLD_SIZE=" + std::to_string(worldSize) +
                    " needs a way to share rank 0's NCCL id: set "
                    "SPARSEOPT_COMM_ID_FILE to a path all ranks see, or "
                    "MASTER_ADDR and MASTER_PORT (or SPARSEOPT_COMM_PORT)");
  char *end = nullptr;
  long port = std::strtol(portText, &end, 10) + offset;
  if (end == portText || *end != '\0' || port <= 0 || port > 65535)
    return fail(SPARSEOPT_ERROR_INVALID_ARGUMENT, api,
                std::string(offset ? "MASTER_PORT" : "SPARSEOPT_COMM_PORT") +
                    "='" + portText + "' does not give a TCP port");
  const char *token = std::getenv("SPARSEOPT_COMM_TOKEN");
  if (token == nullptr || *token == '\0' || std::strlen(token) > kMaxToken)
    return fail(SPARSEOPT_ERROR_INVALID_ARGUMENT, api,
                "the TCP exchange of the NCCL id needs SPARSEOPT_COMM_TOKEN: "
                "the same secret (1 to " + std::to_string(kMaxToken) +
                    " bytes) in every rank's environment, e.g. export "
                    "SPARSEOPT_COMM_TOKEN=$(head -c 16 /dev/urandom | xxd -p) "
                    "before launching (or use SPARSEOPT_COMM_ID_FILE)");
  out.host = host;
  out.port = int(port);
  out.token = token;
  return SPARSEOPT_OK;
}

Status exchangeUniqueId(const char *api, const IdChannel &channel, int rank,
                        int worldSize, ncclUniqueId &id,
                        Clock::time_point deadline) {
  if (!channel.file.empty())
    return rank == 0 ? writeIdFile(api, channel.file, id)
                     : readIdFile(api, channel.file, id, deadline);
  return rank == 0 ? serveId(api, channel.port, channel.token, worldSize, id,
                             deadline)
                   : fetchId(api, channel.host, channel.port, channel.token,
                             id, deadline);
}

} // namespace sparseopt
