// The proc transport's progress: posting sends, taking receives, and pushing messages into the
// receivers' FIFOs and sockets as room frees up, without waiting anywhere.
#include "impls/proc_progress.h"

#include <algorithm>
#include <cstring>
#include <iterator>

namespace collcheck {

using namespace proc;

// Before a step writes [at, at + bytes): the unsent rest of every lazy message it overlaps is
// copied aside first, so that the message carries the bytes it had when it was posted.
void ProcTransport::State::protect(const std::byte* at, std::size_t bytes) {
  if (lazy == 0 || bytes == 0) return;
  for (Outbound& o : outbound) {
    for (Outgoing& m : o.queue) {
      if (m.lazy() && at < m.source + m.bytes && m.source + m.pushed < at + bytes) {
        m.stage();
        --lazy;
      }
    }
  }
}

void ProcTransport::State::settle() {
  for (Outbound& o : outbound) {
    for (Outgoing& m : o.queue) {
      if (m.lazy()) m.stage();
    }
  }
  lazy = 0;
}

void ProcTransport::State::post(const Hosted& h, const Step& step, const StepLink& link) {
  Outbound& o = outbound[static_cast<std::size_t>(link.link)];
  Outgoing m;
  m.sequence = call * o.per_call + link.ordinal;
  if (m.sequence >= o.broken_from) return;  // behind a dropped message: never delivered
  m.bytes = step.from.count * element;
  m.source = address(h, step.from);
  if (options.hook != nullptr) {
    // The hook may change the payload, so it sees a copy, taken now.
    m.stage();
    const double time = now();
    const Message message{o.key.from, o.key.to, o.key.channel, m.sequence, m.bytes, time};
    const SendDecision decision = options.hook->on_send(message, m.owned);
    if (decision.drop) {
      o.broken_from = m.sequence;
      while (!o.queue.empty() && o.queue.back().sequence > m.sequence) {
        if (o.queue.back().lazy()) --lazy;
        o.queue.pop_back();
      }
      return;
    }
    m.not_before = time + decision.delay;
  } else {
    ++lazy;
  }
  auto place = o.queue.end();
  while (place != o.queue.begin() && std::prev(place)->sequence > m.sequence) --place;
  o.queue.insert(place, std::move(m));
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
  for (;;) {
    const std::byte* data = nullptr;
    SlotHeader piece{};
    if (in.tcp) {
      if (in.pieces.empty()) return taken;
      piece = SlotHeader{in.pieces.front().sequence, in.pieces.front().data.size()};
      data = in.pieces.front().data.data();
    } else {
      if (in.head == in.tail_seen) in.tail_seen = in.fifo.control->tail.load(std::memory_order_acquire);
      if (in.head == in.tail_seen) return taken;
      const std::byte* slot = in.fifo.slot(in.head);
      std::memcpy(&piece, slot, sizeof piece);
      data = slot + kSlotHeader;
    }
    if (piece.sequence != sequence || stream.received + piece.bytes > bytes) {
      failure = participant_name(h.participant) + ": message " + std::to_string(piece.sequence) + " (" +
                std::to_string(piece.bytes) + " bytes) from " + participant_name(in.key.from) + " where message " +
                std::to_string(sequence) + " of " + std::to_string(bytes) + " bytes was due";
      return taken;
    }
    if (piece.bytes > 0) {
      if (from == nullptr) std::memcpy(to + stream.received, data, piece.bytes);
      else reduce(from + stream.received, data, to + stream.received, piece.bytes);
    }
    stream.received += piece.bytes;
    stream.started = true;
    taken = Taken::Some;
    if (in.tcp) {
      spare.push_back(std::move(in.pieces.front().data));
      in.pieces.pop_front();
    } else {
      in.fifo.control->head.store(++in.head, std::memory_order_release);
    }
    if (stream.received == bytes) {
      ++in.consumed;
      return Taken::All;
    }
  }
}

bool ProcTransport::State::pop_finished(Outbound& o) {
  Outgoing& m = o.queue.front();
  if (!m.done()) return false;
  if (m.lazy()) --lazy;
  o.queue.pop_front();
  ++o.next;
  return true;
}

// Pushes the stream's next messages, in sequence, into the receiver's FIFO while slots are free.
bool ProcTransport::State::drain_shm(Outbound& o, double now) {
  bool progressed = false;
  while (!o.queue.empty()) {
    Outgoing& m = o.queue.front();
    if (m.sequence != o.next || m.sequence >= o.broken_from || m.not_before > now) break;
    while (!m.done()) {
      if (o.tail - o.head_seen >= o.fifo.shape.slots) {
        o.head_seen = o.fifo.control->head.load(std::memory_order_acquire);
        if (o.tail - o.head_seen >= o.fifo.shape.slots) return progressed;
      }
      std::byte* slot = o.fifo.slot(o.tail);
      const std::size_t n = std::min(o.fifo.shape.slot_bytes, m.bytes - m.pushed);
      const SlotHeader header{m.sequence, n};
      std::memcpy(slot, &header, sizeof header);
      if (n > 0) std::memcpy(slot + kSlotHeader, m.at(m.pushed), n);
      o.fifo.control->tail.store(++o.tail, std::memory_order_release);
      m.pushed += n;
      m.started = true;
      progressed = true;
    }
    pop_finished(o);
  }
  return progressed;
}

// The same over TCP: frames of at most one slot, appended to the connection's bounded buffer.
bool ProcTransport::State::drain_tcp(Outbound& o, double now) {
  bool progressed = false;
  Connection& c = *o.connection;
  while (!o.queue.empty()) {
    Outgoing& m = o.queue.front();
    if (m.sequence != o.next || m.sequence >= o.broken_from || m.not_before > now) break;
    while (!m.done()) {
      if (c.out.size() - c.out_sent >= kTcpWindow) return progressed;
      const std::size_t n = std::min(kProcSlotBytes, m.bytes - m.pushed);
      const FrameHeader header{epoch, o.key.from, o.key.to, o.key.channel, m.sequence, n};
      append_frame(c, header, m.at(m.pushed));
      m.pushed += n;
      m.started = true;
      progressed = true;
    }
    pop_finished(o);
  }
  return progressed;
}

void ProcTransport::State::deliver(const FrameHeader& header, std::vector<std::byte> payload) {
  if (header.epoch != epoch) return;  // from a case that ended before this one began
  const auto found = inbound_index.find(Key{header.from, header.to, header.channel});
  if (found == inbound_index.end()) {
    failure = "a frame from " + participant_name(header.from) + " to " + participant_name(header.to) + " on channel " +
              std::to_string(header.channel) + ", which the schedule never sends";
    return;
  }
  inbound[static_cast<std::size_t>(found->second)].pieces.push_back(Piece{header.sequence, std::move(payload)});
}

// Moves every outbound stream and socket along; true when anything moved.
bool ProcTransport::State::pump() {
  bool progressed = false;
  const double time = now();
  for (Outbound& o : outbound) progressed |= o.connection != nullptr ? drain_tcp(o, time) : drain_shm(o, time);
  for (Connection& c : peers.connections) {
    if (c.fd < 0) continue;
    std::string error;
    progressed |= write_some(c, error);
    progressed |= read_frames(c, spare, error, [this](const FrameHeader& header, std::vector<std::byte> payload) {
      deliver(header, std::move(payload));
    });
    if (!error.empty() && failure.empty()) failure = error;
  }
  return progressed;
}

bool ProcTransport::State::outbound_empty() const {
  for (const Outbound& o : outbound) {
    if (!o.queue.empty() && o.queue.front().sequence < o.broken_from) return false;
  }
  for (const Connection& c : peers.connections) {
    if (c.fd >= 0 && c.out_sent < c.out.size()) return false;
  }
  return true;
}

}  // namespace collcheck
