// The proc transport's progress: posting sends and pushing messages into the receivers' FIFOs and
// sockets as room frees up, without waiting anywhere; with `reliable`, go-back-N retransmission as
// the receivers ask; and how a rank with nothing to do waits. Taking receives is receiving.cc's.
#include "impls/proc/progress.h"

#include <algorithm>
#include <bit>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <iterator>

#include <sched.h>

namespace collcheck {
namespace proc {

bool more_ranks_than(std::span<const std::string> hosts, int rank, int cores) {
  const std::string& here = hosts[static_cast<std::size_t>(rank)];
  return std::count(hosts.begin(), hosts.end(), here) > cores;
}

}  // namespace proc

using namespace proc;

// Nothing moved: spins on for a while, since the peer we wait for runs on another core when there
// are cores enough (yielding at once gave the core away to any other process on a busy machine,
// for a whole time slice), then yields it, since ranks may outnumber cores; where they do on this
// host (`crowded`), yields at once: the peer waits for this core.
void ProcTransport::State::idle(double time) const {
  constexpr double kSpinSeconds = 50e-6;
  if (crowded || settings.forever || time - last_news > kSpinSeconds) sched_yield();
}

// Before a step writes [at, at + bytes): every lazy message it overlaps is copied aside first
// (the unsent rest; reliable: all of it, since it may be sent again), so that the message carries
// the bytes it had when it was posted.
void ProcTransport::State::protect(const std::byte* at, std::size_t bytes) {
  if (lazy == 0 || bytes == 0) return;
  for (Outbound& out : outbound) {
    for (Outgoing& message : out.queue) {
      // Only what it holds already: a forwarded message's receive lands the rest (receiving.cc).
      const std::size_t keep = settings.reliable ? 0 : message.pushed;
      if (message.lazy() && at < message.source + message.landed && message.source + keep < at + bytes) {
        message.stage(keep);
        --lazy;
      }
    }
  }
}

void ProcTransport::State::settle() {
  for (Outbound& out : outbound) {
    for (Outgoing& message : out.queue) {
      if (message.lazy()) message.stage(settings.reliable ? 0 : message.pushed);
    }
  }
  lazy = 0;
}

// One transmission through the hook: the per-piece checksums of the pristine bytes first, then
// the hook gets its own copy to change. A reorder is not honoured for the last message of a call,
// which has no next message to wait for.
void ProcTransport::State::decide(Outbound& out, Outgoing& message) {
  if (settings.checksums && message.sums.empty()) {
    for (std::size_t offset = 0; offset < message.bytes || offset == 0; offset += out.piece_bytes) {
      message.sums.push_back(checksum({message.at(offset), std::min(out.piece_bytes, message.bytes - offset)}));
    }
  }
  if (settings.reliable) {
    message.wire.assign(message.at(0), message.at(0) + message.bytes);  // the pristine copy stays, to send again
  } else {
    message.wire = std::move(message.owned);
  }
  const double time = now();
  const auto attempt = static_cast<int>(out.sender.attempt(message.sequence));
  const Message on_wire{out.key.from,  out.key.to, out.key.channel, message.sequence,
                        message.bytes, time,       attempt,         out.per_call};
  const SendDecision decision = options.hook->on_send(on_wire, message.wire);
  message.hooked = true;
  message.dropped = decision.drop;
  message.not_before = time + decision.delay;
  message.copies = std::max(0, decision.duplicates);
  message.held = decision.reorder && LinkSender::may_hold(message.sequence, out.per_call);
  message.held_until = time + settings.reorder_window;
}

Outgoing& ProcTransport::State::post(const Hosted& local, const Step& step, const StepLink& link) {
  Outbound& out = outbound[static_cast<std::size_t>(link.link)];
  Outgoing message;
  message.sequence = call * out.per_call + link.ordinal;
  message.bytes = step.from.count * element;
  message.landed = message.bytes;
  message.source = address(local, step.from);
  auto place = out.queue.end();
  while (place != out.queue.begin() && std::prev(place)->sequence > message.sequence) --place;
  place = out.queue.insert(place, std::move(message));
  if (options.hook != nullptr) {
    place->stage(0);  // the hook may change the payload, so it sees a copy, taken now
    decide(out, *place);
  } else if (place->lazy()) {
    ++lazy;
  }
  return *place;
}

// Receive and forward: where the step after a receive sends exactly what that receive lands, on a
// stream whose pieces are the receive's own size (shared memory both ways, no hook), the send is
// posted as the receive begins, with nothing landed yet; the receive then pushes each piece into
// the send's slot as it lands it (forward_piece, receiving.cc), so that the bytes it reduced are
// stored out while they are still in this core's cache, instead of being read back from memory
// by the progress loop later. A piece that cannot go at once (no free slot, an earlier message
// still on its way) lands as usual and the progress loop pushes it from its place.
// Returns the link of the send posted so (null where there is none), `stream` remembering it.
const StepLink* ProcTransport::State::forward_of(const Hosted& local, Stream& stream, const Step& step) {
  if (stream.forwarding) return &local.links[static_cast<std::size_t>(stream.steps[stream.next + 1])];
  if (options.hook != nullptr || step.to.count == 0 || stream.next + 1 >= stream.steps.size()) return nullptr;
  const Participant& participant = schedule->participants[static_cast<std::size_t>(local.participant)];
  const int receiving = stream.steps[stream.next];
  const int sending = stream.steps[stream.next + 1];
  const Step& send = participant.steps[static_cast<std::size_t>(sending)];
  if (send.kind != StepKind::Send || send.from.buffer != step.to.buffer || send.from.offset != step.to.offset ||
      send.from.count != step.to.count) {
    return nullptr;
  }
  for (int earlier : participant.after(sending)) {
    if (earlier != receiving && local.done[static_cast<std::size_t>(earlier)] == 0) return nullptr;
  }
  const StepLink& in_link = local.links[static_cast<std::size_t>(receiving)];
  const StepLink& out_link = local.links[static_cast<std::size_t>(sending)];
  const Inbound& in = inbound[static_cast<std::size_t>(in_link.link)];
  const Outbound& out = outbound[static_cast<std::size_t>(out_link.link)];
  if (in.tcp || in.rdma.active || out.connection != nullptr || out.rdma.active ||
      in.fifo.shape.slot_bytes != out.piece_bytes) {
    return nullptr;
  }
  post(local, send, out_link).landed = 0;
  stream.forwarding = true;
  return &out_link;
}

// The message to push now: the one at `next`, or, when that one is held back, the one after it.
Outgoing* ProcTransport::State::choose(Outbound& out, double time) {
  while (out.cursor < out.queue.size()) {
    Outgoing& message = out.queue[out.cursor];
    if (message.sequence != out.next) return nullptr;  // not posted yet
    if (message.done() && message.copies == 0) {       // pushed ahead of the held message before it
      finished(out, message);
      continue;
    }
    if (!message.held || time >= message.held_until) return message.not_before <= time ? &message : nullptr;
    if (out.cursor + 1 == out.queue.size() || out.queue[out.cursor + 1].sequence != message.sequence + 1)
      return nullptr;
    Outgoing& after = out.queue[out.cursor + 1];
    return after.not_before <= time ? &after : nullptr;
  }
  return nullptr;
}

// The checksum of the piece of `message` at its `pushed` offset, `n` bytes at `bytes` (0 without
// checksums): the hook's, taken over the pristine bytes, or one taken now.
std::uint64_t ProcTransport::State::piece_sum(const Outbound& out, const Outgoing& message, const std::byte* bytes,
                                              std::size_t n) const {
  if (!settings.checksums) return 0;
  return message.hooked ? message.sums[message.pushed / out.piece_bytes] : checksum({bytes, n});
}

// The message's next `n` bytes as one frame on the TCP connection; false when its window is full.
bool ProcTransport::State::push_frame(Outbound& out, const Outgoing& message, std::size_t n) {
  Connection& connection = *out.connection;
  if (connection.out.size() - connection.out_sent >= kTcpWindow) return false;
  const std::byte* data = message.payload(message.pushed);
  const PieceHeader header{
      message.sequence, message.pushed, n, piece_sum(out, message, data, n), out.sender.attempt(message.sequence), 0};
  append_frame(connection, FrameHeader{epoch, FrameKind::Piece, out.key.from, out.key.to, out.key.channel, 0, header},
               data);
  return true;
}

// The message's next `n` bytes as one piece in the receiver's FIFO; false when it is full.
bool ProcTransport::State::push_slot(Outbound& out, const Outgoing& message, std::size_t n, const std::byte* payload,
                                     const ReducedPiece* reduced) {
  // (ib is never forwarded to, so never given a reduced piece: its payload is the message's)
  if (out.rdma.active) return push_rdma(out, message, n);
  if (!credit(out)) return false;
  // Only the sender's one-pass copy and checksum chooses how to store (fill_slot); only a fill
  // large enough to time reads the clock.
  const bool chooses = settings.checksums && !message.hooked;
  if (!chooses || !SlotStores::timed(n)) {
    fill_slot(out, message, n, payload, out.fifo.slot(out.tail), chooses && out.stores.around_cache(n), reduced);
  } else {
    // What the receiver's end pays for each way: read where the fill is timed, its line being the
    // receiver's (written with every piece it takes).
    out.stores.heard(std::bit_cast<double>(out.fifo.control->taking[0].load(std::memory_order_relaxed)),
                     std::bit_cast<double>(out.fifo.control->taking[1].load(std::memory_order_relaxed)));
    const bool around_cache = out.stores.around_cache(n);
    const auto start = std::chrono::steady_clock::now();
    fill_slot(out, message, n, payload, out.fifo.slot(out.tail), around_cache, reduced);
    out.stores.filled(around_cache, n, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  out.fifo.control->tail.store(++out.tail, std::memory_order_release);
  return true;
}

// Whether the receiver's FIFO has a free slot (polled again and again when full, the checksum
// taken once the slot is there).
bool ProcTransport::State::credit(Outbound& out) {
  if (out.tail - out.head_seen < out.fifo.shape.slots) return true;
  out.head_seen = out.fifo.control->head.load(std::memory_order_acquire);
  return out.tail - out.head_seen < out.fifo.shape.slots;
}

// The message's next `n` bytes and their header into `slot` (progress.h says when around the cache).
void ProcTransport::State::fill_slot(const Outbound& out, const Outgoing& message, std::size_t n,
                                     const std::byte* payload, std::byte* slot, bool around_cache,
                                     const ReducedPiece* reduced) {
  const bool takes_checksum = settings.checksums && !message.hooked;
  std::uint64_t sum = 0;
  if (reduced != nullptr && takes_checksum && options.reduction.reduce == nullptr) {
    sum = reduce_with_checksum(schedule->shape.dtype, schedule->shape.op, reduced->a, reduced->b, reduced->out,
                               slot + kSlotHeader, n / element, around_cache);  // one pass: reduce, land, fill
  } else {
    // A backend's own reduction (a mutant's) runs on its own, before the payload is read.
    if (reduced != nullptr) reduce(reduced->a, reduced->b, reduced->out, n);
    if (takes_checksum) {
      sum = copy_with_checksum(slot + kSlotHeader, {payload, n}, around_cache);  // one pass: copy and checksum
    } else {
      if (n > 0) std::memcpy(slot + kSlotHeader, payload, n);
      sum = piece_sum(out, message, slot + kSlotHeader, n);
    }
  }
  const PieceHeader header{message.sequence,      message.pushed, n, sum, out.sender.attempt(message.sequence),
                           around_cache ? 1U : 0U};
  std::memcpy(slot, &header, sizeof header);
}

// Pushes the message's pieces while there is room; true when all of it is out.
bool ProcTransport::State::push(Outbound& out, Outgoing& message, bool& moved) {
  if (message.dropped) {  // this transmission never arrives
    message.pushed = message.bytes;
    message.started = true;
    message.copies = 0;
    moved = true;
    return true;
  }
  while (!message.done()) {
    // Forwarded: whole pieces as they land (their receive lands the rest).
    if (message.landed < message.bytes && message.landed - message.pushed < out.piece_bytes) return false;
    const std::size_t n = std::min(out.piece_bytes, message.landed - message.pushed);
    const bool room = out.connection != nullptr ? push_frame(out, message, n)
                                                : push_slot(out, message, n, message.payload(message.pushed));
    if (!room) return false;
    message.pushed += n;
    message.started = true;
    moved = true;
  }
  return true;
}

// After a message's transmission is out: its duplicates next; a message pushed ahead releases the
// held one before it; otherwise the stream moves on (and, unreliable, forgets what is out).
void ProcTransport::State::finished(Outbound& out, Outgoing& message) {
  if (message.copies > 0) {
    --message.copies;
    message.pushed = 0;
    message.started = false;
    return;
  }
  if (&message != &out.queue[out.cursor]) {
    out.queue[out.cursor].held = false;
    return;
  }
  ++out.next;
  ++out.cursor;
  if (settings.reliable) return;
  while (out.cursor > 0) {
    if (out.queue.front().lazy()) --lazy;
    out.queue.pop_front();
    --out.cursor;
  }
}

// Reliable: forgets what the receiver has taken, and goes back where it asks to.
bool ProcTransport::State::heed_receiver(Outbound& out) {
  bool moved = false;
  if (out.connection == nullptr) {
    out.acked = std::max(out.acked, out.fifo.control->acked.load(std::memory_order_acquire));
    const std::uint64_t rewinds = out.fifo.control->rewinds.load(std::memory_order_acquire);
    if (rewinds != out.rewinds_seen) {
      out.rewinds_seen = rewinds;
      rewind(out, out.fifo.control->rewind_to.load(std::memory_order_relaxed));
      moved = true;
    }
  }
  while (out.cursor > 0 && out.queue.front().sequence < out.acked) {
    if (out.queue.front().lazy()) --lazy;
    out.queue.pop_front();
    --out.cursor;
    moved = true;
  }
  out.sender.acknowledged(out.acked);
  return moved;
}

// Go-back-N: every message from `to` on that has been (partly) sent goes again, through the hook
// again with its attempt counted; one sent more than `retries` times again ends the run.
void ProcTransport::State::rewind(Outbound& out, std::uint64_t to) {
  to = std::max(to, out.acked);
  if (to > out.next) return;
  std::size_t cursor = out.queue.size();
  for (std::size_t i = 0; i < out.queue.size(); ++i) {
    Outgoing& message = out.queue[i];
    if (message.sequence < to) continue;
    cursor = std::min(cursor, i);
    if (!message.started) {  // not sent yet (a delay or a reorder holds it): nothing to repeat
      message.held = false;
      continue;
    }
    out.sender.retransmit(message.sequence);
    ++sent_again;
    // Only the message asked for counts against its retries; the later ones are resent along.
    if (message.sequence == to && !out.sender.asked_again(to, settings)) {
      fail(link_stream_text(participant_name(out.key.to), participant_name(out.key.from), out.key.channel, call) +
           ": " + link_gave_up_text(message.sequence, settings));
      return;
    }
    message.pushed = 0;
    message.started = false;
    message.copies = 0;
    message.held = false;
    message.dropped = false;
    message.not_before = 0;
    if (message.hooked) decide(out, message);
  }
  out.cursor = cursor;
  out.next = to;
}

bool ProcTransport::State::drain(Outbound& out, double time) {
  bool moved = settings.reliable && heed_receiver(out);
  while (failure.empty()) {
    Outgoing* message = choose(out, time);
    if (message == nullptr || !push(out, *message, moved)) break;
    finished(out, *message);
  }
  return moved;
}

void ProcTransport::State::deliver(const FrameHeader& header, std::vector<std::byte> payload) {
  if (header.kind == FrameKind::Arrived && header.from >= 0 && header.from < size) {  // may be a case ahead
    std::uint64_t& mark = peers_arrived[static_cast<std::size_t>(header.from)];
    mark = std::max(mark, header.piece.sequence);
    return;
  }
  if (header.epoch != epoch) return;  // from a case that ended before this one began
  if (header.kind == FrameKind::Abort) {
    if (failure.empty()) {
      failure = "rank " + std::to_string(header.from) +
                " stopped the run: " + std::string(reinterpret_cast<const char*>(payload.data()), payload.size());
    }
    return;
  }
  if (header.kind == FrameKind::Done) {
    if (header.from >= 0 && header.from < size) peers_done[static_cast<std::size_t>(header.from)] = header.epoch;
    return;
  }
  const Key key{header.from, header.to, header.channel};
  const bool data = header.kind == FrameKind::Piece;
  const auto found = data ? inbound_index.find(key) : outbound_index.find(key);
  if (found == (data ? inbound_index.end() : outbound_index.end())) {
    failure = "a frame from " + participant_name(header.from) + " to " + participant_name(header.to) + " on channel " +
              std::to_string(header.channel) + ", which the schedule never sends";
    return;
  }
  const auto index = static_cast<std::size_t>(found->second);
  if (data) {
    inbound[index].pieces.push_back(Piece{header.piece, std::move(payload)});
  } else if (header.kind == FrameKind::Ack) {
    outbound[index].acked = std::max(outbound[index].acked, header.piece.sequence);
  } else if (header.kind == FrameKind::Rewind) {
    rewind(outbound[index], header.piece.sequence);
  }
}

// Moves every outbound stream and socket along; true when anything moved.
bool ProcTransport::State::pump(double time) {
  bool progressed = false;
  heed_stop();
  if (!meeting) {
    for (Outbound& out : outbound) progressed |= drain(out, time);
  }
  for (Connection& connection : peers.connections) {
    if (connection.fd < 0) continue;
    std::string error;
    progressed |= write_some(connection, error);
    progressed |= read_frames(
        connection, spare, error,
        [this](const FrameHeader& header, std::vector<std::byte> payload) { deliver(header, std::move(payload)); });
    if (!error.empty() && failure.empty()) failure = error;
  }
  if (sweeping && !meeting) {
    for (Inbound& in : inbound) progressed |= sweep(in);
  }
  if (peers.rdma != nullptr) {  // ib: completions, and credits that found no room on the queue pair
    if (std::string failed = peers.rdma->poll(progressed); !failed.empty() && failure.empty()) failure = failed;
    for (Inbound& in : inbound) {
      if (in.rdma.head_dirty || in.rdma.words_dirty) progressed |= write_credits(in);
    }
  }
  return progressed;
}

}  // namespace collcheck
