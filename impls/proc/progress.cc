// The proc transport's progress: posting sends, taking receives (each piece checked against its
// sequence and checksum), and pushing messages into the receivers' FIFOs and sockets as room
// frees up, without waiting anywhere; with `reliable`, acks and go-back-N retransmission.
#include "impls/proc/progress.h"

#include <algorithm>
#include <cstring>
#include <iterator>

#include "reference/random.h"

namespace collcheck {

using namespace proc;

// Before a step writes [at, at + bytes): every lazy message it overlaps is copied aside first
// (the unsent rest; reliable: all of it, since it may be sent again), so that the message carries
// the bytes it had when it was posted.
void ProcTransport::State::protect(const std::byte* at, std::size_t bytes) {
  if (lazy == 0 || bytes == 0) return;
  for (Outbound& o : outbound) {
    for (Outgoing& m : o.queue) {
      const std::size_t keep = reliable ? 0 : m.pushed;
      if (m.lazy() && at < m.source + m.bytes && m.source + keep < at + bytes) {
        m.stage(keep);
        --lazy;
      }
    }
  }
}

void ProcTransport::State::settle() {
  for (Outbound& o : outbound) {
    for (Outgoing& m : o.queue) {
      if (m.lazy()) m.stage(reliable ? 0 : m.pushed);
    }
  }
  lazy = 0;
}

// One transmission through the hook: the per-piece checksums of the pristine bytes first, then
// the hook gets its own copy to change. A reorder is not honoured for the last message of a call,
// which has no next message to wait for.
void ProcTransport::State::decide(Outbound& o, Outgoing& m) {
  if (checksums && m.sums.empty()) {
    for (std::size_t offset = 0; offset < m.bytes || offset == 0; offset += o.piece_bytes) {
      m.sums.push_back(checksum({m.at(offset), std::min(o.piece_bytes, m.bytes - offset)}));
    }
  }
  if (reliable) m.wire.assign(m.at(0), m.at(0) + m.bytes);  // the pristine copy stays for retransmissions
  else m.wire = std::move(m.owned);
  const double time = now();
  const Message message{o.key.from, o.key.to, o.key.channel, m.sequence, m.bytes, time, static_cast<int>(m.attempt)};
  const SendDecision decision = options.hook->on_send(message, m.wire);
  m.hooked = true;
  m.dropped = decision.drop;
  m.not_before = time + decision.delay;
  m.copies = std::max(0, decision.duplicates);
  m.held = decision.reorder && m.sequence % o.per_call + 1 < o.per_call;
  m.held_until = time + kReorderWindow;
}

void ProcTransport::State::post(const Hosted& h, const Step& step, const StepLink& link) {
  Outbound& o = outbound[static_cast<std::size_t>(link.link)];
  Outgoing m;
  m.sequence = call * o.per_call + link.ordinal;
  m.bytes = step.from.count * element;
  m.source = address(h, step.from);
  auto place = o.queue.end();
  while (place != o.queue.begin() && std::prev(place)->sequence > m.sequence) --place;
  place = o.queue.insert(place, std::move(m));
  if (options.hook != nullptr) {
    place->stage(0);  // the hook may change the payload, so it sees a copy, taken now
    decide(o, *place);
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
  }
}

// What is wrong with a piece that is not a duplicate, where byte `received` of message `sequence`
// (`bytes` long) is due; "" when it may be used.
std::string ProcTransport::State::problem(const PieceHeader& piece, const std::byte* data, std::uint64_t sequence,
                                          std::size_t received, std::size_t bytes) const {
  if (piece.sequence != sequence || piece.offset != received) {
    return "byte " + std::to_string(piece.offset) + " of message " + std::to_string(piece.sequence) +
           " arrived where byte " + std::to_string(received) + " of message " + std::to_string(sequence) +
           " was due (a message lost or out of order)";
  }
  if (received + piece.bytes > bytes) {
    return "a piece of " + std::to_string(piece.bytes) + " bytes at byte " + std::to_string(received) +
           " of message " + std::to_string(sequence) + ", which has " + std::to_string(bytes);
  }
  if (checksums && checksum({data, piece.bytes}) != piece.checksum) {
    return "message " + std::to_string(sequence) + " damaged: the piece at byte " + std::to_string(received) + " (" +
           std::to_string(piece.bytes) + " bytes, transmission " + std::to_string(piece.attempt) +
           ") does not match its checksum";
  }
  return "";
}

Taken ProcTransport::State::receive(Hosted& h, const Step& step, const StepLink& link, Stream& stream) {
  Inbound& in = inbound[static_cast<std::size_t>(link.link)];
  const std::uint64_t sequence = call * in.per_call + link.ordinal;
  if (in.consumed != sequence) return Taken::Nothing;  // an earlier message is not yet taken
  const std::size_t bytes = step.to.count * element;
  std::byte* to = address(h, step.to);
  const std::byte* from = step.kind == StepKind::RecvReduce ? address(h, step.from) : nullptr;
  if (!stream.started) protect(to, bytes);
  Taken taken = Taken::Nothing;
  PieceHeader piece{};
  const std::byte* data = nullptr;
  while (peek(in, piece, data)) {
    taken = Taken::Some;
    if (piece.sequence < sequence || (piece.sequence == sequence && piece.offset < stream.received)) {
      pop(in);  // a duplicate, or a retransmission of what was taken already
      continue;
    }
    const std::string wrong = problem(piece, data, sequence, stream.received, bytes);
    if (!wrong.empty()) {
      if (!reliable) {
        fail(participant_name(h.participant) + ": from " + participant_name(in.key.from) + " on channel " +
             std::to_string(in.key.channel) + " (call " + std::to_string(call) + "): " + wrong);
        return taken;
      }
      pop(in);
      ask(in, sequence, stream.received);
      continue;
    }
    if (piece.bytes > 0) {
      if (from == nullptr) std::memcpy(to + stream.received, data, piece.bytes);
      else reduce(from + stream.received, data, to + stream.received, piece.bytes);
    }
    stream.received += piece.bytes;
    stream.started = true;
    pop(in);
    if (reliable) in.quiet_since = now();
    if (stream.received == bytes) {
      ++in.consumed;
      in.waiting = false;
      if (reliable) acknowledge(in);
      return Taken::All;
    }
  }
  if (reliable) {
    if (!in.waiting) {
      in.waiting = true;
      in.quiet_since = now();
    } else if (now() - in.quiet_since > (in.patience > 0 ? in.patience : retransmit)) {
      ask(in, sequence, stream.received);
    }
  }
  return taken;
}

// Pieces of messages already taken (duplicates, retransmissions) still in a stream that no step
// is reading from now: taken out, so that they do not fill the FIFO.
bool ProcTransport::State::sweep(Inbound& in) {
  bool moved = false;
  PieceHeader piece{};
  const std::byte* data = nullptr;
  while (peek(in, piece, data) && piece.sequence < in.consumed) {
    pop(in);
    moved = true;
  }
  return moved;
}

// Asks the sender to go back to `sequence` (reliable), at most once per position and silence.
void ProcTransport::State::ask(Inbound& in, std::uint64_t sequence, std::size_t offset) {
  const double time = now();
  if (in.asked_sequence == sequence && in.asked_offset == offset && time - in.quiet_since <= retransmit) return;
  in.asked_sequence = sequence;
  in.asked_offset = offset;
  in.quiet_since = time;
  // Jittered between 0.75 and 1.25 of the interval, so that asks cannot keep landing in the down
  // half of a flapping link; all of them together stay within the timeout (configure()).
  in.patience = retransmit * (0.75 + 0.5 * unit_interval(mix64(static_cast<std::uint64_t>(rank) ^ mix64(++asks))));
  if (in.tcp) {
    send_control(host(in.key.from), FrameKind::Rewind, in.key, sequence);
  } else {
    in.fifo.control->rewind_to.store(sequence, std::memory_order_relaxed);
    in.fifo.control->rewinds.fetch_add(1, std::memory_order_release);
  }
}

void ProcTransport::State::acknowledge(Inbound& in) {
  if (in.tcp) send_control(host(in.key.from), FrameKind::Ack, in.key, in.consumed);
  else in.fifo.control->acked.store(in.consumed, std::memory_order_release);
}

// The message to push now: the one at `next`, or, when that one is held back, the one after it.
Outgoing* ProcTransport::State::choose(Outbound& o, double time) {
  while (o.cursor < o.queue.size()) {
    Outgoing& m = o.queue[o.cursor];
    if (m.sequence != o.next) return nullptr;  // not posted yet
    if (m.done() && m.copies == 0) {  // pushed ahead of the held message before it
      finished(o, m);
      continue;
    }
    if (!m.held || time >= m.held_until) return m.not_before <= time ? &m : nullptr;
    if (o.cursor + 1 == o.queue.size() || o.queue[o.cursor + 1].sequence != m.sequence + 1) return nullptr;
    Outgoing& after = o.queue[o.cursor + 1];
    return after.not_before <= time ? &after : nullptr;
  }
  return nullptr;
}

// Pushes the message's pieces while there is room; true when all of it is out.
bool ProcTransport::State::push(Outbound& o, Outgoing& m, bool& moved) {
  if (m.dropped) {  // this transmission never arrives
    m.pushed = m.bytes;
    m.started = true;
    m.copies = 0;
    moved = true;
    return true;
  }
  while (!m.done()) {
    const std::size_t n = std::min(o.piece_bytes, m.bytes - m.pushed);
    const std::byte* data = m.payload(m.pushed);
    // Room first: a full FIFO or window is polled again and again, the checksum taken once.
    std::uint64_t sum = 0;
    if (o.connection != nullptr) {
      Connection& c = *o.connection;
      if (c.out.size() - c.out_sent >= kTcpWindow) return false;
      if (checksums) sum = m.hooked ? m.sums[m.pushed / o.piece_bytes] : checksum({data, n});
      const PieceHeader header{m.sequence, m.pushed, n, sum, m.attempt};
      append_frame(c, FrameHeader{epoch, FrameKind::Piece, o.key.from, o.key.to, o.key.channel, 0, header}, data);
    } else {
      if (o.tail - o.head_seen >= o.fifo.shape.slots) {
        o.head_seen = o.fifo.control->head.load(std::memory_order_acquire);
        if (o.tail - o.head_seen >= o.fifo.shape.slots) return false;
      }
      std::byte* slot = o.fifo.slot(o.tail);
      if (n > 0) std::memcpy(slot + kSlotHeader, data, n);
      // Taken over the slot, just written and still in cache (the user's bytes may be in memory).
      if (checksums) sum = m.hooked ? m.sums[m.pushed / o.piece_bytes] : checksum({slot + kSlotHeader, n});
      const PieceHeader header{m.sequence, m.pushed, n, sum, m.attempt};
      std::memcpy(slot, &header, sizeof header);
      o.fifo.control->tail.store(++o.tail, std::memory_order_release);
    }
    m.pushed += n;
    m.started = true;
    moved = true;
  }
  return true;
}

// After a message's transmission is out: its duplicates next; a message pushed ahead releases the
// held one before it; otherwise the stream moves on (and, unreliable, forgets what is out).
void ProcTransport::State::finished(Outbound& o, Outgoing& m) {
  if (m.copies > 0) {
    --m.copies;
    m.pushed = 0;
    m.started = false;
    return;
  }
  if (&m != &o.queue[o.cursor]) {
    o.queue[o.cursor].held = false;
    return;
  }
  ++o.next;
  ++o.cursor;
  if (reliable) return;
  while (o.cursor > 0) {
    if (o.queue.front().lazy()) --lazy;
    o.queue.pop_front();
    --o.cursor;
  }
}

// Reliable: forgets what the receiver has taken, and goes back where it asks to.
bool ProcTransport::State::heed_receiver(Outbound& o) {
  bool moved = false;
  if (o.connection == nullptr) {
    o.acked = std::max(o.acked, o.fifo.control->acked.load(std::memory_order_acquire));
    const std::uint64_t rewinds = o.fifo.control->rewinds.load(std::memory_order_acquire);
    if (rewinds != o.rewinds_seen) {
      o.rewinds_seen = rewinds;
      rewind(o, o.fifo.control->rewind_to.load(std::memory_order_relaxed));
      moved = true;
    }
  }
  while (o.cursor > 0 && o.queue.front().sequence < o.acked) {
    if (o.queue.front().lazy()) --lazy;
    o.queue.pop_front();
    --o.cursor;
    moved = true;
  }
  return moved;
}

// Go-back-N: every message from `to` on that has been (partly) sent goes again, through the hook
// again with its attempt counted; one sent more than `retries` times again ends the run.
void ProcTransport::State::rewind(Outbound& o, std::uint64_t to) {
  to = std::max(to, o.acked);
  if (to > o.next) return;
  std::size_t cursor = o.queue.size();
  for (std::size_t i = 0; i < o.queue.size(); ++i) {
    Outgoing& m = o.queue[i];
    if (m.sequence < to) continue;
    cursor = std::min(cursor, i);
    if (!m.started) {  // not sent yet (a delay or a reorder holds it): nothing to repeat
      m.held = false;
      continue;
    }
    ++m.attempt;
    // Only the message asked for counts against its retries; the later ones are resent along.
    if (m.sequence == to && static_cast<int>(++m.asked) > retries) {
      fail(participant_name(o.key.from) + ": message " + std::to_string(m.sequence) + " to " +
           participant_name(o.key.to) + " on channel " + std::to_string(o.key.channel) + " (call " +
           std::to_string(call) + ") not taken after " + std::to_string(retries) + " retransmissions");
      return;
    }
    m.pushed = 0;
    m.started = false;
    m.copies = 0;
    m.held = false;
    m.dropped = false;
    m.not_before = 0;
    if (m.hooked) decide(o, m);
  }
  o.cursor = cursor;
  o.next = to;
}

bool ProcTransport::State::drain(Outbound& o, double time) {
  bool moved = reliable && heed_receiver(o);
  while (failure.empty()) {
    Outgoing* m = choose(o, time);
    if (m == nullptr || !push(o, *m, moved)) break;
    finished(o, *m);
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
      failure = "rank " + std::to_string(header.from) + " stopped the run: " +
                std::string(reinterpret_cast<const char*>(payload.data()), payload.size());
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
    for (Outbound& o : outbound) progressed |= drain(o, time);
  }
  for (Connection& c : peers.connections) {
    if (c.fd < 0) continue;
    std::string error;
    progressed |= write_some(c, error);
    progressed |= read_frames(c, spare, error, [this](const FrameHeader& header, std::vector<std::byte> payload) {
      deliver(header, std::move(payload));
    });
    if (!error.empty() && failure.empty()) failure = error;
  }
  if (sweeping && !meeting) {
    for (Inbound& in : inbound) progressed |= sweep(in);
  }
  return progressed;
}

}  // namespace collcheck
