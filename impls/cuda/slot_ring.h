// The message streams of the cuda transport's engine (slot_engine.h says how they are used): a
// ring of slots in the receiver's memory with completion flags and a credit word, and the
// messages a sender has staged for it.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <utility>
#include <vector>

#include "impls/cuda/device.h"
#include "impls/cuda/slot_engine.h"
#include "impls/link/protocol.h"

namespace collcheck::cuda {

using Clock = std::chrono::steady_clock;

// One slot's header: the completion flag (the number of the piece the slot holds, plus one) and
// the piece's label, written before the flag; with peer reads, where the piece lies in the
// sender's memory (null: in the slot).
struct SlotHeader {
  std::atomic<std::uint64_t> ready{0};
  PieceLabel label;
  const std::byte* source = nullptr;
};

// A message staged by its sender: its bytes as they will travel (the hook may have changed them
// after their checksums were taken) and what the hook decided.
struct Outgoing {
  std::uint64_t sequence = 0;
  StagedBytes bytes;                // in the sender's device memory
  StagedBytes pristine;             // reliable, under a hook: the bytes before it, for retransmissions
  std::vector<std::uint64_t> sums;  // per piece, of the bytes the sender meant to send
  std::size_t next_piece = 0;       // over every transmission: pieces * (1 + duplicates)
  Clock::time_point not_before;
  bool held = false;  // a reorder: waits for the stream's next message, at most until held_until
  Clock::time_point held_until;
  bool released = false;  // goes out of sequence (a reorder's pair)
  bool dropped = false;
  int duplicates = 0;
  // Peer reads: the ring's piece count after the last piece that points into `bytes` (0: none).
  std::uint64_t lent_until = 0;
};

// The words of a message stream both ends touch: the credit word, and (reliable) the receiver's
// acknowledgement and rewind requests. In the receiver's memory on the host, or in the receiving
// process's shared segment when the ends are processes (process_rings.h).
struct RingControl {
  alignas(64) std::atomic<std::uint64_t> taken{0};  // pieces the receiver has consumed
  // Reliable, written by the receiver: every message before `acked` taken; its latest request to
  // go back to message `rewind_to` (stored before `rewinds` counts it, with release order).
  alignas(64) std::atomic<std::uint64_t> acked{0};
  std::atomic<std::uint64_t> rewind_to{0};
  std::atomic<std::uint64_t> rewinds{0};
};

// One message stream (from, to, channel): the slots (the receiver's memory), their headers and
// the control words (host memory both ends reach), and each end's own state, touched only by that
// end's thread. Where the slots, headers and control live is decided once per run: memory of this
// process (owned here) or memory another process shares (process_rings.h).
struct SlotRing {
  int from = 0, to = 0, channel = 0;
  std::uint64_t per_call = 0;  // messages per call
  RingShape shape;
  std::byte* slots = nullptr;  // shape.slots * shape.slot_bytes, on the receiver's device
  SlotHeader* headers = nullptr;
  RingControl* control = nullptr;
  // What this process made for the ring when both ends are its own (null otherwise).
  DeviceBytes own_slots;
  std::unique_ptr<SlotHeader[]> own_headers;
  std::unique_ptr<RingControl> own_control;
  // The sender's.
  std::uint64_t pushed = 0;
  std::uint64_t next_sequence = 0;
  std::deque<Outgoing> outbox;  // by sequence
  std::deque<Outgoing> sent;    // reliable: pushed, kept until acknowledged
  std::uint64_t rewinds_seen = 0;
  LinkSender sender;
  // Peer reads: staged bytes the receiver may still read, each until `taken` reaches its count.
  std::deque<std::pair<std::uint64_t, StagedBytes>> lent;
  // The receiver's.
  LinkReceiver receiver;

  // Both ends in this process: the slots on the receiver's device, headers and control beside them.
  void place_here(Device& receiving_device) {
    own_slots = DeviceBytes(receiving_device, shape.slots * shape.slot_bytes);
    own_headers = std::make_unique<SlotHeader[]>(shape.slots);
    own_control = std::make_unique<RingControl>();
    slots = own_slots.data();
    headers = own_headers.get();
    control = own_control.get();
  }

  std::byte* slot(std::uint64_t piece) { return slots + (piece % shape.slots) * shape.slot_bytes; }
  SlotHeader& header(std::uint64_t piece) { return headers[piece % shape.slots]; }
  std::size_t pieces(std::size_t bytes) const {
    return bytes == 0 ? 1 : (bytes + shape.slot_bytes - 1) / shape.slot_bytes;
  }
  // Peer reads: the message's bytes are done with here but may still be read by the receiver;
  // kept until it has consumed the pieces that point into them.
  void lend(Outgoing& out) {
    if (out.lent_until > 0 && out.lent_until > control->taken.load(std::memory_order_acquire))
      lent.emplace_back(out.lent_until, std::move(out.bytes));
    out.lent_until = 0;
  }
  // Gives back what the receiver has consumed every piece of.
  void reclaim() {
    if (lent.empty()) return;
    const std::uint64_t taken = control->taken.load(std::memory_order_acquire);
    std::erase_if(lent, [taken](const auto& lending) { return lending.first <= taken; });
  }
};

// A receive or send step's ring, and its ordinal there (the k-th send on a ring in step order is
// message k of the call, and the k-th receive takes it).
struct StepLink {
  int ring = -1;
  std::uint64_t ordinal = 0;
};

}  // namespace collcheck::cuda
