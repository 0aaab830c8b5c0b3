// The cuda engine's messages (slot_engine.h says how they travel): a send staged and checksummed,
// its pieces pushed into free slots, a receive's pieces judged and copied or reduced into place;
// reliable, the receiver's acknowledgements and requests to go back, and the sender's go-back-N.
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
  out.bytes = state.staging->take(bytes);
  const std::size_t pieces = ring.pieces(bytes);
  for (std::size_t piece = 0; piece < pieces; ++piece) {
    const std::size_t offset = piece * ring.shape.slot_bytes;
    const std::size_t length = std::min(ring.shape.slot_bytes, bytes - offset);
    out.sums.push_back(state.device->copy_with_checksum(out.bytes.data() + offset, source + offset, length));
  }
  if (settings_.reliable && options_.hook != nullptr) {  // a retransmission goes through the hook afresh
    out.pristine = state.staging->take(bytes);
    state.device->copy(out.pristine.data(), out.bytes.data(), bytes);
  }
  decide(*state.device, ring, out, Clock::now());
  const auto later = std::upper_bound(ring.outbox.begin(), ring.outbox.end(), out.sequence,
                                      [](std::uint64_t sequence, const Outgoing& o) { return sequence < o.sequence; });
  ring.outbox.insert(later, std::move(out));
}

// What happens to this transmission of the message: the hook sees it (each retransmission again,
// its attempt counted, from the bytes the sender meant to send) and may drop, delay, duplicate,
// hold back or change it.
void Engine::decide(Device& device, SlotRing& ring, Outgoing& out, Clock::time_point now) {
  out.not_before = now;
  if (options_.hook == nullptr) return;
  const std::size_t bytes = out.bytes.size();
  Message message;
  message.from = ring.from;
  message.to = ring.to;
  message.channel = ring.channel;
  message.sequence = out.sequence;
  message.bytes = bytes;
  message.time = seconds_between(start_, now);
  message.attempt = static_cast<int>(ring.sender.attempt(out.sequence));
  message.per_call = ring.per_call;
  // The hook sees and may change the bytes on the host; they go back as it left them (into fresh
  // bytes where the receiver may still read pieces of an earlier attempt: peer reads).
  std::vector<std::byte> wire(bytes);
  device.read(wire.data(), (settings_.reliable ? out.pristine : out.bytes).data(), bytes);
  const SendDecision decision = options_.hook->on_send(message, wire);
  if (out.lent_until > 0 && out.bytes.pool() != nullptr) {
    StagedBytes fresh = out.bytes.pool()->take(bytes);
    ring.lend(out);
    out.bytes = std::move(fresh);
  }
  device.write(out.bytes.data(), wire.data(), bytes);
  out.dropped = decision.drop;
  out.duplicates = decision.duplicates;
  out.not_before = now + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(decision.delay));
  // Held back behind the stream's next message, or for the reorder window if none comes (the
  // last message of a call is never held).
  out.held = decision.reorder && LinkSender::may_hold(out.sequence, ring.per_call);
  out.held_until = out.not_before +
                   std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(settings_.reorder_window));
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

// Puts piece `piece` of `front` in the ring's next slot: a copy of it, or with peer reads where it
// lies in the staged bytes (lent until the receiver has read it); its label, then its flag.
void Engine::push_piece(Device& device, SlotRing& ring, Outgoing& front, std::size_t piece) {
  const std::size_t offset = std::min(piece * ring.shape.slot_bytes, front.bytes.size());
  const std::size_t length = std::min(ring.shape.slot_bytes, front.bytes.size() - offset);
  SlotHeader& header = ring.header(ring.pushed);
  if (options_.peer_reads) {
    header.source = front.bytes.data() + offset;
    front.lent_until = ring.pushed + 1;
  } else {
    device.copy(ring.slot(ring.pushed), front.bytes.data() + offset, length);
    header.source = nullptr;
  }
  header.label = PieceLabel{front.sequence, piece * ring.shape.slot_bytes, length, front.sums[piece],
                            ring.sender.attempt(front.sequence)};
  header.ready.store(ring.pushed + 1, std::memory_order_release);
  ++ring.pushed;
}

// Pushes the ring's staged pieces in sequence (a reorder's pair released from it) into free
// slots; whether any moved. Reliable, it first heeds the receiver, and keeps what it pushed.
bool Engine::pump(Device& device, SlotRing& ring) {
  ring.reclaim();
  bool moved = settings_.reliable && heed_receiver(device, ring);
  while (!ring.outbox.empty() && !halted()) {
    const Clock::time_point now = Clock::now();
    if (settings_.reliable && ring.outbox.front().sequence < ring.control->acked.load(std::memory_order_acquire)) {
      ring.next_sequence = std::max(ring.next_sequence, ring.outbox.front().sequence + 1);
      ring.lend(ring.outbox.front());
      ring.outbox.pop_front();  // taken already: a retransmission no longer wanted
      moved = true;
      continue;
    }
    if (!ring.outbox.front().released && ring.outbox.front().sequence != ring.next_sequence) return moved;
    if (now < ring.outbox.front().not_before || !release_held(ring, now)) return moved;
    Outgoing& front = ring.outbox.front();
    const std::size_t pieces = ring.pieces(front.bytes.size());
    const std::size_t transmissions = front.dropped ? 0 : pieces * static_cast<std::size_t>(1 + front.duplicates);
    while (front.next_piece < transmissions) {
      if (ring.pushed - ring.control->taken.load(std::memory_order_acquire) >= ring.shape.slots) return moved;
      push_piece(device, ring, front, front.next_piece % pieces);
      ++front.next_piece;
      moved = true;
    }
    ring.next_sequence = std::max(ring.next_sequence, front.sequence + 1);
    if (settings_.reliable) ring.sent.push_back(std::move(front));
    else ring.lend(front);
    ring.outbox.pop_front();
    moved = true;
  }
  return moved;
}

// Reliable: forgets what the receiver has taken, and goes back where it asks to; whether either
// happened.
bool Engine::heed_receiver(Device& device, SlotRing& ring) {
  const std::uint64_t acked = ring.control->acked.load(std::memory_order_acquire);
  const std::size_t kept = ring.sent.size();
  std::erase_if(ring.sent, [&](Outgoing& out) {
    if (out.sequence >= acked) return false;
    ring.lend(out);
    return true;
  });
  ring.sender.acknowledged(acked);
  bool moved = ring.sent.size() != kept;
  const std::uint64_t rewinds = ring.control->rewinds.load(std::memory_order_acquire);
  if (rewinds != ring.rewinds_seen) {
    ring.rewinds_seen = rewinds;
    rewind(device, ring, ring.control->rewind_to.load(std::memory_order_relaxed));
    moved = true;
  }
  return moved;
}

// Go-back-N: every message from `to` on that has gone out (wholly or in part) goes again, through
// the hook again with its attempt counted; the one asked for, sent more than `retries` times
// again, ends the run.
void Engine::rewind(Device& device, SlotRing& ring, std::uint64_t to) {
  to = std::max(to, ring.control->acked.load(std::memory_order_acquire));
  std::vector<Outgoing> again;
  for (auto it = ring.sent.begin(); it != ring.sent.end();) {
    if (it->sequence < to) {
      ++it;
      continue;
    }
    again.push_back(std::move(*it));
    it = ring.sent.erase(it);
  }
  for (auto it = ring.outbox.begin(); it != ring.outbox.end();) {  // partly out: from its first piece
    if (it->sequence < to || it->next_piece == 0) {
      it->held = it->held && it->sequence < to;
      ++it;
      continue;
    }
    again.push_back(std::move(*it));
    it = ring.outbox.erase(it);
  }
  if (again.empty()) return;
  std::sort(again.begin(), again.end(), [](const Outgoing& a, const Outgoing& b) { return a.sequence < b.sequence; });
  const Clock::time_point now = Clock::now();
  for (Outgoing& out : again) {
    ring.sender.retransmit(out.sequence);
    // Only the message asked for counts against its retries; the later ones are resent along.
    if (out.sequence == to && !ring.sender.asked_again(to, settings_)) {
      stop(true, false, stream_text(ring, to) + ": " + link_gave_up_text(to, settings_));
      return;
    }
    out.next_piece = 0;
    out.released = false;
    if (options_.hook == nullptr) {  // nothing to decide: it goes again as it is
      out.held = false;
      out.dropped = false;
      out.duplicates = 0;
      out.not_before = now;
    } else {
      decide(device, ring, out, now);
    }
  }
  ring.next_sequence = again.front().sequence;
  for (Outgoing& out : again) {
    const auto later =
        std::upper_bound(ring.outbox.begin(), ring.outbox.end(), out.sequence,
                         [](std::uint64_t sequence, const Outgoing& o) { return sequence < o.sequence; });
    ring.outbox.insert(later, std::move(out));
  }
}

// Reliable: asks the sender to go back to the message due, unless the receiver has asked for the
// same position within the retransmission interval.
void Engine::ask(ParticipantState& state, SlotRing& ring, Clock::time_point now) {
  if (!ring.receiver.ask(seconds_between(start_, now), settings_, &state.patience)) return;
  ring.control->rewind_to.store(ring.receiver.due_message(), std::memory_order_relaxed);
  ring.control->rewinds.fetch_add(1, std::memory_order_release);
}

Progress Engine::receive(ParticipantState& state, StreamState& stream, int index, const Step& step) {
  const StepLink link = state.links[static_cast<std::size_t>(index)];
  SlotRing& ring = *rings_[static_cast<std::size_t>(link.ring)];
  LinkReceiver& receiver = ring.receiver;
  const Clock::time_point now = Clock::now();
  if (!stream.waiting) {
    stream.waiting = true;
    stream.quiet_since = now;
    receiver.heard(seconds_between(start_, now));
  }
  const std::uint64_t wanted = static_cast<std::uint64_t>(state.call) * ring.per_call + link.ordinal;
  const std::size_t bytes = step.to.count * element_;
  while (receiver.due_message() == wanted) {
    const std::uint64_t piece = ring.control->taken.load(std::memory_order_relaxed);
    SlotHeader& header = ring.header(piece);
    if (header.ready.load(std::memory_order_acquire) != piece + 1) break;
    const PieceLabel label = header.label;
    const std::byte* data = header.source != nullptr ? header.source : ring.slot(piece);
    // A receive that copies lands the piece as it takes the checksum, in one pass (judge).
    std::byte* copy_to =
        step.kind == StepKind::Recv ? at(state, step.to.buffer, step.to.offset + label.offset / element_) : nullptr;
    PieceVerdict verdict = judge(*state.device, ring, label, data, bytes, copy_to);
    if (verdict != PieceVerdict::Take && verdict != PieceVerdict::Duplicate) {
      if (!settings_.reliable) {
        stop(true, false, stream_text(ring, wanted) + ": " + link_fault_text(verdict, label, receiver, bytes));
        return Progress::Failed;
      }
      ring.control->taken.store(piece + 1, std::memory_order_release);  // dropped, and the sender asked to go back
      ask(state, ring, now);
      continue;
    }
    if (verdict == PieceVerdict::Take && copy_to == nullptr) land(state, step, label, data);
    stream.quiet_since = now;
    const bool complete = verdict == PieceVerdict::Take &&
                          receiver.take(label.bytes, bytes, settings_.reliable ? seconds_between(start_, now) : 0);
    ring.control->taken.store(piece + 1, std::memory_order_release);
    if (complete) {
      if (settings_.reliable) ring.control->acked.store(receiver.due_message(), std::memory_order_release);
      return Progress::Done;
    }
  }
  return keep_waiting(state, stream, ring, wanted, now);
}

// A piece taken: copied or reduced into place, on the device whose memory holds it.
void Engine::land(ParticipantState& state, const Step& step, const PieceLabel& label, const std::byte* data) {
  const std::size_t first = label.offset / element_, count = label.bytes / element_;
  std::byte* to = at(state, step.to.buffer, step.to.offset + first);
  if (step.kind == StepKind::Recv) {
    state.device->copy(to, data, label.bytes);
  } else {
    reduce(*state.device, at(state, step.from.buffer, step.from.offset + first), data, to, count);
  }
}

// A receive with nothing more to take: reliable, it asks again when impatient (the sender gives
// up, not the receiver); otherwise silence past the link timeout ends the run.
Progress Engine::keep_waiting(ParticipantState& state, const StreamState& stream, SlotRing& ring, std::uint64_t wanted,
                              Clock::time_point now) {
  if (settings_.reliable) {
    if (ring.receiver.impatient(seconds_between(start_, now), settings_)) ask(state, ring, now);
    return Progress::Waiting;
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
// due and checked, its checksum taken on the device whose memory holds it. With `copy_to` (a
// receive that copies), a piece due is copied there as its checksum is taken: one pass over it,
// and on a GPU one wait instead of two. A damaged piece copied so is harmless: without
// retransmission the run ends, and with it the piece is due again and its next copy lands on the
// same bytes before the receive is done.
PieceVerdict Engine::judge(Device& device, const SlotRing& ring, const PieceLabel& label, const std::byte* data,
                           std::size_t message_bytes, std::byte* copy_to) const {
  LinkSettings place = settings_;
  place.checksums = false;
  const PieceVerdict verdict = ring.receiver.judge(label, {}, message_bytes, place);
  if (verdict != PieceVerdict::Take) return verdict;
  const bool checked = settings_.checks(label.sequence, ring.per_call);
  const std::size_t bytes = std::min(label.bytes, ring.shape.slot_bytes);
  if (copy_to != nullptr && !checked) device.copy(copy_to, data, label.bytes);
  if (!checked) return verdict;
  const std::uint64_t sum =
      copy_to != nullptr ? device.copy_with_checksum(copy_to, data, bytes) : device.checksum(data, bytes);
  return sum == label.sum ? PieceVerdict::Take : PieceVerdict::Damaged;
}

}  // namespace collcheck::cuda
