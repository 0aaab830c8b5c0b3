// The proc transport's engine state: the FIFOs in the segments, the messages in flight, the
// participants hosted here, and ProcTransport::State, which holds them for one case at a time.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "impls/proc_links.h"
#include "impls/proc_transport.h"
#include "impls/reduce_op.h"

namespace collcheck::proc {

// ---------------------------------------------------------------------------------------------
// The FIFOs. A receiver's segment holds one FIFO per message stream into the participants it
// hosts. Every process computes the whole schedule, so every sender knows where the FIFOs of
// every receiver lie without asking: the streams into a receiver, in (from, to, channel) order,
// share its segment equally. Single producer (the sender's process), single consumer: `tail`
// is written only by the producer and `head` only by the consumer, on their own cache lines,
// so a piece costs two atomic stores and no per-element synchronisation.

constexpr std::size_t kSlotHeader = 64;  // keeps payloads cache-line aligned

struct FifoControl {
  alignas(64) std::atomic<std::uint64_t> tail;
  alignas(64) std::atomic<std::uint64_t> head;
};

struct SlotHeader {
  std::uint64_t sequence;
  std::uint64_t bytes;
};

struct FifoShape {
  std::size_t slot_bytes = kProcSlotBytes;
  std::size_t slots = kProcSlots;
  std::size_t stride() const { return kSlotHeader + slot_bytes; }
  std::size_t bytes() const { return sizeof(FifoControl) + slots * stride(); }
};

// The largest FIFOs that let `fifos` of them share one segment: fewer slots first (down to
// four), then smaller slots (down to 4 KiB), then two slots.
inline FifoShape fifo_shape(std::size_t fifos) {
  FifoShape shape;
  if (fifos == 0) return shape;
  const std::size_t room = kSegmentBytes / fifos;
  while (shape.bytes() > room && shape.slots > 4) shape.slots /= 2;
  while (shape.bytes() > room && shape.slot_bytes > 4096) shape.slot_bytes /= 2;
  while (shape.bytes() > room && shape.slots > 2) shape.slots /= 2;
  return shape;
}

struct Fifo {
  FifoControl* control = nullptr;
  std::byte* slots = nullptr;
  FifoShape shape;
  std::byte* slot(std::uint64_t index) const { return slots + (index % shape.slots) * shape.stride(); }
};

inline Fifo fifo_at(std::byte* segment, std::size_t index, FifoShape shape) {
  std::byte* base = segment + index * shape.bytes();
  return Fifo{reinterpret_cast<FifoControl*>(base), base + sizeof(FifoControl), shape};
}

// ---------------------------------------------------------------------------------------------
// Messages in flight, seen from the sender. A send completes when posted, but its bytes are
// not copied then: the message keeps pointing at the sender's buffer (`lazy`) and the progress
// loop copies it straight into the receiver's FIFO as slots free up. Only when a later step is
// about to write over the range that is still unsent, or the call ends (the caller refills
// inputs and finishes avg), is the rest copied into a private buffer. A schedule therefore never
// deadlocks on the bounded FIFOs, and a ring moves each byte with one copy in and one copy or
// reduction out.

struct Outgoing {
  std::uint64_t sequence = 0;
  const std::byte* source = nullptr;  // lazy: the sender's buffer; null once staged
  std::vector<std::byte> owned;       // staged: bytes [owned_base, bytes)
  std::size_t owned_base = 0;
  std::size_t bytes = 0;
  std::size_t pushed = 0;
  bool started = false;               // a zero-byte message still travels as one empty piece
  double not_before = 0;              // a hook's delay

  bool lazy() const { return source != nullptr; }
  const std::byte* at(std::size_t offset) const { return lazy() ? source + offset : owned.data() + (offset - owned_base); }
  bool done() const { return started && pushed == bytes; }
  void stage() {
    owned.assign(source + pushed, source + bytes);
    owned_base = pushed;
    source = nullptr;
  }
};

struct Outbound {
  Key key;
  Fifo fifo;                       // shm: in the receiver's segment
  Connection* connection = nullptr;  // tcp
  std::uint64_t per_call = 0;      // messages on this stream per call
  std::uint64_t next = 0;          // the sequence number to deliver next
  std::uint64_t broken_from = std::numeric_limits<std::uint64_t>::max();  // a hook dropped it
  std::uint64_t tail = 0, head_seen = 0;
  std::deque<Outgoing> queue;      // posted, by sequence
};

struct Inbound {
  Key key;
  Fifo fifo;                // shm: in this process's segment
  bool tcp = false;
  std::deque<Piece> pieces;  // tcp: frames read, not yet taken
  std::uint64_t per_call = 0;
  std::uint64_t consumed = 0;  // messages fully taken
  std::uint64_t head = 0, tail_seen = 0;
};

// A receive or send step's stream (index into inbound or outbound) and its ordinal there: the
// k-th send step (in step order) from a to b on channel c is message k of the call on that
// stream, and the k-th receive step takes it, as the schedule's validator counts them.
struct StepLink {
  int link = -1;
  std::uint64_t ordinal = 0;
};

struct Stream {
  std::vector<int> steps;
  std::size_t next = 0;
  std::size_t received = 0;  // bytes of the current receive taken so far
  bool started = false;
};

struct Hosted {
  int participant = 0;
  std::vector<Stream> streams;
  std::vector<StepLink> links;  // per step
  std::vector<std::uint8_t> done;
  std::size_t remaining = 0;
  ProcBuffers buffers;
};

enum class Taken { Nothing, Some, All };

}  // namespace collcheck::proc

namespace collcheck {

struct ProcTransport::State {
  State(World& w, ProcLinks l) : world(w), links(l), rank(w.rank()), size(w.size()) {}
  ~State();

  World& world;
  ProcLinks links;
  int rank, size;
  proc::Peers peers;  // hosts, segments and connections, from connect()
  std::uint32_t epoch = 0;

  // The case in progress.
  const Schedule* schedule = nullptr;
  ProcRunOptions options;
  std::size_t element = 1;
  std::vector<proc::Outbound> outbound;
  std::vector<proc::Inbound> inbound;
  std::map<proc::Key, int> inbound_index;
  std::vector<proc::Hosted> hosted;
  std::size_t lazy = 0;  // lazy messages in the outbound queues
  std::uint64_t call = 0;
  std::string failure;   // set by a step or a link; ends the run
  std::vector<std::vector<std::byte>> spare;  // tcp payload buffers for reuse

  int host(int participant) const { return proc_host(participant, schedule->nranks()); }
  bool via_shm(const proc::Key& key) const {
    const int from = host(key.from), to = host(key.to);
    return from == to || (links != ProcLinks::Tcp && peers.hosts[static_cast<std::size_t>(from)] ==
                                                          peers.hosts[static_cast<std::size_t>(to)]);
  }
  double now() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - options.start).count();
  }
  std::string participant_name(int p) const {
    return p < schedule->nranks() ? "rank " + std::to_string(p) : "switch " + std::to_string(p - schedule->nranks());
  }

  Status plan(const Schedule&);
  void plan_hosted();
  void reset_inbound();

  std::byte* address(const proc::Hosted& h, const Range& range) const {
    const ProcBuffers& b = h.buffers;
    std::byte* base = range.buffer == BufferKind::Input ? b.input : range.buffer == BufferKind::Output ? b.output : b.scratch;
    return base == nullptr ? nullptr : base + range.offset * element;
  }
  void reduce(const std::byte* a, const std::byte* b, std::byte* out, std::size_t bytes) const {
    auto apply = options.reduction.reduce ? options.reduction.reduce : &reduce_elements_fast;
    apply(schedule->shape.dtype, schedule->shape.op, a, b, out, bytes / element);
  }

  void protect(const std::byte* at, std::size_t bytes);
  void settle();
  void post(const proc::Hosted& h, const Step& step, const proc::StepLink& link);
  proc::Taken receive(proc::Hosted& h, const Step& step, const proc::StepLink& link,
                      proc::Stream& stream);
  bool advance(proc::Hosted& h, proc::Stream& stream);
  bool pop_finished(proc::Outbound& o);
  bool drain_shm(proc::Outbound& o, double now);
  bool drain_tcp(proc::Outbound& o, double now);
  bool pump();
  void deliver(const proc::FrameHeader& header, std::vector<std::byte> payload);
  bool outbound_empty() const;
  std::string stuck(double deadline) const;
};

}  // namespace collcheck
