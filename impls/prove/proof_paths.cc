// Which proof runs (proof.h): rank 0 alone where every rank is rank 0's turned (symmetry.h) or the
// cover's rank 0 turned and cut (cover.h), else the schedule in units where it never cuts one
// (units.cc), else in pieces where it keeps every element in its place (pieces.cc), else every
// rank; the interpreter itself is proof.cc's.
#include <algorithm>
#include <optional>
#include <vector>

#include "impls/prove/cover.h"
#include "impls/prove/interpreter.h"
#include "impls/prove/pieces.h"
#include "impls/prove/proof.h"
#include "impls/prove/symmetry.h"

namespace collcheck {
namespace {

using provenance::Symmetry;

// Blocks of unequal length: the cover's rank 0, where the schedule is the cover cut (cover.cc says
// why that proves it), in units where its ranges never cut one and the unit divides its blocks
// (units.cc: every rank of the cover is then whole units too, turned by whole blocks). A proof
// that fails gives way to the full one, which names the step in the schedule's own terms.
std::optional<Proof> prove_by_cover(const Schedule& schedule, unsigned threads) {
  std::optional<provenance::CoveredRank0> covered = provenance::cover_rank0(schedule, threads);
  if (!covered) return std::nullopt;
  std::optional<InUnits> units = in_units(covered->cover);
  const std::uint64_t unit = units ? units->unit : 1;
  const auto divides = [unit](const provenance::BufferCut& cut) {
    return cut.part % unit == 0 && cut.block % unit == 0;
  };
  if (!std::all_of(covered->rotation.cuts.begin(), covered->rotation.cuts.end(), divides)) units.reset();
  if (units) {
    for (provenance::BufferCut& cut : covered->rotation.cuts) cut = {cut.part / unit, cut.block / unit};
  }
  std::optional<Proof> proof = prove_valid(units ? units->schedule : covered->cover, covered->rotation);
  if (!proof || !proof->ok) return std::nullopt;
  if (units) proof->unit = unit;
  proof->steps = covered->steps;
  proof->messages = covered->messages;
  return proof;
}

// Every rank's proof; with a line, of a schedule in pieces (each message checked to stay in place).
// A schedule made on demand is proven as it is made, never stored, where every participant has one
// stream and no waits (the ring's); any other is stored first.
Proof prove_every_rank(const Schedule& schedule, const provenance::PieceLine* line) {
  if (schedule.on_demand()) {
    const bool waits = std::any_of(schedule.participants.begin(), schedule.participants.end(),
                                   [](const Participant& participant) { return !participant.waits.empty(); });
    if (waits) return prove_every_rank(stored(schedule), line);
    Status valid = validate_participants(schedule);
    if (!valid) return Proof{false, valid.error().message, 0, 0};
    std::optional<Proof> proof = prove_valid(schedule, std::nullopt, line);
    return proof ? *proof : prove_every_rank(stored(schedule), line);
  }
  Status valid = validate(schedule);
  return valid ? *prove_valid(schedule, std::nullopt, line) : Proof{false, valid.error().message, 0, 0};
}

}  // namespace

// Rank 0's steps checked and stored, the others' compared with them (a valid step turned is
// valid). Where rank 0's streams do not keep apart, or by XOR a message's ends order its blocks
// differently (prove_valid gives nothing), the full proof runs, under the race check.
std::optional<Proof> prove_by_symmetry(const Schedule& schedule, unsigned threads) {
  if (!schedule.on_demand()) {
    if (schedule.participants.empty()) return std::nullopt;
    const std::vector<Step>& rank0 = schedule.participants.front().steps;
    if (several_streams(rank0) && !provenance::streams_apart(schedule, rank0)) return std::nullopt;
    const std::optional<Symmetry> symmetry = provenance::find_symmetry(schedule);
    if (!symmetry) return prove_by_cover(schedule, 1);
    Status valid = validate(schedule);
    return valid ? prove_valid(schedule, symmetry) : Proof{false, valid.error().message, 0, 0};
  }
  std::vector<Step> steps;  // rank 0's, stored (the schedule is copied only where a symmetry holds)
  const BufferSizes sizes = buffer_sizes(schedule, 0);
  for (StepReader made = schedule.steps_of(0); made.next();) {
    Status valid = validate_step(schedule, 0, static_cast<int>(steps.size()), made.step(), sizes);
    if (!valid) return Proof{false, valid.error().message, 0, 0};
    steps.push_back(made.step());
  }
  if (several_streams(steps) && !provenance::streams_apart(schedule, steps)) return std::nullopt;
  const std::optional<Symmetry> symmetry = provenance::find_symmetry(schedule, steps, threads);
  if (!symmetry) return prove_by_cover(schedule, threads);
  Schedule rank0 = schedule;
  rank0.make_steps = {};
  rank0.participants.front().steps = std::move(steps);
  return prove_valid(rank0, symmetry);
}

// Where no symmetry holds, in units where the schedule never cuts one (in full: dividing every
// range by the unit turns nothing that did not turn before), else in pieces where every element
// stays in its place; a proof in units or pieces that fails gives way to the full one, which names
// the step and element in the schedule's own terms.
Proof prove(const Schedule& schedule) {
  if (std::optional<Proof> proof = prove_by_symmetry(schedule)) return *proof;
  if (std::optional<InUnits> units = in_units(schedule)) {
    Proof proof = prove_in_full(units->schedule);
    if (proof.ok) {
      proof.unit *= units->unit;
      return proof;
    }
  } else if (std::optional<InPieces> pieces = in_pieces(schedule)) {
    Proof proof = prove_in_pieces(*pieces);
    if (proof.ok) return proof;
  }
  return prove_in_full(schedule);
}

Proof prove_in_full(const Schedule& schedule) { return prove_every_rank(schedule, nullptr); }

Proof prove_in_pieces(const InPieces& pieces) {
  Proof proof = prove_every_rank(pieces.schedule, pieces.line.get());
  proof.pieces = pieces.pieces;
  return proof;
}

}  // namespace collcheck
