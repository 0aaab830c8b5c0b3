// The mutants: each a reference algorithm with one realistic bug put back in (a dropped tail, an
// off-by-one chunk, a missing stream dependency, a narrow accumulator...), and what catches it.
#include "impls/mutants/mutants.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>

#include "impls/algorithms/generator_support.h"
#include "impls/link/reduce_op.h"
#include "reference/float_format.h"

namespace collcheck {
namespace {

using generators::at;
using generators::check;

// ---------------------------------------------------------------------------------------------
// Shared pieces: case checks and step-list surgery on the reference schedules.

// Rejects a case the hand-written schedules below cannot take, as make_schedule() would.
Status accept_allreduce(const Case& shape) {
  Status valid = validate(shape);
  if (!valid) return valid;
  if (shape.collective != Collective::AllReduce) {
    return Error{"collective", std::string(name(shape.collective)) + ": this mutant implements allreduce only"};
  }
  return Ok{};
}

// The generators never use `after`; the surgery below relies on it to move steps freely.
void check_no_dependencies(const Participant& participant) {
  for (const Step& step : participant.steps) check(step.after.empty(), "the reference steps have no `after`");
}

bool is_message(const Step& step) { return step.sends() || step.receives(); }

Step make_step(StepKind kind, int peer, Range from, Range to, int channel = 0, int stream = 0) {
  Step step;
  step.kind = kind;
  step.peer = peer;
  step.from = from;
  step.to = to;
  step.channel = channel;
  step.stream = stream;
  return step;
}

// out[i] = combine(a[i], b[i]) for packed float elements, computed on decoded doubles.
template <typename Combine>
void reduce_decoded(DType dtype, const std::byte* a, const std::byte* b, std::byte* out, std::size_t count,
                    Combine combine) {
  const std::size_t size = size_of(dtype);
  for (std::size_t i = 0; i < count; ++i) {
    std::uint64_t x = 0, y = 0;
    std::memcpy(&x, a + i * size, size);
    std::memcpy(&y, b + i * size, size);
    const std::uint64_t result = encode(dtype, combine(decode(dtype, x), decode(dtype, y)));
    std::memcpy(out + i * size, &result, size);
  }
}

// ---------------------------------------------------------------------------------------------
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

// ---------------------------------------------------------------------------------------------
// 2. chunk-off-by-one. The pipeline's chunk boundaries are computed as k*chunk + 1 for k > 0
// on both sides of every message, so the element at each interior chunk boundary of a block
// is never sent, received or reduced. It shows only when a block has more than one chunk;
// without a chunk knob the mutant pipelines in chunks of kDefaultChunk.

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

// ---------------------------------------------------------------------------------------------
// 3. root-ignored. The tree is always built for root 0 (a root argument that never reaches the
// tree builder). A broadcast then spreads rank 0's input; a reduce collects the result on
// rank 0, which has no output, so it lands in rank 0's scratch and the real root's output is
// never written. Correct whenever the root is 0.

void output_to_scratch(Schedule& schedule, int rank) {
  Participant& participant = schedule.participants[static_cast<std::size_t>(rank)];
  participant.scratch = std::max(participant.scratch, schedule.shape.count);
  for (Step& step : participant.steps) {
    if (step.from.buffer == BufferKind::Output) step.from.buffer = BufferKind::Scratch;
    if (step.to.buffer == BufferKind::Output) step.to.buffer = BufferKind::Scratch;
  }
}

Result<Schedule> root_ignored(const Case& shape, const Knobs& knobs) {
  Case rooted_at_zero = shape;
  rooted_at_zero.root = 0;
  Result<Schedule> schedule = make_schedule("binomial", rooted_at_zero, knobs);
  if (!schedule || shape.root == 0) return schedule;
  schedule.value().shape = shape;
  if (shape.collective == Collective::Reduce) output_to_scratch(schedule.value(), 0);
  return schedule;
}

// ---------------------------------------------------------------------------------------------
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

// ---------------------------------------------------------------------------------------------
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

// ---------------------------------------------------------------------------------------------
// 6. narrow-accumulation. The reduction kernel keeps its running value in float16 whatever the
// dtype (a half-precision accumulator in a "mixed precision" kernel): every partial result is
// rounded to float16 before it is stored. float32, float64 and bfloat16 lose precision, and
// sums past 65504 overflow to infinity. Integers are untouched; float16 itself is exact.

double combine(RedOp op, double x, double y) {
  switch (op) {
    case RedOp::Prod: return x * y;
    case RedOp::Min: return std::isnan(x) || std::isnan(y) ? std::nan("") : std::min(x, y);
    case RedOp::Max: return std::isnan(x) || std::isnan(y) ? std::nan("") : std::max(x, y);
    default: return x + y;
  }
}

void reduce_through_float16(DType dtype, RedOp op, const std::byte* a, const std::byte* b, std::byte* out,
                            std::size_t count) {
  if (!is_float(dtype)) return reduce_elements(dtype, op, a, b, out, count);
  reduce_decoded(dtype, a, b, out, count,
                 [op](double x, double y) { return float16_to_double(float16_from_double(combine(op, x, y))); });
}

// ---------------------------------------------------------------------------------------------
// 7, 9, 11. A direct all-reduce: every rank sends its input to every other rank, and folds all
// n inputs into its output itself. The correct form folds in the same order on every rank
// (rank 0's input, then rank 1's, ...), so ranks agree bit for bit; a rank whose fold does not
// start with itself first saves its input in scratch, so that in place the first receive may
// overwrite it. Three mutants bend it:
//   in-place-clobber: to overlap, ranks other than 0 send their input on a second stream that
//     waits for their first receive; out of place nothing changes, but in place that receive
//     has overwritten the input, so they send rank 0's data instead of their own.
//   rank-order-reduce: each rank folds starting from itself (r, r+1, ...): each result is
//     within the float bound, but ranks round differently and disagree bit for bit.
//   nan-dropped: min and max take the "order does not matter" path of rank-order-reduce, and
//     compare like std::max (a < b ? b : a), which keeps a NaN only as the first operand:
//     a rank whose own input is NaN ends with NaN, the others with the max of the rest.

struct DirectPlan {
  bool own_order_first = false;        // fold starting at the rank itself
  bool sends_after_first_receive = false;
};

std::vector<int> fold_order(int rank, int n, bool own_first) {
  std::vector<int> order;
  for (int k = 0; k < n; ++k) order.push_back(own_first ? (rank + k) % n : k);
  return order;
}

// The sends of `rank`'s input to every other rank, on `stream`, each waiting for step `gate`
// where gate >= 0.
void send_input_to_all(Participant& participant, int rank, int n, std::size_t count, int stream, int gate) {
  for (int k = 1; k < n; ++k) {
    Step step = make_step(StepKind::Send, (rank + k) % n, at(BufferKind::Input, 0, count), {}, 0, stream);
    if (gate >= 0) step.after.push_back(gate);
    participant.steps.push_back(std::move(step));
  }
}

// Rank `rank`'s fold into its output, own input read from `own`; returns the index of its first
// receive (-1 if none).
int fold(const Schedule& schedule, Participant& participant, int rank, const std::vector<int>& order, Range own) {
  const Range output = at(BufferKind::Output, 0, schedule.shape.count);
  int first_receive = -1;
  for (std::size_t k = 0; k < order.size(); ++k) {
    const int peer = order[k];
    if (peer == rank && k == 0) {
      if (!schedule.shape.in_place) participant.steps.push_back(make_step(StepKind::Copy, -1, own, output));
    } else if (peer == rank) {
      participant.steps.push_back(make_step(StepKind::Reduce, -1, own, output));
    } else {
      if (first_receive < 0) first_receive = static_cast<int>(participant.steps.size());
      const StepKind kind = k == 0 ? StepKind::Recv : StepKind::RecvReduce;
      participant.steps.push_back(make_step(kind, peer, k == 0 ? Range{} : output, output));
    }
  }
  return first_receive;
}

void direct_rank(Schedule& schedule, int rank, const DirectPlan& plan) {
  const int n = schedule.nranks();
  const std::size_t count = schedule.shape.count;
  Participant& participant = schedule.participants[static_cast<std::size_t>(rank)];
  const std::vector<int> order = fold_order(rank, n, plan.own_order_first);
  const bool starts_with_self = order.front() == rank;
  Range own = at(BufferKind::Input, 0, count);
  if (!starts_with_self) {  // keep the input: in place the first receive overwrites it
    participant.scratch = count;
    own = at(BufferKind::Scratch, 0, count);
    participant.steps.push_back(make_step(StepKind::Copy, -1, at(BufferKind::Input, 0, count), own));
  }
  if (!plan.sends_after_first_receive) {
    send_input_to_all(participant, rank, n, count, 0, -1);
    fold(schedule, participant, rank, order, own);
    return;
  }
  // The bug: the sends move to a second stream behind the first receive (at once for a rank
  // whose fold starts with itself, as it receives nothing first).
  const int first_receive = fold(schedule, participant, rank, order, own);
  send_input_to_all(participant, rank, n, count, 1, starts_with_self ? -1 : first_receive);
}

Result<Schedule> direct_allreduce(const Case& shape, DirectPlan plan) {
  Status valid = accept_allreduce(shape);
  if (!valid) return valid.error();
  Schedule schedule = generators::start(shape, "direct");
  if (shape.count == 0) return schedule;
  for (int rank = 0; rank < shape.nranks; ++rank) {
    direct_rank(schedule, rank, plan);
  }
  return schedule;
}

Result<Schedule> in_place_clobber(const Case& shape, const Knobs&) {
  return direct_allreduce(shape, DirectPlan{false, true});
}

Result<Schedule> rank_order_reduce(const Case& shape, const Knobs&) {
  return direct_allreduce(shape, DirectPlan{true, false});
}

Result<Schedule> nan_dropped_schedule(const Case& shape, const Knobs&) {
  const bool order_free = shape.op == RedOp::Min || shape.op == RedOp::Max;
  return direct_allreduce(shape, DirectPlan{order_free, false});
}

// std::max / std::min on the decoded values: a NaN survives only as the first operand.
double unordered_min_max(RedOp op, double a, double b) {
  return op == RedOp::Max ? (a < b ? b : a) : (b < a ? b : a);
}

void reduce_dropping_nan(DType dtype, RedOp op, const std::byte* a, const std::byte* b, std::byte* out,
                         std::size_t count) {
  if (!is_float(dtype) || (op != RedOp::Min && op != RedOp::Max)) return reduce_elements(dtype, op, a, b, out, count);
  reduce_decoded(dtype, a, b, out, count, [op](double x, double y) { return unordered_min_max(op, x, y); });
}

// ---------------------------------------------------------------------------------------------
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

// ---------------------------------------------------------------------------------------------
// 10. avg-wrong-divisor. Average divides the sum by the number of peers, nranks - 1, instead
// of by nranks (a rank alone, with no peer, falls back to halving).

void divide_by_peers(DType dtype, std::byte* data, std::size_t count, int nranks) {
  finish_average(dtype, data, count, nranks > 1 ? nranks - 1 : 2);
}

// ---------------------------------------------------------------------------------------------
// 12. interleaving-race. Reduce to rank 0, then rank 0 sends the result to everyone. Rank 0
// initialises its accumulator (output = its input) on a second stream once rank 2's "ready"
// token arrives, but the stream that reduces arriving data into that accumulator does not
// wait for the initialisation (a missing cross-stream event). Rank 2's token and rank 1's
// data leave at the same virtual time and share the switch's link into rank 0: which reserves
// it first is the scheduler's tie-break, which the seed decides. Data first: it is reduced into
// the zeroed output, and the initialisation then overwrites it. The race is between ranks 1
// and 2 alone (later data queues behind rank 1's reduction), so a seed that loses on some
// number of ranks loses on all of them, and a failure shrinks to three ranks. In place the
// initialisation is a no-op and the race harmless; on two ranks the token always comes first.

constexpr int kTokenChannel = 1;

int token_sender(int nranks) { return std::min(2, nranks - 1); }

void race_rank0(Schedule& schedule) {
  const int n = schedule.nranks();
  const std::size_t count = schedule.shape.count;
  const Range input = at(BufferKind::Input, 0, count);
  const Range output = at(BufferKind::Output, 0, count);
  Participant& rank0 = schedule.participants[0];
  rank0.scratch = 1;
  const Range token = at(BufferKind::Scratch, 0, 1);
  rank0.steps.push_back(make_step(StepKind::Recv, token_sender(n), {}, token, kTokenChannel, 1));
  if (!schedule.shape.in_place) rank0.steps.push_back(make_step(StepKind::Copy, -1, input, output, 0, 1));
  for (int peer = 1; peer < n; ++peer) rank0.steps.push_back(make_step(StepKind::RecvReduce, peer, output, output));
  for (int peer = 1; peer < n; ++peer) rank0.steps.push_back(make_step(StepKind::Send, peer, output, {}));
}

void race_peer(Schedule& schedule, int rank) {
  const std::size_t count = schedule.shape.count;
  Participant& participant = schedule.participants[static_cast<std::size_t>(rank)];
  if (rank == token_sender(schedule.nranks())) {
    participant.steps.push_back(make_step(StepKind::Send, 0, at(BufferKind::Input, 0, 1), {}, kTokenChannel));
  }
  participant.steps.push_back(make_step(StepKind::Send, 0, at(BufferKind::Input, 0, count), {}));
  participant.steps.push_back(make_step(StepKind::Recv, 0, {}, at(BufferKind::Output, 0, count)));
}

Result<Schedule> interleaving_race(const Case& shape, const Knobs&) {
  Status valid = accept_allreduce(shape);
  if (!valid) return valid.error();
  Schedule schedule = generators::start(shape, "reduce-broadcast");
  if (shape.count == 0) return schedule;
  if (shape.nranks == 1) {
    const Range input = at(BufferKind::Input, 0, shape.count);
    if (!shape.in_place) schedule.copy(0, input, at(BufferKind::Output, 0, shape.count));
    return schedule;
  }
  race_rank0(schedule);
  for (int rank = 1; rank < shape.nranks; ++rank) race_peer(schedule, rank);
  return schedule;
}

// ---------------------------------------------------------------------------------------------
// 13. deadlock. Every rank posts its first (blocking) receive before its first send, like
// MPI_Recv before MPI_Send around a ring: each waits for its predecessor, which waits for its
// own. validate() accepts it (every send is matched); it never completes on two or more ranks.

void receive_before_send(Participant& participant) {
  check_no_dependencies(participant);
  auto is_send = [](const Step& step) { return step.sends(); };
  auto is_receive = [](const Step& step) { return step.receives(); };
  const auto send = std::find_if(participant.steps.begin(), participant.steps.end(), is_send);
  const auto receive = std::find_if(participant.steps.begin(), participant.steps.end(), is_receive);
  if (send == participant.steps.end() || receive == participant.steps.end() || receive < send) return;
  std::rotate(send, send + 1, receive + 1);  // the first send now follows the first receive
}

Result<Schedule> deadlock(const Case& shape, const Knobs& knobs) {
  Result<Schedule> schedule = make_schedule("ring", shape, knobs);
  if (!schedule) return schedule;
  for (Participant& participant : schedule.value().participants) receive_before_send(participant);
  return schedule;
}

// ---------------------------------------------------------------------------------------------
// The table.

using ScheduleFunction = Result<Schedule> (*)(const Case&, const Knobs&);

// The unchanged ring, for the mutants that break only the reduction op.
Result<Schedule> ring_schedule(const Case& shape, const Knobs& knobs) {
  return make_schedule("ring", shape, knobs);
}

// ---------------------------------------------------------------------------------------------
// 14. gather-rotated. A backend whose all-reduce and reduce-scatter are right but whose
// all-gather is allgather-order's: composing its reduce-scatter and all-gather no longer gives
// its all-reduce (the composition property), and its all-gather alone fails the oracle.
Result<Schedule> gather_rotated(const Case& shape, const Knobs& knobs) {
  return shape.collective == Collective::AllGather ? allgather_order(shape, knobs) : ring_schedule(shape, knobs);
}

Mutant mutant(std::string_view name, std::string_view description, std::vector<Collective> collectives,
              ScheduleFunction schedule, std::vector<std::string_view> caught_by, ReductionOverride reduction = {}) {
  Mutant m;
  m.variant.name = "mutant:" + std::string(name);
  m.variant.description = std::string(description);
  m.variant.collectives = std::move(collectives);
  m.variant.schedule = schedule;
  m.variant.reduction = reduction;
  m.caught_by = std::move(caught_by);
  return m;
}

// 15. registered-once. Every call of a run reads the inputs of the first call, as a backend
// whose buffer registration cache hands back a stale mapping: each call alone is right (the
// oracle holds), calls after the first are not (the repeat property).
Mutant registered_once() {
  Mutant m = mutant("registered-once", "ring all-reduce reading the first call's inputs on every later call (stale cache)",
                    {Collective::AllReduce}, ring_schedule, {"repeat"});
  m.variant.stale_inputs = true;
  return m;
}

// 16. no-checksum. Ring with a link protocol that never checks its checksums: a corrupted
// message is used as if it were intact, and the run reports success with a wrong result (the
// outcome `corrupt`, caught by safety and the oracle under a corrupt fault).
// 17. no-timeout. Ring whose waits never time out: a message lost for good leaves its receiver
// waiting past any deadline (a hang, caught by liveness under a drop fault).
Mutant protocol_mutant(std::string_view name, std::string_view description, std::vector<std::string_view> caught_by,
                       std::string faults) {
  Mutant m = mutant(name, description, {Collective::AllReduce, Collective::AllGather, Collective::ReduceScatter},
                    ring_schedule, std::move(caught_by));
  m.variant.skip_checksums = name == "no-checksum";
  m.variant.never_time_out = name == "no-timeout";
  m.faults = std::move(faults);
  return m;
}

std::vector<Mutant> make_mutants() {
  const std::vector<Collective> allreduce{Collective::AllReduce};
  ReductionOverride float16_accumulator, nan_dropping, peer_divisor;
  float16_accumulator.reduce = reduce_through_float16;
  nan_dropping.reduce = reduce_dropping_nan;
  peer_divisor.finish_average = divide_by_peers;
  return {
      mutant("drop-remainder", "ring all-reduce that never reduces the count % nranks tail (blocks of count/nranks)",
             allreduce, drop_remainder, {"oracle"}),
      mutant("chunk-off-by-one", "ring all-reduce whose interior pipeline chunks start one element late (k*chunk+1)",
             allreduce, chunk_off_by_one, {"oracle"}),
      mutant("root-ignored", "binomial broadcast and reduce whose tree is always rooted at rank 0 (root not passed on)",
             {Collective::Broadcast, Collective::Reduce}, root_ignored, {"oracle"}),
      mutant("allgather-order", "ring all-gather that puts rank b's block in slot b+1 (slot index off by one)",
             {Collective::AllGather}, allgather_order, {"oracle"}),
      mutant("own-twice", "ring all-reduce where rank 0 reduces its own input in twice (double-counted contribution)",
             allreduce, own_twice, {"oracle"}),
      mutant("narrow-accumulation", "ring all-reduce accumulating in float16 whatever the dtype (narrow accumulator)",
             allreduce, ring_schedule, {"oracle"}, float16_accumulator),
      mutant("in-place-clobber", "direct all-reduce sending its input after overwriting it: wrong only in place",
             allreduce, in_place_clobber, {"in-place", "oracle"}),
      mutant("write-past-end", "ring all-reduce writing one element past the output (inclusive end bound)",
             allreduce, write_past_end, {"buffer-safety"}),
      mutant("nan-dropped", "direct all-reduce with std::max-style min/max in a per-rank order: ranks differ on NaN",
             allreduce, nan_dropped_schedule, {"rank-agreement"}, nan_dropping),
      mutant("avg-wrong-divisor", "ring all-reduce whose avg divides by the peer count nranks-1 instead of nranks",
             allreduce, ring_schedule, {"oracle"}, peer_divisor),
      mutant("rank-order-reduce", "direct all-reduce where each rank reduces in its own order, starting from itself",
             allreduce, rank_order_reduce, {"rank-agreement"}),
      mutant("interleaving-race", "reduce-broadcast all-reduce missing a cross-stream wait: a seed-dependent race",
             allreduce, interleaving_race, {"determinism", "oracle", "in-place", "repeat"}),
      mutant("deadlock", "ring all-reduce where every rank receives before its first send: a cyclic wait",
             allreduce, deadlock, {"liveness"}),
      mutant("gather-rotated", "ring all-reduce and reduce-scatter with allgather-order's all-gather: they do not compose",
             {Collective::AllReduce, Collective::ReduceScatter, Collective::AllGather}, gather_rotated,
             {"composition", "oracle"}),
      registered_once(),
      protocol_mutant("no-checksum", "ring whose receivers never check the message checksums (corrupt bytes are used)",
                      {"safety", "oracle"}, "corrupt"),
      protocol_mutant("no-timeout", "ring whose waits never time out (a lost message leaves its receiver waiting)",
                      {"liveness"}, "drop"),
  };
}

}  // namespace

const std::vector<Mutant>& all_mutants() {
  static const std::vector<Mutant> mutants = make_mutants();
  return mutants;
}

const Mutant* find_mutant(std::string_view name) {
  constexpr std::string_view kPrefix = "mutant:";
  if (name.starts_with(kPrefix)) name.remove_prefix(kPrefix.size());
  for (const Mutant& m : all_mutants()) {
    if (std::string_view(m.variant.name).substr(kPrefix.size()) == name) return &m;
  }
  return nullptr;
}

}  // namespace collcheck
