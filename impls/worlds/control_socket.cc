// Framed TCP for the control channel: a 4-byte kind and an 8-byte length before each payload;
// poll() for deadlines; MSG_NOSIGNAL so a vanished peer is an error, never SIGPIPE.
#include "impls/worlds/control_socket.h"

#include <algorithm>
#include <cerrno>
#include <cstring>

#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "reference/numbers.h"

namespace collcheck {

SteadyTime seconds_from_now(double seconds) { return clock_after(std::chrono::steady_clock::now(), seconds); }

std::string this_host_name() {
  char name[256] = {};
  ::gethostname(name, sizeof name - 1);
  return name;
}

namespace {

constexpr std::size_t kHeader = 12;

int milliseconds_until(SteadyTime deadline) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
  return static_cast<int>(std::max<long long>(0, std::min<long long>(left.count(), 1 << 30)));
}

std::uint64_t header_field(const std::vector<std::byte>& b, std::size_t at, std::size_t width) {
  std::uint64_t v = 0;
  for (std::size_t i = 0; i < width; ++i) v |= static_cast<std::uint64_t>(b[at + i]) << (8 * i);
  return v;
}

}  // namespace

ControlSocket::ControlSocket(ControlSocket&& other) noexcept : fd_(other.fd_), pending_(std::move(other.pending_)) {
  other.fd_ = -1;
}

ControlSocket& ControlSocket::operator=(ControlSocket&& other) noexcept {
  if (this != &other) {
    close();
    fd_ = other.fd_;
    pending_ = std::move(other.pending_);
    other.fd_ = -1;
  }
  return *this;
}

ControlSocket::~ControlSocket() { close(); }

void ControlSocket::close() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

Result<ControlSocket> ControlSocket::connect(const std::string& host, int port, SteadyTime deadline) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  const std::string service = std::to_string(port);
  if (const int rc = ::getaddrinfo(host.c_str(), service.c_str(), &hints, &found); rc != 0) {
    return Error{"--connect", "'" + host + "': " + ::gai_strerror(rc)};
  }
  std::string why = "no address";
  // The launcher listens before it starts mpirun, so an address that refuses means it is gone
  // (interrupted, killed): give up at once rather than outlive it.
  do {
    int tried = 0, refusals = 0;
    for (addrinfo* a = found; a != nullptr; a = a->ai_next) {
      const int fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
      if (fd < 0) continue;
      if (::connect(fd, a->ai_addr, a->ai_addrlen) == 0) {
        const int one = 1;
        ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        ::freeaddrinfo(found);
        return ControlSocket(fd);
      }
      why = std::strerror(errno);
      ++tried;
      refusals += errno == ECONNREFUSED ? 1 : 0;
      ::close(fd);
    }
    if (tried > 0 && refusals == tried) break;
    ::usleep(50000);
  } while (std::chrono::steady_clock::now() < deadline);
  ::freeaddrinfo(found);
  return Error{"--connect", host + ":" + service + ": " + why};
}

Status ControlSocket::send(FrameKind kind, std::span<const std::byte> payload) {
  std::vector<std::byte> frame(kHeader + payload.size());
  const auto k = static_cast<std::uint32_t>(kind);
  for (std::size_t i = 0; i < 4; ++i) frame[i] = static_cast<std::byte>(k >> (8 * i));
  for (std::size_t i = 0; i < 8; ++i)
    frame[4 + i] = static_cast<std::byte>(static_cast<std::uint64_t>(payload.size()) >> (8 * i));
  if (!payload.empty()) std::memcpy(frame.data() + kHeader, payload.data(), payload.size());
  std::size_t sent = 0;
  while (sent < frame.size()) {
    const ssize_t n = ::send(fd_, frame.data() + sent, frame.size() - sent, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return Error{"control", std::string("send: ") + std::strerror(errno)};
    sent += static_cast<std::size_t>(n);
  }
  return Ok{};
}

Result<bool> ControlSocket::receive_some(Frame& into) {
  std::byte buffer[1 << 16];
  for (;;) {
    const std::size_t want = pending_.size() < kHeader ? kHeader - pending_.size()
                                                       : kHeader + header_field(pending_, 4, 8) - pending_.size();
    if (want == 0) break;
    const ssize_t n = ::recv(fd_, buffer, std::min(want, sizeof buffer), MSG_DONTWAIT);
    if (n == 0) return Error{"control", "closed"};
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) return false;
      return Error{"control", std::string("closed: ") + std::strerror(errno)};
    }
    pending_.insert(pending_.end(), buffer, buffer + n);
  }
  into.kind = static_cast<FrameKind>(header_field(pending_, 0, 4));
  into.payload.assign(pending_.begin() + kHeader, pending_.end());
  pending_.clear();
  return true;
}

Result<Frame> ControlSocket::receive(SteadyTime deadline) {
  Frame frame;
  for (;;) {
    Result<bool> done = receive_some(frame);
    if (!done) return done.error();
    if (*done) return frame;
    pollfd p{fd_, POLLIN, 0};
    const int ready = ::poll(&p, 1, milliseconds_until(deadline));
    if (ready == 0) return Error{"control", "timeout"};
    if (ready < 0 && errno != EINTR) return Error{"control", std::string("poll: ") + std::strerror(errno)};
  }
}

Listener::Listener(Listener&& other) noexcept : fd_(other.fd_), port_(other.port_) { other.fd_ = -1; }

Listener& Listener::operator=(Listener&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = other.fd_;
    port_ = other.port_;
    other.fd_ = -1;
  }
  return *this;
}

Listener::~Listener() {
  if (fd_ >= 0) ::close(fd_);
}

Result<Listener> Listener::open() {
  Listener l;
  l.fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (l.fd_ < 0) return Error{"control", std::string("socket: ") + std::strerror(errno)};
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_ANY);
  address.sin_port = 0;
  socklen_t length = sizeof address;
  if (::bind(l.fd_, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0 || ::listen(l.fd_, 256) != 0 ||
      ::getsockname(l.fd_, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
    return Error{"control", std::string("listen: ") + std::strerror(errno)};
  }
  l.port_ = ntohs(address.sin_port);
  return l;
}

Result<ControlSocket> Listener::accept(SteadyTime deadline) {
  pollfd p{fd_, POLLIN, 0};
  for (;;) {
    const int ready = ::poll(&p, 1, milliseconds_until(deadline));
    if (ready == 0) return Error{"control", "timeout"};
    if (ready < 0 && errno == EINTR) continue;
    const int fd = ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) return Error{"control", std::string("accept: ") + std::strerror(errno)};
    const int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    return ControlSocket(fd);
  }
}

}  // namespace collcheck
