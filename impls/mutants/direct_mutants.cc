// The direct all-reduce and the three mutants that bend it: in-place-clobber (a send after its
// input was overwritten), rank-order-reduce (per-rank fold orders) and nan-dropped's schedule.
#include <vector>

#include "impls/algorithms/generator_support.h"
#include "impls/mutants/families.h"

namespace collcheck::mutants {
namespace {

using generators::at;

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
  bool own_order_first = false;  // fold starting at the rank itself
  bool sends_after_first_receive = false;
};

std::vector<int> fold_order(int rank, int n, bool own_first) {
  std::vector<int> order;
  order.reserve(static_cast<std::size_t>(n));
  for (int k = 0; k < n; ++k) order.push_back(own_first ? (rank + k) % n : k);
  return order;
}

// The sends of `rank`'s input to every other rank, on `stream`, each waiting for step `gate`
// where gate >= 0.
void send_input_to_all(Participant& participant, int rank, int n, std::size_t count, int stream, int gate) {
  for (int k = 1; k < n; ++k) {
    if (gate >= 0) participant.add_after(static_cast<int>(participant.steps.size()), gate);
    participant.steps.push_back(
        make_step(StepKind::Send, (rank + k) % n, at(BufferKind::Input, 0, count), {}, 0, stream));
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

}  // namespace

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

}  // namespace collcheck::mutants
