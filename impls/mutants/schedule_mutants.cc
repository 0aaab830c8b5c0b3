// The mutants of the reference schedules: a dropped tail, an off-by-one chunk, a lost root, a
// shifted slot, a double-counted contribution, a write past the end, and a pair that does not
// compose. Each is the reference schedule with one realistic bug put back in.
#include <algorithm>
#include <vector>

#include "impls/algorithms/generator_support.h"
#include "impls/mutants/families.h"

namespace collcheck::mutants {

using generators::at;

// 1. drop-remainder. Old ring implementations cut the buffer into nranks blocks of
// count / nranks elements and never looked at the count % nranks elements left over. Here the
// real ring is generated for the divisible part while the case keeps its count: the tail of
// every output is never written.

Result<Schedule> drop_remainder(const Case& shape, const Knobs& knobs) {
  Case divisible = shape;
  divisible.count = shape.count - shape.count % static_cast<std::size_t>(std::max(shape.nranks, 1));
  Result<Schedule> schedule = make_schedule("ring", divisible, knobs);
  if (schedule) schedule.value().shape = shape;
  return schedule;
}

// 2. chunk-off-by-one. The pipeline's chunk boundaries are computed as k*chunk + 1 for k > 0
// on both sides of every message, so the element at each interior chunk boundary of a block
// is never sent, received or reduced. It shows only when a block has more than one chunk;
// without a chunk knob the mutant pipelines in chunks of kDefaultChunk.

namespace {

constexpr std::size_t kDefaultChunk = 4;

// Offsets where chunk k >= 1 of some block of some channel starts (ring.cc's cut).
std::vector<std::size_t> interior_chunk_starts(const Case& shape, const Knobs& knobs) {
  std::vector<std::size_t> starts;
  const auto channels = static_cast<std::size_t>(knobs.channels);
  const auto n = static_cast<std::size_t>(shape.nranks);
  for (std::size_t c = 0; c < channels; ++c) {
    const Slice part = slice(shape.count, channels, c);
    for (std::size_t b = 0; b < n; ++b) {
      const Slice block = slice(part.count, n, b);
      for (std::size_t k = 1; k < generators::chunk_count(block.count, knobs.chunk); ++k) {
        starts.push_back(part.offset + block.offset + k * knobs.chunk);
      }
    }
  }
  std::sort(starts.begin(), starts.end());
  return starts;
}

void skip_first_element(Range& range) {
  ++range.offset;
  --range.count;
}

}  // namespace

Result<Schedule> chunk_off_by_one(const Case& shape, const Knobs& knobs) {
  Knobs chunked = knobs;
  if (chunked.chunk == 0) chunked.chunk = kDefaultChunk;
  Result<Schedule> schedule = make_schedule("ring", shape, chunked);
  if (!schedule) return schedule;
  const std::vector<std::size_t> starts = interior_chunk_starts(shape, chunked);
  auto at_boundary = [&](const Range& range) { return std::binary_search(starts.begin(), starts.end(), range.offset); };
  for (Participant& participant : schedule.value().participants) {
    for (Step& step : participant.steps) {
      if (!is_message(step)) continue;
      // A message's ranges all start at the chunk's offset (ring.cc), so both ends agree.
      if (step.reads() && at_boundary(step.from)) skip_first_element(step.from);
      if (step.writes() && at_boundary(step.to)) skip_first_element(step.to);
    }
  }
  return schedule;
}

// 3. root-ignored. The tree is always built for root 0 (a root argument that never reaches the
// tree builder). A broadcast then spreads rank 0's input; a reduce collects the result on
// rank 0, which has no output, so it lands in rank 0's scratch and the real root's output is
// never written. Correct whenever the root is 0.

namespace {

void output_to_scratch(Schedule& schedule, int rank) {
  Participant& participant = schedule.participants[static_cast<std::size_t>(rank)];
  participant.scratch = std::max(participant.scratch, schedule.shape.count);
  for (Step& step : participant.steps) {
    if (step.from.buffer == BufferKind::Output) step.from.buffer = BufferKind::Scratch;
    if (step.to.buffer == BufferKind::Output) step.to.buffer = BufferKind::Scratch;
  }
}

}  // namespace

Result<Schedule> root_ignored(const Case& shape, const Knobs& knobs) {
  Case rooted_at_zero = shape;
  rooted_at_zero.root = 0;
  Result<Schedule> schedule = make_schedule("binomial", rooted_at_zero, knobs);
  if (!schedule || shape.root == 0) return schedule;
  schedule.value().shape = shape;
  if (shape.collective == Collective::Reduce) output_to_scratch(schedule.value(), 0);
  return schedule;
}

// 4. allgather-order. The output slot of a block is computed from the rank that forwarded it
// rather than the rank it came from, so every block lands one slot further on: slot b+1 holds
// rank b's data, consistently on every rank (so ranks agree; only the oracle sees it).

Result<Schedule> allgather_order(const Case& shape, const Knobs& knobs) {
  Result<Schedule> schedule = make_schedule("ring", shape, knobs);
  if (!schedule || shape.count == 0) return schedule;
  const std::size_t count = shape.count;
  const std::size_t total = count * static_cast<std::size_t>(shape.nranks);
  for (Participant& participant : schedule.value().participants) {
    for (Step& step : participant.steps) {
      for (Range* range : {&step.from, &step.to}) {
        if (range->buffer == BufferKind::Output && range->count > 0) range->offset = (range->offset + count) % total;
      }
    }
  }
  return schedule;
}

// 5. own-twice. Rank 0's reducing receive already computes input ⊕ received, and then the
// rank adds its input to that partial again (the accumulator initialised with the input and
// the input reduced in as well): its contribution counts twice in every block it reduces.
// Invisible for min and max, where x ⊕ x = x.

Result<Schedule> own_twice(const Case& shape, const Knobs& knobs) {
  Result<Schedule> schedule = make_schedule("ring", shape, knobs);
  if (!schedule) return schedule;
  Participant& rank0 = schedule.value().participants[0];
  check_no_dependencies(rank0);
  std::vector<Step> steps;
  steps.reserve(rank0.steps.size() * 2);
  for (Step& step : rank0.steps) {
    const bool reduces_in = step.kind == StepKind::RecvReduce;
    steps.push_back(step);
    if (!reduces_in) continue;
    steps.push_back(make_step(StepKind::Reduce, -1, step.from, step.to, step.channel, step.stream));
  }
  rank0.steps = std::move(steps);
  return schedule;
}

// 8. write-past-end. An inclusive end bound (<= count instead of < count) in the last rank's
// closing copy of its final element: it writes one element past the end of its output. The
// output itself is right; only the guard zone behind the buffer shows the damage.

Result<Schedule> write_past_end(const Case& shape, const Knobs& knobs) {
  Result<Schedule> schedule = make_schedule("ring", shape, knobs);
  if (!schedule || shape.count == 0) return schedule;
  const std::size_t count = shape.count;
  schedule.value().copy(shape.nranks - 1, at(BufferKind::Output, count - 1, 1), at(BufferKind::Output, count, 1));
  return schedule;
}

// 14. gather-rotated. A backend whose all-reduce and reduce-scatter are right but whose
// all-gather is allgather-order's: composing its reduce-scatter and all-gather no longer gives
// its all-reduce (the composition property), and its all-gather alone fails the oracle.
Result<Schedule> gather_rotated(const Case& shape, const Knobs& knobs) {
  return shape.collective == Collective::AllGather ? allgather_order(shape, knobs) : ring_schedule(shape, knobs);
}

}  // namespace collcheck::mutants
