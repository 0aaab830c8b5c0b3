// The proc transport's links between processes: each process's segment of shared memory, mapped
// by the processes of its host, and the TCP connections that carry framed pieces between hosts.
#pragma once

#include <atomic>
#include <cerrno>
#include <compare>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <sys/socket.h>
#include <unistd.h>

#include "impls/backend/world.h"
#include "impls/proc/transport.h"
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

// One piece of a message, as a FIFO slot and a TCP frame both carry it: the message's sequence
// number on its stream, where the piece lies in it, the transmission it belongs to, the
// checksum of the bytes the sender meant to send (0 when checksums are off), and how they were
// stored.
struct PieceHeader {
  std::uint64_t sequence;
  std::uint64_t offset;
  std::uint64_t bytes;
  std::uint64_t checksum;
  std::uint32_t attempt;
  std::uint32_t around_cache;  // shm: the sender stored the bytes around the cache (SlotStores)
};

// What a TCP frame carries besides pieces: the link protocol's control messages. Acks and
// rewinds name the data stream (from = its sender) and travel against it; aborts and dones
// name the rank that sends them in `from`.
enum class FrameKind : std::uint32_t {
  Piece,    // a piece of a message; payload: its bytes
  Ack,      // reliable: the receiver has taken `sequence` messages of the stream
  Rewind,   // reliable: the receiver asks the sender to go back to message `sequence`
  Abort,    // the sender stopped the run; payload: why
  Done,     // the sender finished the case
  Arrived,  // the sender reached phase `sequence` % 4 of case `sequence` / 4's beginning
};

// A TCP frame. `epoch` counts cases, so that a frame of a case that ended in an error, still on
// the wire when the next case begins, is recognised and dropped.
struct FrameHeader {
  std::uint32_t epoch;
  FrameKind kind;
  std::int32_t from, to, channel;
  std::int32_t unused;
  PieceHeader piece;  // piece.bytes: the payload's length
};
static_assert(sizeof(FrameHeader) == 64);

constexpr std::size_t kTcpWindow = std::size_t{4} << 20;  // bytes queued per socket, at most

struct Connection {
  int fd = -1;
  int peer = -1;
  std::vector<std::byte> out;  // whole frames; the socket takes them as it can
  std::size_t out_sent = 0;
  std::uint64_t appended = 0, written = 0;  // bytes ever queued and sent (marks survive erasure)
  FrameHeader header{};
  std::size_t header_got = 0;
  std::vector<std::byte> payload;
  std::size_t payload_got = 0;
};

struct Piece {
  PieceHeader header;
  std::vector<std::byte> data;
};

class RdmaLinks;

struct Peers {
  std::vector<std::string> hosts;       // per rank
  std::vector<std::byte*> segments;     // per rank: its segment, where this process mapped it
  std::vector<Connection> connections;  // per rank; fd -1: none
  std::shared_ptr<RdmaLinks> rdma;      // links `ib`: queue pairs to every other process
};

// A segment: the FIFOs into this process, then its control block.
constexpr std::size_t kSegmentBytes = std::size_t{16} << 20;
constexpr std::size_t kControlBytes = 8192;
constexpr std::size_t kFifoBytes = kSegmentBytes - kControlBytes;
constexpr std::size_t kReasonBytes = 4096;

// How processes on one host stop each other and meet at the end of a case. Any process may
// write `stop` (the case's epoch above the rank that stopped, plus one, below); only the owner
// writes `done` and the reason it stopped, which the others read from its segment.
struct SegmentControl {
  alignas(64) std::atomic<std::uint64_t> stop;
  alignas(64) std::atomic<std::uint64_t> done;          // the last epoch the owner finished
  alignas(64) std::atomic<std::uint64_t> arrived;       // owner: epoch * 4 + phase of begin() reached
  alignas(64) std::atomic<std::uint64_t> reason_epoch;  // the epoch `reason` belongs to
  char reason[kReasonBytes];
};
static_assert(sizeof(SegmentControl) <= kControlBytes);

inline SegmentControl* segment_control(std::byte* segment) {
  return reinterpret_cast<SegmentControl*>(segment + kFifoBytes);
}

// `what` followed by errno's words.
std::string system_error(const std::string& what);

// Collective: creates this process's segment, maps those of its host, and connects to the
// processes it needs TCP for. On an error every member returns the same one, holding nothing.
Status connect_peers(World& world, const ProcLinkOptions& links, Peers& peers);
void close_peers(Peers& peers);

// One read, without blocking, of what the frame in progress still wants (its header, then its
// payload): the bytes read (0 when it wants none), or -1 when the socket has nothing now or is
// closed or failed (then `error` says which, and the connection is closed).
ssize_t read_part(Connection& c, std::string& error);
// Counts `bytes` just read into the frame in progress; at the end of its header, takes the
// payload's buffer from `spare`. False on a frame over one slot (`error` says so).
bool advance_frame(Connection& c, std::vector<std::vector<std::byte>>& spare, std::size_t bytes, std::string& error);

// Reads what the socket has without blocking and hands every whole frame to `deliver`; true
// when anything moved. An error (a closed socket, a frame over one slot) is set in `error`.
template <typename Deliver>
bool read_frames(Connection& c, std::vector<std::vector<std::byte>>& spare, std::string& error, Deliver deliver) {
  bool progressed = false;
  for (;;) {
    const ssize_t n = read_part(c, error);
    if (n < 0) return progressed;
    if (n > 0) progressed = true;
    if (!advance_frame(c, spare, static_cast<std::size_t>(n), error)) return progressed;
    if (c.header_got == sizeof c.header && c.payload_got == c.header.piece.bytes) {
      deliver(c.header, std::move(c.payload));
      c.header_got = 0;
      c.payload = {};
    }
  }
}

// Sends what the socket takes of the connection's queued frames; true when anything moved.
bool write_some(Connection& c, std::string& error);
// Queues one frame: its header, then `header.piece.bytes` of `data`.
void append_frame(Connection& c, const FrameHeader& header, const std::byte* data);

}  // namespace collcheck::proc
