// What the prover's tests share: a case's shape, and a stored schedule made on demand again.
#pragma once

#include <cstddef>
#include <memory>

#include "impls/schedule/schedule.h"
#include "reference/counts.h"

namespace collcheck::proof_support {

// A case of `count` elements on `nranks` ranks (a v-collective's counts spread, zeros and uneven).
inline Case shape_of(Collective collective, std::size_t count, int nranks, int root = 0, bool in_place = false) {
  Case c;
  c.collective = collective;
  c.count = count;
  c.nranks = nranks;
  c.root = root;
  c.in_place = in_place;
  if (per_rank_counts(collective)) set_counts(c, spread_counts(collective, nranks, count));  // zeros, uneven
  return c;
}

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
