// The proc transport's receiving side: peeking at and taking the pieces of a stream, each checked
// against its sequence and checksum before it lands (copied or reduced into place), dropping
// duplicates, and, reliable, waiting, asking the sender to go back and acknowledging what was
// taken. The sending side and the progress loop are progress.cc's.
#include <algorithm>
#include <bit>
#include <chrono>
#include <cstdint>
#include <cstring>

#include "impls/proc/progress.h"

#if defined(__x86_64__)
#include <emmintrin.h>
#endif

namespace collcheck {

using namespace proc;

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

// A piece taken (checked and landed) in `taking`: the moving average of its way's cost per byte,
// published for the sender (a clock that did not move counts a nanosecond, as the sender's does).
void took(Inbound& in, const PieceHeader& piece, std::chrono::steady_clock::duration taking) {
  const int way = piece.around_cache != 0 ? 1 : 0;
  const double sample =
      std::max(std::chrono::duration<double>(taking).count(), 1e-9) / static_cast<double>(piece.bytes);
  double& cost = in.taking[way];
  cost = cost == 0 ? sample : (cost + sample) / 2;
  in.fifo.control->taking[way].store(std::bit_cast<std::uint64_t>(cost), std::memory_order_relaxed);
}

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

// Receive and forward (progress.cc, forward_of): lands a piece taken at byte `at` of a receive
// into `to` (copied, or reduced with `from`) and pushes it at once as the next piece of the send
// of `forward` (none: false), where that message is the next to go, everything landed before it is out and
// the receiver's FIFO has a free slot; a piece reduced into a buffer landed around the cache is
// reduced once into a piece of its own, stored into the slot from there and into place around the
// cache. Either way the piece counts as landed for the progress loop, which pushes what was not
// forwarded here. False when the piece was not landed here (the caller lands it). `copied`: a copy
// already landed as its checksum was taken (receive), pushed from the slot it came in.
bool ProcTransport::State::forward_piece(const StepLink* forward, std::byte* to, const std::byte* from,
                                         const std::byte* data, std::size_t at, std::size_t bytes, bool copied) {
  if (forward == nullptr) return false;
  Outbound& out = outbound[static_cast<std::size_t>(forward->link)];
  const std::uint64_t sequence = call * out.per_call + forward->ordinal;
  if (out.cursor >= out.queue.size() || out.queue[out.cursor].sequence != sequence || out.next != sequence) {
    for (Outgoing& message : out.queue) {
      if (message.sequence == sequence) message.landed = at + bytes;
    }
    return false;
  }
  Outgoing& message = out.queue[out.cursor];
  if (message.pushed != at || message.landed != at || bytes != std::min(out.piece_bytes, message.bytes - at) ||
      !credit(out)) {
    message.landed = at + bytes;
    return false;
  }
  if (from == nullptr) {
    if (!copied) land(to, nullptr, data, at, bytes);
    push_slot(out, message, bytes, data);  // the piece as it came, still in this core's cache
  } else {
    // Reduced into place, or first into a piece of its own (then into place around the cache), as
    // the slot is filled (ReducedPiece).
    std::byte* reduced_into = to + at;
    if (streaming_landings) {
      forwarded.resize(std::max(forwarded.size(), bytes));
      reduced_into = forwarded.data();
    }
    const ReducedPiece reduced{from + at, data, reduced_into};
    push_slot(out, message, bytes, reduced_into, &reduced);
    if (streaming_landings) land(to, nullptr, forwarded.data(), at, bytes);
  }
  message.landed = at + bytes;
  message.pushed += bytes;
  message.started = true;
  ++pieces_forwarded;
  if (message.done()) finished(out, message);
  return true;
}

// A piece the stream's receiver did not take: a duplicate (or a retransmission of what was taken)
// is dropped; a fault ends the run (unreliable: false) or is dropped and the sender asked to go
// back (reliable).
bool ProcTransport::State::discard(const Hosted& local, Inbound& in, PieceVerdict verdict, const PieceLabel& piece,
                                   std::size_t bytes) {
  const bool fault = verdict != PieceVerdict::Duplicate;
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

Taken ProcTransport::State::receive(Hosted& local, const Step& step, const StepLink& link, const StepLink* forward) {
  Inbound& in = inbound[static_cast<std::size_t>(link.link)];
  LinkReceiver& receiver = in.receiver;
  const std::uint64_t sequence = call * in.per_call + link.ordinal;
  if (receiver.due_message() != sequence) return Taken::Nothing;  // an earlier message is not yet taken
  Landing landing{address(local, step.to),
                  step.kind == StepKind::RecvReduce ? address(local, step.from) : nullptr,
                  forward,
                  step.to.count * element,
                  settings,
                  false};
  landing.judged.checksums = settings.checks(sequence, in.per_call);
  // A copy lands as its checksum is taken, in one pass over the piece instead of two (take_piece;
  // around the cache where landings stream). A reduction is checked first: landed, it would have
  // used up the bytes it reduced with.
  landing.copy_checked = landing.from == nullptr && landing.judged.checksums && landing.bytes > 0;
  // How long taking a piece of the sender's choosing costs (SlotStores): timed where it is large
  // (and not forwarded: that would time the forwarding too).
  const bool timing = !in.tcp && !in.rdma.active && landing.judged.checksums && forward == nullptr;
  Taken taken = Taken::Nothing;
  PieceHeader piece{};
  const std::byte* data = nullptr;
  while (peek(in, piece, data)) {
    taken = Taken::Some;
    const bool timed = timing && SlotStores::timed(piece.bytes);
    const auto started = timed ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point{};
    const PieceLabel label{piece.sequence, piece.offset, piece.bytes, piece.checksum, piece.attempt};
    const PieceVerdict verdict = take_piece(receiver, landing, label, data);
    if (verdict != PieceVerdict::Take) {
      if (!discard(local, in, verdict, label, landing.bytes)) return taken;
      continue;
    }
    if (timed) took(in, piece, std::chrono::steady_clock::now() - started);
    pop(in);
    if (receiver.take(piece.bytes, landing.bytes, settings.reliable ? now() : 0)) {
      in.waiting = false;
      if (settings.reliable) acknowledge(in);
      return Taken::All;
    }
  }
  if (settings.reliable) keep_waiting(in);
  return taken;
}

// Judges a piece against the receiver's due position and checksum and lands what is taken:
// pushed on at once where it is forwarded, else landed in place. A copy checked as it lands has
// its place judged first and is landed with its checksum taken in the same pass; found damaged so,
// it stays due and its bytes are overwritten by its retransmission (or the run ends).
PieceVerdict ProcTransport::State::take_piece(const LinkReceiver& receiver, const Landing& landing,
                                              const PieceLabel& label, const std::byte* data) {
  LinkSettings judged = landing.judged;
  if (landing.copy_checked) judged.checksums = false;  // taken below, as the piece lands
  const PieceVerdict verdict = receiver.judge(label, {data, label.bytes}, landing.bytes, judged);
  if (verdict != PieceVerdict::Take) return verdict;
  const std::size_t at = receiver.due_byte();
  // Only the bytes this piece writes: by then the sends they hold are often out already.
  protect(landing.to + at, label.bytes);
  if (landing.copy_checked &&
      copy_with_checksum(landing.to + at, {data, label.bytes}, streaming_landings) != label.sum) {
    return PieceVerdict::Damaged;
  }
  const bool pushed_on =
      forward_piece(landing.forward, landing.to, landing.from, data, at, label.bytes, landing.copy_checked);
  if (!pushed_on && !landing.copy_checked) land(landing.to, landing.from, data, at, label.bytes);
  return PieceVerdict::Take;
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

}  // namespace collcheck
