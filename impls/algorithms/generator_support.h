// What the schedule generators share: invariant checks, the cut of the data into channels and
// pipeline chunks, per-participant step shorthands, block ranges and powers of two.
#pragma once

#include <array>
#include <cstddef>
#include <span>
#include <string_view>
#include <utility>
#include <vector>

#include "impls/algorithms/algorithms.h"
#include "impls/schedule/schedule.h"

namespace collcheck::generators {

// A generator's own invariant. A failure is a bug in the generator, never bad input (the
// registry validates input first), so it throws std::logic_error naming the invariant. The test is
// inline and the throw out of line: generators check an invariant per step they make.
[[noreturn]] void broken(std::string_view invariant);
inline void check(bool condition, std::string_view invariant) {
  if (!condition) [[unlikely]]
    broken(invariant);
}

// An empty schedule of `algorithm` for `shape`: one participant per rank, no steps.
Schedule start(const Case& shape, std::string_view algorithm);

// One pipeline piece: elements [offset, offset + count) of a span, moved on `channel`.
struct Piece {
  int channel;
  std::size_t offset;
  std::size_t count;
};

// The span [0, length) cut for pipelining: channel c owns slice(length, channels, c), and each
// channel's slice is cut into consecutive chunks of at most `chunk` elements (0: one chunk).
// Empty pieces are left out; pieces come channel by channel, in order.
std::vector<Piece> pieces(std::size_t length, const Knobs& knobs);

// The k-th chunk of at most `chunk` elements (0: the whole) of a span of `length`, as an offset
// into that span; empty where the span has fewer than k+1 chunks.
Slice chunk_of(std::size_t length, std::size_t chunk, std::size_t k);
// How many chunks chunk_of() cuts a span of `length` into (0 for an empty span).
std::size_t chunk_count(std::size_t length, std::size_t chunk);

// Steps of one participant; the step runs on the stream of its channel, like the
// shorthands of Schedule. An empty message is an invariant failure (callers skip both ends);
// copy() leaves out an empty copy and a copy onto itself.
// The *_step forms make the step alone, for a generator written per participant (a
// StepSequence that yields them); copy_step() is not empty nor a copy onto itself.
inline Step send_step(int to, Range from, int channel) {
  check(from.count > 0, "no empty message is sent");
  return Step{StepKind::Send, to, from, {}, channel, channel};
}
inline Step recv_step(int from_peer, Range to, int channel) {
  check(to.count > 0, "no empty message is received");
  return Step{StepKind::Recv, from_peer, {}, to, channel, channel};
}
inline Step recv_reduce_step(int from_peer, Range from, Range to, int channel) {
  check(to.count > 0 && from.count == to.count, "a reducing receive is non-empty and reads what it writes");
  return Step{StepKind::RecvReduce, from_peer, from, to, channel, channel};
}
inline bool copy_needed(Range from, Range to) {
  check(from.count == to.count, "a copy writes what it reads");
  return from.count > 0 && !(from == to);
}
inline Step copy_step(Range from, Range to, int channel) {
  check(copy_needed(from, to), "a copy step moves something elsewhere");
  return Step{StepKind::Copy, -1, from, to, channel, channel};
}
void send(Schedule& schedule, int participant, int to, Range from, int channel);
void recv(Schedule& schedule, int participant, int from_peer, Range to, int channel);
void recv_reduce(Schedule& schedule, int participant, int from_peer, Range from, Range to, int channel);
void copy(Schedule& schedule, int participant, Range from, Range to, int channel);

// Element offsets of a set of blocks: for each block b listed, [b*block + piece.offset,
// + piece.count) of a buffer whose blocks are `block` elements apart; neighbours that touch
// are merged, so the whole of consecutive blocks is one range. Both ends of a message compute
// the same list, which keeps the k-th send and the k-th receive the same size.
std::vector<Slice> block_ranges(const std::vector<int>& blocks, std::size_t block, const Piece& piece);

// Piece `piece` of block b of a buffer whose blocks are `block` elements apart (all-to-all's
// block per peer).
inline Slice block_of(int b, std::size_t block, const Piece& piece) {
  return Slice{static_cast<std::size_t>(b) * block + piece.offset, piece.count};
}

inline Range at(BufferKind buffer, Slice where) { return Range{buffer, where.offset, where.count}; }
inline Range at(BufferKind buffer, std::size_t offset, std::size_t count) { return Range{buffer, offset, count}; }

// The elements of a piece in one of the participant's buffers.
inline Range input(const Piece& piece) { return at(BufferKind::Input, piece.offset, piece.count); }
inline Range output(const Piece& piece) { return at(BufferKind::Output, piece.offset, piece.count); }
inline Range scratch(const Piece& piece) { return at(BufferKind::Scratch, piece.offset, piece.count); }

// Steps a per-participant generator makes and yields a batch at a time (Sequence walks a yielded
// span, impls/schedule/step_sequence.h), since resuming its coroutine costs about as much as making
// a step. A generator adds steps, yields `take()` once `room()` is short of a turn's steps, and
// yields what is left at its end; take() empties the batch, whose steps stay where they are until
// the coroutine resumes and adds more.
class StepBatch {
 public:
  static constexpr std::size_t kSteps = 16;

  void add(const Step& step) {
    check(made_ < kSteps, "a batch has room for each step added");
    steps_[made_++] = step;
  }
  // A copy of `from` to `to`, left out where it moves nothing (copy_needed).
  void add_copy(Range from, Range to, int channel) {
    if (copy_needed(from, to)) add(Step{StepKind::Copy, -1, from, to, channel, channel});
  }
  std::size_t room() const { return kSteps - made_; }
  bool empty() const { return made_ == 0; }
  std::span<const Step> take() { return {steps_.data(), std::exchange(made_, 0)}; }

 private:
  std::array<Step, kSteps> steps_;
  std::size_t made_ = 0;
};

// A schedule of `shape`'s ranks made on demand: participant p's steps are rank_steps(p).
Schedule on_demand(const Case& shape, std::string_view algorithm, MakeSteps rank_steps);

// A single rank's schedule: its whole input of `count` elements copied into its output, where
// out of place and non-empty.
void copy_alone(Schedule& schedule, std::size_t count);

// The largest power of two at most n (n >= 1), and the number of doublings of 1 that reach n.
int floor_power_of_two(int n);
int ceil_log2(int n);

// value mod n in 0..n-1, also for negative values (n > 0): ranks around a ring, one division.
inline int modulo(int value, int n) {
  const int remainder = value % n;
  return remainder < 0 ? remainder + n : remainder;
}
// The same for a value at most one turn of the ring away (-n < value < 2n), without a division.
inline int wrapped(int value, int n) {
  if (value >= n) return value - n;
  return value < 0 ? value + n : value;
}

// The rank at `position` counted from `root` around the ranks (position 0 is the root).
inline int absolute(int position, int root, int nranks) { return (position + root) % nranks; }

}  // namespace collcheck::generators
