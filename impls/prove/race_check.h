// Races between the streams of one participant (MSCCL's thread blocks of one GPU): two steps that
// nothing in the schedule orders and that touch the same element, one of them writing it. Private
// to impls/prove/.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <unordered_map>
#include <vector>

#include "impls/prove/provenance.h"

namespace collcheck::provenance {

// The check works as follows. Every stream of the schedule (each participant's, numbered in
// order) has a vector `Clock`: for every stream, how many of its steps are known to come before.
// A step starts from its stream's clock, joins the clocks of the steps it waits for (`after`) and,
// for a receive, of the send whose message it takes, then ticks its own stream: step A comes
// before step B exactly when B's clock has counted A's tick (the happens-before order of the
// schedule: stream order, waits, messages). Every element that a step reads or writes keeps its
// last write and the reads since, each as (stream, tick, step); a read unordered with the last
// write, or a write unordered with the last write or a read since, is a race. Where there is
// none, every interleaving of the streams computes the same values as the one the proof runs (a
// step then sees the same elements whatever the order), so that one proof covers them all.
class RaceCheck {
 public:
  using Clock = std::vector<std::uint32_t>;

  // An access to an element: by which stream, at which of its ticks, in which step (of its participant).
  struct Access {
    std::uint32_t stream = 0;
    std::uint32_t tick = 0;
    int step = 0;
  };

  explicit RaceCheck(std::size_t streams) : stream_clocks_(streams, Clock(streams, 0)) {}

  // Starts step `step` of participant p on `stream`, after the earlier steps of p it waits for
  // (`after`, whose clocks were kept) and the send of the message it receives (`message`'s clock,
  // or null). `keep`: its clock is kept, for later steps that wait for it.
  void begin(std::uint32_t stream, int p, int step, std::span<const int> after, const Clock* message, bool keep);
  const Clock& clock() const { return *current_; }  // the step's, once begun

  // The current step reads or writes an element: the earlier access it races with, if any.
  std::optional<Access> read(const Element* element);
  std::optional<Access> write(const Element* element);

 private:
  struct History {
    std::optional<Access> write;
    std::vector<Access> reads;  // since the write, one per stream
  };
  bool ordered(const Access& earlier) const { return (*current_)[earlier.stream] >= earlier.tick; }

  std::vector<Clock> stream_clocks_;           // each stream's last step's
  std::map<std::pair<int, int>, Clock> kept_;  // (participant, step): of steps others wait for
  std::unordered_map<const Element*, History> elements_;
  const Clock* current_ = nullptr;  // the current step's stream's
  Access now_;
};

}  // namespace collcheck::provenance
