// The step surgery every mutant family shares: case checks, step construction, and the
// unchanged ring the mutants of the reduction op and of the backend run.
#include "impls/mutants/families.h"

#include <string>

#include "impls/algorithms/generator_support.h"

namespace collcheck::mutants {

using generators::check;

Status accept_allreduce(const Case& shape) {
  Status valid = validate(shape);
  if (!valid) return valid;
  if (shape.collective != Collective::AllReduce) {
    return Error{"collective", std::string(name(shape.collective)) + ": this mutant implements allreduce only"};
  }
  return Ok{};
}

void check_no_dependencies(const Participant& participant) {
  check(participant.waits.empty(), "the reference steps have no `after`");
}

bool is_message(const Step& step) { return step.sends() || step.receives(); }

Step make_step(StepKind kind, int peer, Range from, Range to, int channel, int stream) {
  Step step;
  step.kind = kind;
  step.peer = peer;
  step.from = from;
  step.to = to;
  step.channel = channel;
  step.stream = stream;
  return step;
}

Result<Schedule> ring_schedule(const Case& shape, const Knobs& knobs) { return make_schedule("ring", shape, knobs); }

}  // namespace collcheck::mutants
