// The cuda engine's messages (slot_engine.h says how they travel): a send staged and checksummed,
// its pieces pushed into free slots, a receive's pieces judged and copied or reduced into place.
#include <algorithm>
#include <chrono>
#include <string>
#include <vector>

#include "impls/cuda/engine.h"

namespace collcheck::cuda {

void Engine::post(ParticipantState& state, int index, const Step& step) {
  const StepLink link = state.links[static_cast<std::size_t>(index)];
  SlotRing& ring = *rings_[static_cast<std::size_t>(link.ring)];
  Outgoing out;
  out.sequence = static_cast<std::uint64_t>(state.call) * ring.per_call + link.ordinal;
  const std::size_t bytes = step.from.count * element_;
  const std::byte* source = at(state, step.from.buffer, step.from.offset);
  out.bytes = DeviceBytes(*state.device, bytes);
  const std::size_t pieces = ring.pieces(bytes);
  for (std::size_t piece = 0; piece < pieces; ++piece) {
    const std::size_t offset = piece * ring.shape.slot_bytes;
    const std::size_t length = std::min(ring.shape.slot_bytes, bytes - offset);
    out.sums.push_back(state.device->copy_with_checksum(out.bytes.data() + offset, source + offset, length));
  }
  const Clock::time_point now = Clock::now();
  out.not_before = now;
  if (options_.hook != nullptr) {
    Message message;
    message.from = ring.from;
    message.to = ring.to;
    message.channel = ring.channel;
    message.sequence = out.sequence;
    message.bytes = bytes;
    message.time = seconds_between(start_, now);
    message.per_call = ring.per_call;
    // The hook sees and may change the bytes on the host; they go back as it left them.
    std::vector<std::byte> wire(bytes);
    state.device->read(wire.data(), out.bytes.data(), bytes);
    const SendDecision decision = options_.hook->on_send(message, wire);
    state.device->write(out.bytes.data(), wire.data(), bytes);
    out.dropped = decision.drop;
    out.duplicates = decision.duplicates;
    out.not_before = now + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(decision.delay));
    // Held back behind the stream's next message, or for the reorder window if none comes (the
    // last message of a call is never held).
    out.held = decision.reorder && LinkSender::may_hold(out.sequence, ring.per_call);
    out.held_until = out.not_before + std::chrono::duration_cast<Clock::duration>(
                                          std::chrono::duration<double>(settings_.reorder_window));
  }
  const auto later = std::upper_bound(ring.outbox.begin(), ring.outbox.end(), out.sequence,
                                      [](std::uint64_t sequence, const Outgoing& o) { return sequence < o.sequence; });
  ring.outbox.insert(later, std::move(out));
}

namespace {

// A held message at the front lets the stream's next one go first once it is staged (both then go
// out of sequence, released), or goes itself when the reorder window has passed; whether it may
// go now.
bool release_held(SlotRing& ring, Clock::time_point now) {
  Outgoing& front = ring.outbox.front();
  if (!front.held) return true;
  if (ring.outbox.size() > 1 && ring.outbox[1].sequence == front.sequence + 1) {
    front.held = false;
    front.released = true;
    ring.outbox[1].released = true;
    std::swap(ring.outbox[0], ring.outbox[1]);
    return true;
  }
  if (now < front.held_until) return false;
  front.held = false;
  return true;
}

}  // namespace

// Pushes the ring's staged pieces in sequence (a reorder's pair released from it) into free
// slots; whether any moved.
bool Engine::pump(Device& device, SlotRing& ring) {
  bool moved = false;
  while (!ring.outbox.empty()) {
    const Clock::time_point now = Clock::now();
    if (!ring.outbox.front().released && ring.outbox.front().sequence != ring.next_sequence) return moved;
    if (now < ring.outbox.front().not_before || !release_held(ring, now)) return moved;
    Outgoing& front = ring.outbox.front();
    const std::size_t pieces = ring.pieces(front.bytes.size());
    const std::size_t transmissions = front.dropped ? 0 : pieces * static_cast<std::size_t>(1 + front.duplicates);
    while (front.next_piece < transmissions) {
      if (ring.pushed - ring.taken.load(std::memory_order_acquire) >= ring.shape.slots) return moved;
      const std::size_t piece = front.next_piece % pieces;
      const std::size_t offset = piece * ring.shape.slot_bytes;
      const std::size_t length =
          std::min(ring.shape.slot_bytes, front.bytes.size() - std::min(offset, front.bytes.size()));
      device.copy(ring.slot(ring.pushed), front.bytes.data() + offset, length);
      SlotHeader& header = ring.header(ring.pushed);
      header.label = PieceLabel{front.sequence, offset, length, front.sums[piece], 0};
      header.ready.store(ring.pushed + 1, std::memory_order_release);
      ++ring.pushed;
      ++front.next_piece;
      moved = true;
    }
    ring.next_sequence = std::max(ring.next_sequence, front.sequence + 1);
    ring.outbox.pop_front();
    moved = true;
  }
  return moved;
}

Progress Engine::receive(ParticipantState& state, StreamState& stream, int index, const Step& step) {
  const StepLink link = state.links[static_cast<std::size_t>(index)];
  SlotRing& ring = *rings_[static_cast<std::size_t>(link.ring)];
  LinkReceiver& receiver = ring.receiver;
  const Clock::time_point now = Clock::now();
  if (!stream.waiting) {
    stream.waiting = true;
    stream.quiet_since = now;
  }
  const std::uint64_t wanted = static_cast<std::uint64_t>(state.call) * ring.per_call + link.ordinal;
  const std::size_t bytes = step.to.count * element_;
  while (receiver.due_message() == wanted) {
    const std::uint64_t piece = ring.taken.load(std::memory_order_relaxed);
    SlotHeader& header = ring.header(piece);
    if (header.ready.load(std::memory_order_acquire) != piece + 1) break;
    const PieceLabel label = header.label;
    const std::byte* data = ring.slot(piece);
    Verdict verdict = judge(*state.device, ring, label, data, bytes);
    if (verdict != Verdict::Take && verdict != Verdict::Duplicate) {
      stop(true, false, stream_text(ring, wanted) + ": " + link_fault_text(verdict, label, receiver, bytes));
      return Progress::Failed;
    }
    if (verdict == Verdict::Take) {
      const std::size_t first = label.offset / element_, count = label.bytes / element_;
      std::byte* to = at(state, step.to.buffer, step.to.offset + first);
      if (step.kind == StepKind::Recv) {
        state.device->copy(to, data, label.bytes);
      } else {
        reduce(*state.device, at(state, step.from.buffer, step.from.offset + first), data, to, count);
      }
    }
    stream.quiet_since = now;
    const bool complete = verdict == Verdict::Take && receiver.take(label.bytes, bytes, 0);
    ring.taken.store(piece + 1, std::memory_order_release);
    if (complete) return Progress::Done;
  }
  // The timeout is clamped below the deadline (resolve()): a wait the deadline ends is the link's.
  if (!settings_.forever && (seconds_between(stream.quiet_since, now) > settings_.timeout || now >= deadline_)) {
    stop(true, false,
         stream_text(ring, wanted) + ": message " + std::to_string(wanted) +
             " did not arrive within the link timeout (" + std::to_string(settings_.timeout) + " s)");
    return Progress::Failed;
  }
  return Progress::Waiting;
}

// The piece's verdict: link/'s judgement of its place (sequence, offset, length), and where it is
// due and checked, its checksum taken on the device whose memory holds it.
Verdict Engine::judge(Device& device, const SlotRing& ring, const PieceLabel& label, const std::byte* data,
                      std::size_t message_bytes) const {
  LinkSettings place = settings_;
  place.checksums = false;
  const Verdict verdict = ring.receiver.judge(label, {}, message_bytes, place);
  if (verdict != Verdict::Take || !settings_.checks(label.sequence, ring.per_call)) return verdict;
  const std::size_t bytes = std::min(label.bytes, ring.shape.slot_bytes);
  return device.checksum(data, bytes) == label.sum ? Verdict::Take : Verdict::Damaged;
}

}  // namespace collcheck::cuda
