// Proofs in units: a schedule that never cuts a unit of elements proven on one element per unit.
//
// It works as follows. The `unit` is the greatest common divisor of the case's counts (its count,
// and every entry of a v-collective's counts), every participant's scratch size, and the offset and
// count of every range a step reads or writes. Every buffer is then a row of whole units, and every
// step moves or reduces whole units, each of a unit's elements alike: element u*unit + j of a
// buffer (its lane j) meets only elements of lane j, and what happens to lane j is exactly what
// happens to element u of the same schedule with every count, size, offset and length divided by
// the unit (the schedule `in_units`), its contribution (r, i) standing for (r, i*unit + j).
//
// Every collective lays its buffers out in whole counts (blocks of count elements, a v-collective's
// blocks of its counts, the in-place alias at a multiple of them), so its requirement maps alike:
// output element u*unit + j must hold what output element u of the schedule in units must hold,
// every index i taken to i*unit + j. Sends meet receives, waits, races (ranges overlap in units
// exactly where they overlap in elements), reads before writes and deadlocks are step for step the
// same. So proving the schedule in units proves every lane, that is the schedule, with `unit` times
// fewer elements: in-network aggregation's all-gather at 16,384 ranks and count 4096, which no
// symmetry covers (its switches are participants of their own), is proven at count 1.
#include <cstdint>
#include <memory>
#include <numeric>
#include <optional>
#include <vector>

#include "impls/prove/mapped_schedule.h"
#include "impls/prove/proof.h"

namespace collcheck {
namespace {

// The unit so far, with the range's offset and length taken in; 1 stops the search.
std::uint64_t with_range(std::uint64_t unit, const Range& range) {
  return std::gcd(unit, std::gcd(std::uint64_t{range.offset}, range.count));
}

std::uint64_t with_step(std::uint64_t unit, const Step& step) {
  if (step.reads()) unit = with_range(unit, step.from);
  if (step.writes()) unit = with_range(unit, step.to);
  return unit;
}

}  // namespace

std::uint64_t counts_unit(const Case& shape) {
  std::uint64_t unit = shape.count;
  for (std::size_t count : shape.counts) {
    if (unit == 1) break;
    unit = std::gcd(unit, std::uint64_t{count});
  }
  return unit;
}

Case case_in_units(Case shape, std::uint64_t unit) {
  shape.count /= unit;
  for (std::size_t& count : shape.counts) count /= unit;
  return shape;
}

std::optional<InUnits> in_units(const Schedule& schedule) {
  const Case& shape = schedule.shape;
  std::uint64_t unit = counts_unit(shape);
  for (const Participant& participant : schedule.participants)
    unit = std::gcd(unit, std::uint64_t{participant.scratch});
  for (int p = 0; p < schedule.nparticipants() && unit > 1; ++p) {
    StepReader reader = schedule.steps_of(p);
    for (std::span<const Step> steps = reader.next_batch(); !steps.empty() && unit > 1; steps = reader.next_batch()) {
      for (const Step& step : steps) unit = with_step(unit, step);
    }
  }
  // A count of 0 leaves the unit 0 where nothing moves: nothing to divide either.
  if (unit <= 1) return std::nullopt;

  // Every range divided by the unit (the scratch's too).
  auto divided = [unit](int, Range range) {
    range.offset = range.offset / unit;
    range.count /= unit;
    return range;
  };
  return InUnits{provenance::mapped_schedule(schedule, case_in_units(shape, unit), divided), unit};
}

}  // namespace collcheck
