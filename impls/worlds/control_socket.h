// The control channel between a launching process and the workers it started: framed messages
// over TCP, with deadlines on every wait. Not under test: no fault is ever injected here.
#pragma once

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "reference/result.h"

namespace collcheck {

enum class FrameKind : std::uint32_t { Hello = 1, Run = 2, Result = 3, Dying = 4, Quit = 5 };

struct Frame {
  FrameKind kind = FrameKind::Quit;
  std::vector<std::byte> payload;
};

using SteadyTime = std::chrono::steady_clock::time_point;

// `seconds` from now.
SteadyTime seconds_from_now(double seconds);

// This host's name, as a worker tells it in its hello and the launcher compares it with its own.
std::string this_host_name();

class ControlSocket {
 public:
  ControlSocket() = default;
  explicit ControlSocket(int fd) : fd_(fd) {}
  ControlSocket(ControlSocket&&) noexcept;
  ControlSocket& operator=(ControlSocket&&) noexcept;
  ~ControlSocket();

  static Result<ControlSocket> connect(const std::string& host, int port, SteadyTime deadline);

  bool open() const { return fd_ >= 0; }
  int fd() const { return fd_; }
  Status send(FrameKind, std::span<const std::byte>);
  // The next frame; an error "closed" when the peer is gone, "timeout" past the deadline.
  Result<Frame> receive(SteadyTime deadline);
  // Reads whatever of the next frame is available without waiting; true once it is complete.
  Result<bool> receive_some(Frame& into);
  void close();

 private:
  // A frame on the wire: a 4-byte kind and an 8-byte length, then the payload.
  static constexpr std::size_t kHeaderBytes = 12;
  int fd_ = -1;
  // The frame being read: its header, then its payload, read straight into the storage the frame
  // is handed in (no copy of a result of gigabytes, and nothing kept once it is taken); `read_`:
  // its bytes so far, the header's first.
  std::array<std::byte, kHeaderBytes> header_{};
  std::vector<std::byte> payload_;
  std::size_t read_ = 0;
};

class Listener {
 public:
  Listener() = default;
  Listener(Listener&&) noexcept;
  Listener& operator=(Listener&&) noexcept;
  ~Listener();
  static Result<Listener> open();  // every interface, an ephemeral port
  int port() const { return port_; }
  Result<ControlSocket> accept(SteadyTime deadline);

 private:
  int fd_ = -1;
  int port_ = 0;
};

}  // namespace collcheck
