// The mutants of ordering: interleaving-race (a missing cross-stream wait, lost or won by the
// seeded scheduler's tie-break) and deadlock (every rank receives before it sends).
#include <algorithm>

#include "impls/algorithms/generator_support.h"
#include "impls/mutants/families.h"

namespace collcheck::mutants {
namespace {

using generators::at;

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

}  // namespace

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

Result<Schedule> deadlock(const Case& shape, const Knobs& knobs) {
  Result<Schedule> schedule = make_schedule("ring", shape, knobs);
  if (!schedule) return schedule;
  for (Participant& participant : schedule.value().participants) receive_before_send(participant);
  return schedule;
}

}  // namespace collcheck::mutants
