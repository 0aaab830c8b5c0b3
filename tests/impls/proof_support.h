// What the prover's tests share: a stored schedule made on demand again.
#pragma once

#include <cstddef>
#include <memory>

#include "impls/schedule/schedule.h"

namespace collcheck::proof_support {

// A stored schedule made on demand again, each participant's steps replayed from a copy.
inline StepSequence replay(std::shared_ptr<const Schedule> schedule, int participant) {
  for (const Step& step : schedule->participants[static_cast<std::size_t>(participant)].steps) co_yield step;
}

inline Schedule on_demand(const Schedule& stored_schedule) {
  auto copy = std::make_shared<const Schedule>(stored_schedule);
  Schedule made = stored_schedule;
  for (Participant& participant : made.participants) participant.steps.clear();
  made.make_steps = [copy](int participant) { return replay(copy, participant); };
  return made;
}

}  // namespace collcheck::proof_support
