// A schedule with every range of every step mapped alike, stored or made on demand: the schedule in
// units (units.cc) and in pieces (pieces.cc) are made this way. Private to impls/prove/.
#pragma once

#include <cstddef>
#include <memory>
#include <span>
#include <utility>
#include <vector>

#include "impls/schedule/schedule.h"

namespace collcheck::provenance {

// `map(participant, range)` gives a range's new form; a participant's scratch maps as the range of
// all of it.
template <typename Map>
Step mapped_step(const Map& map, int participant, Step step) {
  if (step.reads()) step.from = map(participant, step.from);
  if (step.writes()) step.to = map(participant, step.to);
  return step;
}

// The steps of `made` mapped as they come, a batch at a time.
template <typename Map>
StepSequence mapped_steps(std::shared_ptr<const Schedule> made, Map map, int participant) {
  StepReader reader = made->steps_of(participant);
  std::vector<Step> batch;
  for (std::span<const Step> steps = reader.next_batch(); !steps.empty(); steps = reader.next_batch()) {
    batch.clear();
    for (const Step& step : steps) batch.push_back(mapped_step(map, participant, step));
    co_yield std::span<const Step>(batch);
  }
}

// The schedule for `shape` whose participants are the schedule's with every range mapped: stored
// where it is stored; made on demand where it is, from a copy (the participants' own records are
// small; the copy keeps the generator's state), its steps mapped as they are made.
template <typename Map>
Schedule mapped_schedule(const Schedule& schedule, Case shape, Map map) {
  Schedule mapped;
  mapped.algorithm = schedule.algorithm;
  mapped.shape = std::move(shape);
  mapped.participants.reserve(schedule.participants.size());
  for (int p = 0; p < schedule.nparticipants(); ++p) {
    const Participant& participant = schedule.participants[static_cast<std::size_t>(p)];
    const std::size_t scratch = map(p, Range{BufferKind::Scratch, 0, participant.scratch}).count;
    Participant mapped_participant{participant.is_switch, scratch, {}, participant.waits};
    mapped_participant.steps.reserve(participant.steps.size());
    for (const Step& step : participant.steps) mapped_participant.steps.push_back(mapped_step(map, p, step));
    mapped.participants.push_back(std::move(mapped_participant));
  }
  if (schedule.on_demand()) {
    auto made = std::make_shared<const Schedule>(schedule);
    mapped.make_steps = [made, map](int participant) { return mapped_steps(made, map, participant); };
  }
  return mapped;
}

}  // namespace collcheck::provenance
