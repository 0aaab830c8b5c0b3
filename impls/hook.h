// The one place every executor's sends and waits pass through: fault injection (later) hooks
// in here, and here a participant waiting past its deadline is reported instead of hanging.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

namespace collcheck {

struct Message {
  int from = 0;
  int to = 0;
  int channel = 0;
  std::uint64_t sequence = 0;  // per (from, to, channel), from 0
  std::size_t bytes = 0;
  double time = 0;             // when it was sent (seconds; virtual on `sim`)
};

struct SendDecision {
  bool drop = false;  // the message never arrives
  double delay = 0;   // seconds added to its arrival
};

class LinkHook {
 public:
  virtual ~LinkHook() = default;
  // Called for every message before it enters the fabric; may change the payload.
  virtual SendDecision on_send(const Message&, std::span<std::byte> /*payload*/) { return {}; }
  // The deadline, in seconds from the start of the run, past which a waiting participant is
  // reported and the run ends.
  virtual double deadline() const { return 60; }
};

}  // namespace collcheck
