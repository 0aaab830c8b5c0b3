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
#include <sys/uio.h>
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

int milliseconds_until(SteadyTime deadline) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
  return static_cast<int>(std::max<long long>(0, std::min<long long>(left.count(), 1 << 30)));
}

std::uint64_t header_field(std::span<const std::byte> b, std::size_t at, std::size_t width) {
  std::uint64_t v = 0;
  for (std::size_t i = 0; i < width; ++i) v |= static_cast<std::uint64_t>(b[at + i]) << (8 * i);
  return v;
}

}  // namespace

ControlSocket::ControlSocket(ControlSocket&& other) noexcept
    : fd_(other.fd_), header_(other.header_), payload_(std::move(other.payload_)), read_(other.read_) {
  other.fd_ = -1;
}

ControlSocket& ControlSocket::operator=(ControlSocket&& other) noexcept {
  if (this != &other) {
    close();
    fd_ = other.fd_;
    header_ = other.header_;
    payload_ = std::move(other.payload_);
    read_ = other.read_;
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

// The header and the payload go out together from where they lie (the payload is not copied).
Status ControlSocket::send(FrameKind kind, std::span<const std::byte> payload) {
  std::array<std::byte, kHeaderBytes> header{};
  const auto k = static_cast<std::uint32_t>(kind);
  for (std::size_t i = 0; i < 4; ++i) header[i] = static_cast<std::byte>(k >> (8 * i));
  for (std::size_t i = 0; i < 8; ++i)
    header[4 + i] = static_cast<std::byte>(static_cast<std::uint64_t>(payload.size()) >> (8 * i));
  const std::size_t total = header.size() + payload.size();
  std::size_t sent = 0;
  while (sent < total) {
    iovec parts[2];
    int count = 0;
    if (sent < header.size()) parts[count++] = iovec{header.data() + sent, header.size() - sent};
    const std::size_t into_payload = sent > header.size() ? sent - header.size() : 0;
    if (into_payload < payload.size()) {
      parts[count++] = iovec{const_cast<std::byte*>(payload.data()) + into_payload, payload.size() - into_payload};
    }
    msghdr message{};
    message.msg_iov = parts;
    message.msg_iovlen = static_cast<std::size_t>(count);
    const ssize_t n = ::sendmsg(fd_, &message, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return Error{"control", std::string("send: ") + std::strerror(errno)};
    sent += static_cast<std::size_t>(n);
  }
  return Ok{};
}

// The header first; once its length is known the payload's storage is made at its size and read
// into, then handed over whole.
Result<bool> ControlSocket::receive_some(Frame& into) {
  // Far above any result a run hands back: a longer length is a corrupt header, not a frame.
  constexpr std::uint64_t kLongestPayload = std::uint64_t{1} << 42;
  for (;;) {
    const bool in_header = read_ < header_.size();
    std::byte* at = in_header ? header_.data() + read_ : payload_.data() + (read_ - header_.size());
    const std::size_t want = in_header ? header_.size() - read_ : header_.size() + payload_.size() - read_;
    if (want == 0) break;
    const ssize_t n = ::recv(fd_, at, want, MSG_DONTWAIT);
    if (n == 0) return Error{"control", "closed"};
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) return false;
      return Error{"control", std::string("closed: ") + std::strerror(errno)};
    }
    read_ += static_cast<std::size_t>(n);
    if (read_ != header_.size()) continue;
    const std::uint64_t length = header_field(header_, 4, 8);  // the header is whole: the payload's turn
    if (length > kLongestPayload) {
      return Error{"control", "closed: a frame header announcing " + std::to_string(length) + " bytes"};
    }
    payload_.resize(static_cast<std::size_t>(length));
  }
  into.kind = static_cast<FrameKind>(header_field(header_, 0, 4));
  into.payload = std::move(payload_);
  payload_ = {};
  read_ = 0;
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
