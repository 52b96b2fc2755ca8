//===- Bootstrap.cpp - Handing rank 0's NCCL unique id to the others ------===//
//
// A torchrun-style job gives every process RANK and WORLD_SIZE but no NCCL
// key; rank 0 makes one and the others must receive it before any of them
// can join. Two channels, both bounded by the caller's deadline:
//   - a file (SPARSEOPT_COMM_ID_FILE) on storage every rank sees: rank 0
//     writes <file>.tmp<pid> and renames it, so readers never see half a key;
//   - TCP: rank 0 listens on MASTER_ADDR at SPARSEOPT_COMM_PORT (else
//     MASTER_PORT + 1, next to torchrun's own store) and answers every
//     connection with the 128 key bytes; the others retry until it listens.
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

/// Rank 0: listens on `port` and sends the id to worldSize - 1 connections.
Status serveId(const char *api, int port, int worldSize, const ncclUniqueId &id,
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
      peer.fd = ::accept4(listener.fd, nullptr, nullptr, SOCK_CLOEXEC);
      if (peer.fd >= 0) {
        size_t sent = 0;
        while (sent < kIdBytes) {
          ssize_t n = ::send(peer.fd, id.internal + sent, kIdBytes - sent,
                             MSG_NOSIGNAL);
          if (n <= 0)
            break;
          sent += size_t(n);
        }
        if (sent == kIdBytes)
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
               ncclUniqueId &id, Clock::time_point deadline) {
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
      size_t got = 0;
      while (got < kIdBytes && Clock::now() < deadline) {
        pollfd p{fd.fd, POLLIN, 0};
        if (::poll(&p, 1, std::min(remainingMs(deadline), 100)) <= 0)
          continue;
        ssize_t n = ::recv(fd.fd, id.internal + got, kIdBytes - got, 0);
        if (n <= 0)
          break;
        got += size_t(n);
      }
      if (got == kIdBytes) {
        ::freeaddrinfo(info);
        return SPARSEOPT_OK;
      }
      why = "the connection closed before the whole id arrived";
    }
    ::freeaddrinfo(info);
    if (Clock::now() >= deadline)
      return fail(SPARSEOPT_ERROR_COLLECTIVE, api,
                  "timed out fetching the NCCL id from rank 0 at " + host +
                      ":" + std::to_string(port) + " (last error: " + why +
                      ")");
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
  out.host = host;
  out.port = int(port);
  return SPARSEOPT_OK;
}

Status exchangeUniqueId(const char *api, const IdChannel &channel, int rank,
                        int worldSize, ncclUniqueId &id,
                        Clock::time_point deadline) {
  if (!channel.file.empty())
    return rank == 0 ? writeIdFile(api, channel.file, id)
                     : readIdFile(api, channel.file, id, deadline);
  return rank == 0 ? serveId(api, channel.port, worldSize, id, deadline)
                   : fetchId(api, channel.host, channel.port, id, deadline);
}

} // namespace sparseopt
