// The proc transport's links between processes: each process's segment of shared memory, mapped
// by the processes of its host, and the TCP connections that carry framed pieces between hosts.
#pragma once

#include <cerrno>
#include <compare>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <sys/socket.h>
#include <unistd.h>

#include "impls/proc_transport.h"
#include "impls/world.h"
#include "reference/result.h"

namespace collcheck::proc {

// ---------------------------------------------------------------------------------------------
// The links between processes, set up once per transport: every process's segment (shared
// memory, or a file under /tmp where shm_open fails), mapped by the processes of its host, and
// TCP connections between processes that do not share memory (or all of them, transport=tcp).

struct Key {
  int from = 0, to = 0, channel = 0;
  auto operator<=>(const Key&) const = default;
};

// A TCP frame carries one piece of a message. `epoch` counts cases, so that a frame of a case
// that ended in an error, still on the wire when the next case begins, is recognised and dropped.
struct FrameHeader {
  std::uint32_t epoch;
  std::int32_t from, to, channel;
  std::uint64_t sequence;
  std::uint64_t bytes;
};
static_assert(sizeof(FrameHeader) == 32);

constexpr std::size_t kTcpWindow = std::size_t{4} << 20;  // bytes queued per socket, at most

struct Connection {
  int fd = -1;
  int peer = -1;
  std::vector<std::byte> out;  // whole frames; the socket takes them as it can
  std::size_t out_sent = 0;
  FrameHeader header{};
  std::size_t header_got = 0;
  std::vector<std::byte> payload;
  std::size_t payload_got = 0;
};

struct Piece {
  std::uint64_t sequence;
  std::vector<std::byte> data;
};

struct Peers {
  std::vector<std::string> hosts;       // per rank
  std::vector<std::byte*> segments;     // per rank: its segment, where this process mapped it
  std::vector<Connection> connections;  // per rank; fd -1: none
};

constexpr std::size_t kSegmentBytes = std::size_t{16} << 20;

// `what` followed by errno's words.
std::string system_error(const std::string& what);

// Collective: creates this process's segment, maps those of its host, and connects to the
// processes it needs TCP for. On an error every member returns the same one, holding nothing.
Status connect_peers(World& world, ProcLinks links, Peers& peers);
void close_peers(Peers& peers);

// Reads what the socket has without blocking and hands every whole frame to `deliver`; true
// when anything moved. An error (a closed socket, a frame over one slot) is set in `error`.
template <typename Deliver>
bool read_frames(Connection& c, std::vector<std::vector<std::byte>>& spare, std::string& error, Deliver deliver) {
  bool progressed = false;
  for (;;) {
    const bool in_header = c.header_got < sizeof c.header;
    char* at = in_header ? reinterpret_cast<char*>(&c.header) + c.header_got
                         : reinterpret_cast<char*>(c.payload.data()) + c.payload_got;
    const std::size_t want = in_header ? sizeof c.header - c.header_got : c.header.bytes - c.payload_got;
    ssize_t n = 0;
    if (want > 0) {
      n = ::recv(c.fd, at, want, MSG_DONTWAIT);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return progressed;
      if (n <= 0) {
        error = n == 0 ? "rank " + std::to_string(c.peer) + " closed its connection" : system_error("reading from rank " + std::to_string(c.peer));
        ::close(c.fd);
        c.fd = -1;
        return progressed;
      }
      progressed = true;
    }
    if (in_header) {
      c.header_got += static_cast<std::size_t>(n);
      if (c.header_got < sizeof c.header) continue;
      if (c.header.bytes > kProcSlotBytes) {
        error = "a frame of " + std::to_string(c.header.bytes) + " bytes from rank " + std::to_string(c.peer);
        return progressed;
      }
      if (spare.empty()) spare.emplace_back();
      c.payload = std::move(spare.back());
      spare.pop_back();
      c.payload.resize(c.header.bytes);
      c.payload_got = 0;
    } else {
      c.payload_got += static_cast<std::size_t>(n);
    }
    if (c.header_got == sizeof c.header && c.payload_got == c.header.bytes) {
      deliver(c.header, std::move(c.payload));
      c.header_got = 0;
      c.payload = {};
    }
  }
}

// Sends what the socket takes of the connection's queued frames; true when anything moved.
bool write_some(Connection& c, std::string& error);
// Queues one frame: its header, then `header.bytes` of `data`.
void append_frame(Connection& c, const FrameHeader& header, const std::byte* data);

}  // namespace collcheck::proc
