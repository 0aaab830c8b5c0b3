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
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "impls/link/protocol.h"
#include "impls/link/reduce_op.h"
#include "impls/proc/links.h"
#include "impls/proc/rdma_links.h"
#include "impls/proc/transport.h"

namespace collcheck::proc {

// The engine works as follows. Every process computes the whole schedule and hosts some of its
// participants (`Hosted`: rank r, and the switches that run on it). One thread polls: for every
// hosted participant it runs each stream of steps (`Stream`) as far as it can without waiting
// (transport.cc, advance(); its receives: receiving.cc), then pumps every outbound stream and
// socket once (progress.cc, pump()), and yields the CPU when nothing moved. A send step only posts its message
// (`Outgoing`, still pointing at the sender's buffer) on the stream's `Outbound`; pumping copies
// it piece by piece into the receiver's FIFO or TCP connection as room frees up. A receive step
// takes pieces from its stream's `Inbound` and hands each to the stream's LinkReceiver
// (impls/link/protocol.h), which judges it against the position due: taken (copied or reduced
// into place), dropped as a duplicate, or a fault. A send of exactly what the receive before it
// lands is posted with that receive, which pushes each piece on as it lands it (receive and
// forward: progress.cc, forward_of). Unreliable, a fault stops the run on every
// process; reliable, the receiver asks the sender to go back (a word in the FIFO's control
// block, or a Rewind frame), and the sender's LinkSender counts the transmissions and the asks.
// A process that moves nothing for the link timeout, or outlives the run's deadline, gives up
// naming what it waits for.

// ---------------------------------------------------------------------------------------------
// The FIFOs. A receiver's segment holds one FIFO per message stream into the participants it
// hosts. Every process computes the whole schedule, so every sender knows where the FIFOs of
// every receiver lie without asking: the streams into a receiver, in (from, to, channel) order,
// share its segment equally. Single producer (the sender's process), single consumer: `tail`
// is written only by the producer and `head` only by the consumer, on their own cache lines,
// so a piece costs two atomic stores and no per-element synchronisation.

constexpr std::size_t kSlotHeader = 64;  // keeps payloads cache-line aligned
static_assert(sizeof(PieceHeader) <= kSlotHeader);

// How a sender stores pieces into the receivers' slots works as follows. Ordinary stores must
// first take each line of the slot from the core that last read it, the receiver's: cheap where
// the two cores share a cache, dear where they do not (this project's machine gives its two
// virtual cores one or the other, and moves them: docs/performance.md; so each stream to a
// receiver keeps its own). Stores around the cache
// (non-temporal) do not take the line: steady either way, but the receiver then reads the piece
// from memory. So the sender times its fills of at least kTimedBytes, in seconds per byte, and
// keeps a moving average for each way; the receiver times its taking of such pieces (the check
// and the landing) per way, each piece's header saying which, and publishes its averages in the
// FIFO's control block, which the sender hears before each timed fill (`heard`). A way's cost is the
// two together: the fill that is cheaper for the sender may cost the receiver more. The sender
// tries each way once, then fills with the cheaper one, and with the other once more after
// kProbeEvery fills times how much dearer that one was (at most kMostDearer times), so that
// probing costs about 1/kProbeEvery of the time of the fills and each average still follows a
// move. (The way it fills with is timed every time: if that one becomes the dearer, the next
// fill takes the other.) A way the receiver has not yet timed counts its fill alone.
class SlotStores {
 public:
  static constexpr std::size_t kTimedBytes = std::size_t{16} << 10;
  static constexpr std::uint64_t kProbeEvery = 32;
  static constexpr double kMostDearer = 16;

  static bool timed(std::size_t bytes) { return bytes >= kTimedBytes; }
  // Whether the next fill of `bytes` goes around the cache.
  bool around_cache(std::size_t bytes) const {
    if (cost_[1] == 0) return true;
    if (cost_[0] == 0) return false;
    const bool cheaper = total(true) < total(false);
    return timed(bytes) && probe_in_ == 0 ? !cheaper : cheaper;
  }
  // What taking a piece filled each way costs the receiver, seconds per byte (0: not yet timed).
  void heard(double ordinary, double around_cache) {
    receiver_[0] = ordinary;
    receiver_[1] = around_cache;
  }
  // A fill of `bytes` took `seconds` (only fills of at least kTimedBytes count).
  void filled(bool around_cache, std::size_t bytes, double seconds) {
    if (!timed(bytes)) return;
    // A clock that did not move counts as a nanosecond: a cost of 0 would read as untried.
    const double sample = std::max(seconds, 1e-9) / static_cast<double>(bytes);
    double& cost = cost_[around_cache ? 1 : 0];
    cost = cost == 0 ? sample : (cost + sample) / 2;
    if (cost_[0] == 0 || cost_[1] == 0) return;
    if (probe_in_ > 0) {
      --probe_in_;
      return;
    }
    const double dearer = std::max(total(false), total(true)) / std::max(std::min(total(false), total(true)), 1e-300);
    probe_in_ = static_cast<std::uint64_t>(static_cast<double>(kProbeEvery) * std::min(dearer, kMostDearer));
  }
  // The averages of the fills, seconds per byte (0: not tried yet), ordinary stores first; and
  // with what the receiver pays for them.
  double cost(bool around_cache) const { return cost_[around_cache ? 1 : 0]; }
  double total(bool around_cache) const { return cost_[around_cache ? 1 : 0] + receiver_[around_cache ? 1 : 0]; }

 private:
  double cost_[2] = {0, 0};
  double receiver_[2] = {0, 0};  // heard from the receiver
  std::uint64_t probe_in_ = 0;   // timed fills before the next probe of the dearer way
};

// `tail` is the producer's; the rest the consumer's. Reliable streams also carry, against the
// data, how many messages the consumer has taken (`acked`) and its requests to go back to a
// message (`rewind_to`, then `rewinds` counts them, so the producer sees each request once).
// `taking` is the consumer's cost of taking a piece filled each way (SlotStores), seconds per
// byte as a double's bits (0: not timed yet).
struct FifoControl {
  alignas(64) std::atomic<std::uint64_t> tail;
  alignas(64) std::atomic<std::uint64_t> head;
  std::atomic<std::uint64_t> acked;
  std::atomic<std::uint64_t> rewind_to;
  std::atomic<std::uint64_t> rewinds;
  std::atomic<std::uint64_t> taking[2];
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
  const std::size_t room = kFifoBytes / fifos;
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
// about to write over the range that is still unsent (reliable: any of it, since it may be sent
// again), or the call ends (the caller refills inputs and finishes avg), is it copied into a
// private buffer. A schedule therefore never deadlocks on the bounded FIFOs, and a ring moves
// each byte with one copy in and one copy or reduction out.
//
// With a hook, each transmission is decided at once: the pristine bytes are staged, their
// per-piece checksums taken, and the hook gets a copy (`wire`) it may change, drop, delay,
// duplicate or hold back behind the stream's next message.

struct Outgoing {
  std::uint64_t sequence = 0;
  const std::byte* source = nullptr;  // lazy: the sender's buffer; null once staged
  std::vector<std::byte> owned;       // staged: bytes [owned_base, bytes)
  std::size_t owned_base = 0;
  std::size_t bytes = 0;
  std::size_t pushed = 0;
  // The bytes from its start that hold what it carries: all of them, but for a message forwarded
  // as its receive lands (ProcTransport::State::receive), those landed so far: never pushed beyond.
  std::size_t landed = 0;
  bool started = false;  // a zero-byte message still travels as one empty piece
  // The transmission in progress (hook only: wire, sums, and the decision); which transmission it
  // is, the stream's LinkSender counts.
  bool hooked = false;  // the hook decided this transmission; `wire` holds it
  std::vector<std::byte> wire;
  std::vector<std::uint64_t> sums;  // per piece, of the pristine bytes
  double not_before = 0;            // a hook's delay
  bool dropped = false;
  int copies = 0;         // duplicates still to push after this transmission
  bool held = false;      // reorder: waits until the stream's next message is out,
  double held_until = 0;  // or until the reorder window has passed, whichever is first

  bool lazy() const { return source != nullptr; }
  const std::byte* at(std::size_t offset) const {
    return lazy() ? source + offset : owned.data() + (offset - owned_base);
  }
  const std::byte* payload(std::size_t offset) const { return hooked ? wire.data() + offset : at(offset); }
  bool done() const { return started && pushed == bytes; }
  // Copies the bytes from `from` on aside (the rest was pushed and will not be needed again).
  void stage(std::size_t from) {
    owned.assign(source + from, source + bytes);
    owned_base = from;
    source = nullptr;
  }
};

// ib: where a stream's FIFO lies at the receiver (`slots`, and its control block's tail word),
// and this sender's staging slots, reused once their write has completed.
struct RdmaOut {
  bool active = false;
  RemoteWords slots, tail;
  std::uint64_t immediate = 0;  // the stream's number at the receiver, sent with each tail
  std::byte* staging = nullptr;
  std::size_t staging_slots = 0;
  std::vector<std::uint64_t> staged;  // per staging slot: its last write's ordinal + 1 (0: none)
};

// ib: the sender's shadow of this stream's control block, where credits, acknowledgements and
// rewind requests go; `dirty` when they changed here and are not written there yet.
struct RdmaIn {
  bool active = false;
  RemoteWords shadow;
  bool head_dirty = false;
  bool words_dirty = false;
};

struct Outbound {
  Key key;
  RdmaOut rdma;
  LinkSender sender;                 // reliable: each kept message's attempts and the asks for it
  Fifo fifo;                         // shm: in the receiver's segment
  Connection* connection = nullptr;  // tcp
  std::size_t piece_bytes = kProcSlotBytes;
  std::uint64_t per_call = 0;  // messages on this stream per call
  std::uint64_t next = 0;      // the sequence number to push next
  std::size_t cursor = 0;      // queue entries before `next`
  std::uint64_t tail = 0, head_seen = 0;
  std::uint64_t acked = 0;         // reliable: messages the receiver has taken
  std::uint64_t rewinds_seen = 0;  // shm: rewind requests handled
  SlotStores stores;               // shm: how pieces go into the receiver's slots, by what each way costs
  std::deque<Outgoing> queue;      // posted and not yet pushed (reliable: not yet acked), by sequence
};

struct Inbound {
  Key key;
  RdmaIn rdma;
  Fifo fifo;  // shm: in this process's segment
  bool tcp = false;
  std::deque<Piece> pieces;  // tcp: frames read, not yet taken
  std::uint64_t per_call = 0;
  std::uint64_t head = 0, tail_seen = 0;
  // The position due next (message, byte), and, reliable, since when the stream has brought
  // nothing useful and what it last asked the sender for.
  LinkReceiver receiver;
  bool waiting = false;       // reliable: a receive waits on this stream
  double taking[2] = {0, 0};  // shm: what taking a piece filled each way costs, seconds per byte
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
  // The step after the receive it stands at sends what that receive lands, and was posted when
  // the receive began, to be pushed piece by piece as the pieces land (receive and forward).
  bool forwarding = false;
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

// A forwarded piece that is a reduction's results, a ⊕ b, landed into `out` (where the payload is
// read from) as it is stored into the next slot: one pass over the bytes that reduces, lands,
// fills and takes the checksum (reduce_with_checksum), instead of a reduction and then a copy
// with checksum, where the fill takes the checksum itself and the reduction is the default one;
// otherwise fill_slot reduces first and fills as from any payload.
struct ReducedPiece {
  const std::byte* a = nullptr;
  const std::byte* b = nullptr;
  std::byte* out = nullptr;
};

// Where a receive's pieces go (ProcTransport::State::receive): into `to`, copied or reduced with
// `from`, and pushed on as the next pieces of `forward`'s send where there is one; `judged`: the
// protocol's settings for this message; `copy_checked`: a copy lands as its checksum is taken.
struct Landing {
  std::byte* to = nullptr;
  const std::byte* from = nullptr;
  const StepLink* forward = nullptr;
  std::size_t bytes = 0;  // the message's
  LinkSettings judged;
  bool copy_checked = false;
};

// Whether the host of `rank` (`hosts`: each rank's) runs more ranks than `cores`, by default the
// host's (not this process's affinity: mpirun binds each rank to a core of its own, and a host whose
// ranks are so bound is not crowded; 0 where not known): then a waiting rank yields at once.
bool more_ranks_than(std::span<const std::string> hosts, int rank,
                     int cores = static_cast<int>(std::thread::hardware_concurrency()));

}  // namespace collcheck::proc

namespace collcheck {

struct ProcTransport::State {
  State(World& members, ProcLinks kind)
      : world(members), links(kind), rank(members.rank()), size(members.size()),
        patience_jitter(static_cast<std::uint64_t>(rank)), peers_arrived(static_cast<std::size_t>(size), 0) {}
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
  // Received pieces land with streaming stores: an output of another buffer far larger than the caches.
  bool streaming_landings = false;
  std::vector<std::byte> forwarded;  // a piece reduced once, into its slot and around the cache into place
  std::uint64_t call = 0;
  std::string failure;                        // set by a step, a link, or another process; ends the run
  std::vector<std::vector<std::byte>> spare;  // tcp payload buffers for reuse
  std::map<proc::Key, int> outbound_index;

  // The link protocol of the case (ProcRunOptions::protocol with its defaults resolved): its
  // `forever` also waives the run's deadline.
  LinkSettings settings;
  RetransmitJitter patience_jitter;          // reliable: each wait before asking again
  bool sweeping = false;                     // stale pieces can arrive (a hook or retransmissions)
  bool meeting = false;                      // in begin()'s barriers: the FIFOs may still hold the last case's words
  double last_news = 0;                      // when this process last moved anything
  bool crowded = false;                      // more ranks on this host than cores: idle() yields at once
  std::vector<std::uint32_t> peers_done;     // tcp: the last case each rank said it finished
  std::vector<std::uint64_t> done_marks;     // tcp: where our own Done frame to each rank ends
  std::vector<std::uint64_t> peers_arrived;  // tcp: the last Arrived mark of each rank (any case)
  std::uint64_t sent_again = 0;              // messages sent again as receivers asked (every case)
  std::uint64_t pieces_forwarded = 0;        // pieces pushed on as they landed (forward_piece, every case)

  int host(int participant) const { return host_rank(participant, schedule->nranks()); }
  bool via_shm(const proc::Key& key) const {
    const int from = host(key.from), to = host(key.to);
    return from == to || (links != ProcLinks::Tcp && links != ProcLinks::Ib &&
                          peers.hosts[static_cast<std::size_t>(from)] == peers.hosts[static_cast<std::size_t>(to)]);
  }
  bool via_rdma(const proc::Key& key) const { return links == ProcLinks::Ib && host(key.from) != host(key.to); }
  double now() const { return std::chrono::duration<double>(std::chrono::steady_clock::now() - options.start).count(); }
  std::string participant_name(int p) const { return collcheck::participant_name(*schedule, p); }

  Status plan(const Schedule&);
  Status plan_rdma(const std::map<proc::Key, std::uint64_t>& per_call, std::map<proc::Key, std::size_t>& fifo_index,
                   const std::vector<std::size_t>& fifos);
  void plan_hosted();
  void reset_inbound();
  void reset_shadows();
  void configure(const LinkProtocol& protocol);
  bool overdue(bool progressed, double time);  // `time`: now(), read once per turn of the loop
  void idle(double time) const;

  std::byte* address(const proc::Hosted& local, const Range& range) const {
    const ProcBuffers& buffers = local.buffers;
    std::byte* base = range.buffer == BufferKind::Input    ? buffers.input
                      : range.buffer == BufferKind::Output ? buffers.output
                                                           : buffers.scratch;
    return base == nullptr ? nullptr : base + range.offset * element;
  }
  void reduce(const std::byte* a, const std::byte* b, std::byte* out, std::size_t bytes) const {
    auto apply = options.reduction.reduce ? options.reduction.reduce : &reduce_elements_fast;
    apply(schedule->shape.dtype, schedule->shape.op, a, b, out, bytes / element);
  }

  void protect(const std::byte* at, std::size_t bytes);
  void settle();
  proc::Outgoing& post(const proc::Hosted& local, const Step& step, const proc::StepLink& link);  // the message posted
  const proc::StepLink* forward_of(const proc::Hosted& local, proc::Stream& stream, const Step& step);
  proc::Taken receive(proc::Hosted& local, const Step& step, const proc::StepLink& link,
                      const proc::StepLink* forward = nullptr);
  PieceVerdict take_piece(const LinkReceiver& receiver, const proc::Landing& landing, const PieceLabel& label,
                          const std::byte* data);
  bool forward_piece(const proc::StepLink* forward, std::byte* to, const std::byte* from, const std::byte* data,
                     std::size_t at, std::size_t bytes, bool copied);
  void land(std::byte* to, const std::byte* from, const std::byte* data, std::size_t at, std::size_t bytes) const;
  bool discard(const proc::Hosted& local, proc::Inbound& in, PieceVerdict verdict, const PieceLabel& piece,
               std::size_t bytes);
  void keep_waiting(proc::Inbound& in);
  bool advance(proc::Hosted& local, proc::Stream& stream);
  std::string stuck(const std::string& how) const;

  // Receiving: the next piece of a stream without taking it, and taking it.
  bool peek(proc::Inbound& in, proc::PieceHeader& header, const std::byte*& data);
  void pop(proc::Inbound& in);
  bool sweep(proc::Inbound& in);
  void ask(proc::Inbound& in);
  void acknowledge(proc::Inbound& in);

  // Sending: one transmission's hook decision, the next message to push, pushing it, going back.
  void decide(proc::Outbound& out, proc::Outgoing& message);
  proc::Outgoing* choose(proc::Outbound& out, double time);
  bool push(proc::Outbound& out, proc::Outgoing& message, bool& moved);
  std::uint64_t piece_sum(const proc::Outbound& out, const proc::Outgoing& message, const std::byte* bytes,
                          std::size_t n) const;
  bool push_frame(proc::Outbound& out, const proc::Outgoing& message, std::size_t n);
  bool push_slot(proc::Outbound& out, const proc::Outgoing& message, std::size_t n, const std::byte* payload,
                 const proc::ReducedPiece* reduced = nullptr);
  bool credit(proc::Outbound& out);
  // The message's next `n` bytes, read from `payload` (where they are: the message's, or a
  // forwarded piece's), and their header into `slot` (the receiver's, or ib's staging).
  // `around_cache`: the payload goes to memory with non-temporal stores rather than into this
  // core's cache (slot_stores says when). `reduced`: the payload is made now, as a reduction's
  // results, in the same pass (proc::ReducedPiece).
  void fill_slot(const proc::Outbound& out, const proc::Outgoing& message, std::size_t n, const std::byte* payload,
                 std::byte* slot, bool around_cache = false, const proc::ReducedPiece* reduced = nullptr);
  bool push_rdma(proc::Outbound& out, const proc::Outgoing& message, std::size_t n);
  bool write_credits(proc::Inbound& in);
  void finished(proc::Outbound& out, proc::Outgoing& message);
  bool heed_receiver(proc::Outbound& out);
  void rewind(proc::Outbound& out, std::uint64_t to);
  bool drain(proc::Outbound& out, double time);
  bool pump(double time);  // `time`: now()
  bool pump() { return pump(now()); }
  void deliver(const proc::FrameHeader& header, std::vector<std::byte> payload);

  // The world: stopping every process, hearing that another stopped, meeting at the end.
  void fail(std::string reason);
  void heed_stop();
  void send_control(int to_rank, proc::FrameKind kind, const proc::Key& key, std::uint64_t sequence,
                    const std::string& text = {});
  void flush(double seconds);
  void announce_done();
  bool done(int q) const;
  bool everyone_done() const;
  bool arrived(int q, int phase) const;
  Status meet(int phase);
  std::string stop_reason(int by) const;
};

}  // namespace collcheck
