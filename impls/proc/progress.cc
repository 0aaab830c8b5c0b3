// The proc transport's progress: posting sends, taking receives (each piece checked against its
// sequence and checksum), and pushing messages into the receivers' FIFOs and sockets as room
// frees up, without waiting anywhere; with `reliable`, acks and go-back-N retransmission.
#include "impls/proc/progress.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <iterator>

#if defined(__x86_64__)
#include <emmintrin.h>
#endif

namespace collcheck {

using namespace proc;

// Before a step writes [at, at + bytes): every lazy message it overlaps is copied aside first
// (the unsent rest; reliable: all of it, since it may be sent again), so that the message carries
// the bytes it had when it was posted.
void ProcTransport::State::protect(const std::byte* at, std::size_t bytes) {
  if (lazy == 0 || bytes == 0) return;
  for (Outbound& out : outbound) {
    for (Outgoing& message : out.queue) {
      const std::size_t keep = settings.reliable ? 0 : message.pushed;
      if (message.lazy() && at < message.source + message.bytes && message.source + keep < at + bytes) {
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

void ProcTransport::State::post(const Hosted& local, const Step& step, const StepLink& link) {
  Outbound& out = outbound[static_cast<std::size_t>(link.link)];
  Outgoing message;
  message.sequence = call * out.per_call + link.ordinal;
  message.bytes = step.from.count * element;
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
}

bool ProcTransport::State::peek(Inbound& in, PieceHeader& header, const std::byte*& data) {
  if (in.tcp) {
    if (in.pieces.empty()) return false;
    header = in.pieces.front().header;
    data = in.pieces.front().data.data();
    return true;
  }
  if (in.head == in.tail_seen) in.tail_seen = in.fifo.control->tail.load(std::memory_order_acquire);
  if (in.head == in.tail_seen) return false;
  const std::byte* slot = in.fifo.slot(in.head);
  std::memcpy(&header, slot, sizeof header);
  data = slot + kSlotHeader;
  return true;
}

void ProcTransport::State::pop(Inbound& in) {
  if (in.tcp) {
    spare.push_back(std::move(in.pieces.front().data));
    in.pieces.pop_front();
  } else {
    in.fifo.control->head.store(++in.head, std::memory_order_release);
    in.rdma.head_dirty = in.rdma.active;  // ib: the credit goes back by RDMA
    if (in.rdma.active) write_credits(in);
  }
}

namespace {

// A received piece's copy into its destination; `streaming` (a case whose buffers are far larger
// than the caches) with streaming stores on x86-64, which do not read the destination's lines
// first (on this project's 2-core machine ordinary stores into uncached memory ran at a fifth of
// their speed) nor evict the slots and blocks still to be used from the cache. A block that is
// forwarded next is read back from memory: no more traffic than the line reads of ordinary stores.
void copy_received(std::byte* to, const std::byte* from, std::size_t bytes, bool streaming) {
#if defined(__x86_64__)
  if (streaming && bytes >= 4096) {
    const std::size_t head = (16 - reinterpret_cast<std::uintptr_t>(to) % 16) % 16;
    std::memcpy(to, from, head);
    std::size_t at = head;
    for (; at + 64 <= bytes; at += 64) {
      const __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(from + at));
      const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(from + at + 16));
      const __m128i c = _mm_loadu_si128(reinterpret_cast<const __m128i*>(from + at + 32));
      const __m128i d = _mm_loadu_si128(reinterpret_cast<const __m128i*>(from + at + 48));
      _mm_stream_si128(reinterpret_cast<__m128i*>(to + at), a);
      _mm_stream_si128(reinterpret_cast<__m128i*>(to + at + 16), b);
      _mm_stream_si128(reinterpret_cast<__m128i*>(to + at + 32), c);
      _mm_stream_si128(reinterpret_cast<__m128i*>(to + at + 48), d);
    }
    std::memcpy(to + at, from + at, bytes - at);
    _mm_sfence();
    return;
  }
#endif
  (void)streaming;
  std::memcpy(to, from, bytes);
}

}  // namespace

// Lands a piece taken at byte `at` of a receive into `to`: copied, or reduced with `from`.
void ProcTransport::State::land(std::byte* to, const std::byte* from, const std::byte* data, std::size_t at,
                                std::size_t bytes) const {
  if (bytes == 0) return;
  if (from == nullptr) copy_received(to + at, data, bytes, streaming_landings);
  else reduce(from + at, data, to + at, bytes);
}

// A piece the stream's receiver did not take: a duplicate (or a retransmission of what was taken)
// is dropped; a fault ends the run (unreliable: false) or is dropped and the sender asked to go
// back (reliable).
bool ProcTransport::State::discard(const Hosted& local, Inbound& in, Verdict verdict, const PieceLabel& piece,
                                   std::size_t bytes) {
  const bool fault = verdict != Verdict::Duplicate;
  if (fault && !settings.reliable) {
    fail(link_stream_text(participant_name(local.participant), participant_name(in.key.from), in.key.channel, call) +
         ": " + link_fault_text(verdict, piece, in.receiver, bytes));
    return false;
  }
  pop(in);
  if (fault) ask(in);
  return true;
}

// Reliable: a receive that found nothing more to take starts waiting on its stream, or, waiting
// too long already, asks the sender again.
void ProcTransport::State::keep_waiting(Inbound& in) {
  if (!in.waiting) {
    in.waiting = true;
    in.receiver.heard(now());
  } else if (in.receiver.impatient(now(), settings)) {
    ask(in);
  }
}

Taken ProcTransport::State::receive(Hosted& local, const Step& step, const StepLink& link) {
  Inbound& in = inbound[static_cast<std::size_t>(link.link)];
  LinkReceiver& receiver = in.receiver;
  const std::uint64_t sequence = call * in.per_call + link.ordinal;
  if (receiver.due_message() != sequence) return Taken::Nothing;  // an earlier message is not yet taken
  const std::size_t bytes = step.to.count * element;
  std::byte* to = address(local, step.to);
  const std::byte* from = step.kind == StepKind::RecvReduce ? address(local, step.from) : nullptr;
  Taken taken = Taken::Nothing;
  PieceHeader piece{};
  const std::byte* data = nullptr;
  LinkSettings judged = settings;
  judged.checksums = settings.checks(sequence, in.per_call);
  while (peek(in, piece, data)) {
    taken = Taken::Some;
    const PieceLabel label{piece.sequence, piece.offset, piece.bytes, piece.checksum, piece.attempt};
    const Verdict verdict = receiver.judge(label, {data, piece.bytes}, bytes, judged);
    if (verdict != Verdict::Take) {
      if (!discard(local, in, verdict, label, bytes)) return taken;
      continue;
    }
    // Only the bytes this piece writes: by then the sends they hold are often out already.
    protect(to + receiver.due_byte(), piece.bytes);
    land(to, from, data, receiver.due_byte(), piece.bytes);
    pop(in);
    if (receiver.take(piece.bytes, bytes, settings.reliable ? now() : 0)) {
      in.waiting = false;
      if (settings.reliable) acknowledge(in);
      return Taken::All;
    }
  }
  if (settings.reliable) keep_waiting(in);
  return taken;
}

// Pieces of messages already taken (duplicates, retransmissions) still in a stream that no step
// is reading from now: taken out, so that they do not fill the FIFO.
bool ProcTransport::State::sweep(Inbound& in) {
  bool moved = false;
  PieceHeader piece{};
  const std::byte* data = nullptr;
  while (peek(in, piece, data) && piece.sequence < in.receiver.due_message()) {
    pop(in);
    moved = true;
  }
  return moved;
}

// Asks the sender to go back to the message due (reliable), unless the receiver has asked for the
// same position within the retransmission interval.
void ProcTransport::State::ask(Inbound& in) {
  if (!in.receiver.ask(now(), settings, &patience_jitter)) return;
  const std::uint64_t sequence = in.receiver.due_message();
  if (in.tcp) {
    send_control(host(in.key.from), FrameKind::Rewind, in.key, sequence);
  } else {
    in.fifo.control->rewind_to.store(sequence, std::memory_order_relaxed);
    in.fifo.control->rewinds.fetch_add(1, std::memory_order_release);
    in.rdma.words_dirty = in.rdma.active;
    if (in.rdma.active) write_credits(in);
  }
}

void ProcTransport::State::acknowledge(Inbound& in) {
  const std::uint64_t taken = in.receiver.due_message();
  if (in.tcp) {
    send_control(host(in.key.from), FrameKind::Ack, in.key, taken);
    return;
  }
  in.fifo.control->acked.store(taken, std::memory_order_release);
  in.rdma.words_dirty = in.rdma.active;
  if (in.rdma.active) write_credits(in);
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
  const PieceHeader header{message.sequence, message.pushed, n, piece_sum(out, message, data, n),
                           out.sender.attempt(message.sequence)};
  append_frame(connection, FrameHeader{epoch, FrameKind::Piece, out.key.from, out.key.to, out.key.channel, 0, header},
               data);
  return true;
}

// The message's next `n` bytes as one piece in the receiver's FIFO; false when it is full.
bool ProcTransport::State::push_slot(Outbound& out, const Outgoing& message, std::size_t n) {
  if (out.rdma.active) return push_rdma(out, message, n);
  if (!credit(out)) return false;
  fill_slot(out, message, n, out.fifo.slot(out.tail), message.bytes <= kAroundCacheAtMost);
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
void ProcTransport::State::fill_slot(const Outbound& out, const Outgoing& message, std::size_t n, std::byte* slot,
                                     bool around_cache) {
  const std::byte* payload = message.payload(message.pushed);
  std::uint64_t sum = 0;
  if (settings.checksums && !message.hooked) {
    sum = copy_with_checksum(slot + kSlotHeader, {payload, n}, around_cache);  // one pass: copy and checksum
  } else {
    if (n > 0) std::memcpy(slot + kSlotHeader, payload, n);
    sum = piece_sum(out, message, slot + kSlotHeader, n);
  }
  const PieceHeader header{message.sequence, message.pushed, n, sum, out.sender.attempt(message.sequence)};
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
    const std::size_t n = std::min(out.piece_bytes, message.bytes - message.pushed);
    const bool room = out.connection != nullptr ? push_frame(out, message, n) : push_slot(out, message, n);
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
bool ProcTransport::State::pump() {
  bool progressed = false;
  const double time = now();
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
