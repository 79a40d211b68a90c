//===- Bootstrap.cpp - A byte blob from rank 0 to every rank over TCP -----===//
//
// Rank 0 listens; every other rank connects (retrying until the deadline),
// says who it is, receives the blob and acknowledges it. Every wait is
// bounded by the same deadline, so a missing rank ends in an error naming
// how many ranks arrived, never in a hang.
//
//===----------------------------------------------------------------------===//

#include "RuntimeInternal.h"
#include "tessera-runtime/Comm.h"

#include <arpa/inet.h>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <memory>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <thread>
#include <unistd.h>
#include <utility>
#include <vector>

using namespace tsr;

namespace {

constexpr uint32_t kMagic = 0x54535242; // "TSRB"

using Clock = std::chrono::steady_clock;

struct Socket {
  int fd = -1;
  explicit Socket(int fd = -1) : fd(fd) {}
  Socket(Socket &&other) noexcept : fd(other.fd) { other.fd = -1; }
  Socket(const Socket &) = delete;
  Socket &operator=(const Socket &) = delete;
  Socket &operator=(Socket &&other) noexcept {
    std::swap(fd, other.fd);
    return *this;
  }
  ~Socket() {
    if (fd >= 0)
      ::close(fd);
  }
};

int millisecondsLeft(Clock::time_point deadline) {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                  deadline - Clock::now())
                  .count();
  return left < 0 ? 0 : static_cast<int>(left);
}

/// Waits until `fd` is ready for `events`; false on timeout.
bool waitFor(int fd, short events, Clock::time_point deadline) {
  for (;;) {
    struct pollfd entry = {fd, events, 0};
    int ready = ::poll(&entry, 1, millisecondsLeft(deadline));
    if (ready > 0)
      return true;
    if (ready == 0 || errno != EINTR)
      return false;
  }
}

tsr_status_t ioFail(const std::string &what) {
  return fail(TSR_ERROR_IO, "tcp bootstrap: " + what);
}

tsr_status_t sendAll(int fd, const void *data, size_t size,
                     Clock::time_point deadline, const std::string &what) {
  const char *bytes = static_cast<const char *>(data);
  while (size > 0) {
    if (!waitFor(fd, POLLOUT, deadline))
      return ioFail("timed out sending " + what);
    ssize_t n = ::send(fd, bytes, size, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return ioFail("sending " + what + ": " + std::strerror(errno));
    bytes += n;
    size -= static_cast<size_t>(n);
  }
  return TSR_OK;
}

tsr_status_t receiveAll(int fd, void *data, size_t size,
                        Clock::time_point deadline, const std::string &what) {
  char *bytes = static_cast<char *>(data);
  while (size > 0) {
    if (!waitFor(fd, POLLIN, deadline))
      return ioFail("timed out receiving " + what);
    ssize_t n = ::recv(fd, bytes, size, 0);
    if (n < 0 && errno == EINTR)
      continue;
    if (n == 0)
      return ioFail("connection closed while receiving " + what);
    if (n < 0)
      return ioFail("receiving " + what + ": " + std::strerror(errno));
    bytes += n;
    size -= static_cast<size_t>(n);
  }
  return TSR_OK;
}

struct Hello {
  uint32_t magic;
  uint32_t rank;
  uint64_t size;
};

tsr_status_t serve(int port, int worldSize, const void *bytes, size_t size,
                   Clock::time_point deadline) {
  Socket listener(::socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0));
  bool v6 = listener.fd >= 0;
  if (!v6)
    listener.fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (listener.fd < 0)
    return ioFail(std::string("socket: ") + std::strerror(errno));
  int one = 1, zero = 0;
  ::setsockopt(listener.fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  int bound;
  if (v6) {
    ::setsockopt(listener.fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero));
    struct sockaddr_in6 address = {};
    address.sin6_family = AF_INET6;
    address.sin6_addr = in6addr_any;
    address.sin6_port = htons(static_cast<uint16_t>(port));
    bound = ::bind(listener.fd, reinterpret_cast<sockaddr *>(&address),
                   sizeof(address));
  } else {
    struct sockaddr_in address = {};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_ANY);
    address.sin_port = htons(static_cast<uint16_t>(port));
    bound = ::bind(listener.fd, reinterpret_cast<sockaddr *>(&address),
                   sizeof(address));
  }
  if (bound != 0)
    return ioFail("cannot listen on port " + std::to_string(port) + ": " +
                  std::strerror(errno));
  if (::listen(listener.fd, worldSize) != 0)
    return ioFail(std::string("listen: ") + std::strerror(errno));

  std::vector<Socket> peers(worldSize);
  for (int arrived = 1; arrived < worldSize;) {
    if (!waitFor(listener.fd, POLLIN, deadline))
      return ioFail("timed out with " + std::to_string(arrived) + " of " +
                    std::to_string(worldSize) + " ranks connected on port " +
                    std::to_string(port));
    Socket peer(::accept4(listener.fd, nullptr, nullptr, SOCK_CLOEXEC));
    if (peer.fd < 0) {
      if (errno == EINTR || errno == ECONNABORTED)
        continue;
      return ioFail(std::string("accept: ") + std::strerror(errno));
    }
    Hello hello;
    if (tsr_status_t s =
            receiveAll(peer.fd, &hello, sizeof(hello), deadline, "a hello"))
      return s;
    if (hello.magic != kMagic)
      return ioFail("a connection on port " + std::to_string(port) +
                    " is not a tessera rank");
    if (hello.rank == 0 || hello.rank >= static_cast<uint32_t>(worldSize) ||
        peers[hello.rank].fd >= 0)
      return ioFail("unexpected or duplicate rank " +
                    std::to_string(hello.rank) + " (world size " +
                    std::to_string(worldSize) + ")");
    if (hello.size != size)
      return ioFail("rank " + std::to_string(hello.rank) + " expects " +
                    std::to_string(hello.size) + " bytes, rank 0 has " +
                    std::to_string(size));
    peers[hello.rank] = std::move(peer);
    ++arrived;
  }
  for (int r = 1; r < worldSize; ++r)
    if (tsr_status_t s = sendAll(peers[r].fd, bytes, size, deadline,
                                 "the blob to rank " + std::to_string(r)))
      return s;
  for (int r = 1; r < worldSize; ++r) {
    char ack;
    if (tsr_status_t s = receiveAll(peers[r].fd, &ack, 1, deadline,
                                    "the ack of rank " + std::to_string(r)))
      return s;
  }
  return TSR_OK;
}

tsr_status_t join(const char *host, int port, int rank, void *bytes,
                  size_t size, Clock::time_point deadline) {
  struct addrinfo hints = {};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  struct addrinfo *found = nullptr;
  std::string service = std::to_string(port);
  int code = ::getaddrinfo(host, service.c_str(), &hints, &found);
  if (code != 0)
    return ioFail(std::string("cannot resolve ") + host + ": " +
                  ::gai_strerror(code));
  std::unique_ptr<addrinfo, void (*)(addrinfo *)> owner(found, ::freeaddrinfo);
  std::string where = std::string(host) + ":" + service;
  std::string lastError = "no address";
  for (;;) {
    for (addrinfo *a = found; a; a = a->ai_next) {
      Socket s(::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC,
                        a->ai_protocol));
      if (s.fd < 0)
        continue;
      if (::connect(s.fd, a->ai_addr, a->ai_addrlen) != 0) {
        lastError = std::strerror(errno);
        continue;
      }
      int one = 1;
      ::setsockopt(s.fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
      Hello hello = {kMagic, static_cast<uint32_t>(rank), size};
      if (tsr_status_t st =
              sendAll(s.fd, &hello, sizeof(hello), deadline, "the hello"))
        return st;
      if (tsr_status_t st =
              receiveAll(s.fd, bytes, size, deadline, "the blob from rank 0"))
        return st;
      char ack = 1;
      return sendAll(s.fd, &ack, 1, deadline, "the ack");
    }
    if (millisecondsLeft(deadline) == 0)
      return ioFail("cannot connect to rank 0 at " + where + ": " + lastError);
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

} // namespace

tsr_status_t tsr_bootstrap_tcp_broadcast(const char *address, int port,
                                         int rank, int world_size, void *bytes,
                                         size_t size, double timeout_seconds) {
  return guard([&]() -> tsr_status_t {
    if (world_size < 1 || rank < 0 || rank >= world_size)
      return fail(TSR_ERROR_INVALID_ARGUMENT,
                  "tcp bootstrap: rank " + std::to_string(rank) +
                      " of world size " + std::to_string(world_size));
    if (size > 0 && !bytes)
      return fail(TSR_ERROR_INVALID_ARGUMENT, "tcp bootstrap: null bytes");
    // One rank has nobody to talk to: no port is needed (a single-GPU NCCL
    // world sets no MASTER_PORT).
    if (world_size == 1)
      return TSR_OK;
    if (port <= 0 || port > 65535)
      return fail(TSR_ERROR_INVALID_ARGUMENT,
                  "tcp bootstrap: port " + std::to_string(port));
    auto deadline =
        Clock::now() +
        std::chrono::milliseconds(static_cast<int64_t>(timeout_seconds * 1000));
    if (rank == 0)
      return serve(port, world_size, bytes, size, deadline);
    if (!address || !*address)
      return fail(TSR_ERROR_INVALID_ARGUMENT,
                  "tcp bootstrap: no address of rank 0");
    return join(address, port, rank, bytes, size, deadline);
  });
}
