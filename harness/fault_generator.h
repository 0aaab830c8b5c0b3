// Fault plans drawn at random for `collcheck check --faults random`: the swarm (which kinds a batch
// of cases may draw) from the seed, a RapidCheck generator of mild plans that shrink with the case.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <rapidcheck.h>

#include "faults/plan.h"

namespace collcheck {

// Whether every fault of the plan heals by itself, so that a protocol that retransmits can end
// `ok`: delay, straggler and link-flap always; drop, corrupt, duplicate and reorder when bounded
// (times > 0 or p < 1). Link-down, stop, kill and unbounded message faults are for good.
bool transient(const Fault&);
bool transient(const FaultPlan&);

// 1..3 faults of the kinds in `swarm` (every kind when empty) for a world of `nranks` ranks, each
// valid for it, with mild parameters: triggers in the first few messages or milliseconds (or, in
// one plan in four, all on the first or all on the last message of each stream's call), a few messages or a
// probability, delays up to 20 ms, 1..8 bits (half the time at a first or last byte, a tail or a boundary), slowdowns
// up to 8x, flaps of a few ms. Shrinks along simpler(): fewer faults first, then later and milder ones.
rc::Gen<FaultPlan> fault_plan_generator(int nranks, std::vector<FaultKind> swarm);

// The plan moved onto a world of `nranks` (a plan drawn for a larger world, its case shrunk):
// ranks taken modulo nranks, a link that would join a rank to itself moved to the next rank, and
// on one rank, where there are no links, link faults dropped and link targets widened to all.
FaultPlan fit(const FaultPlan&, int nranks);

// What `--faults` asks for: nothing, one plan for every run, or a plan per case drawn from a
// swarm (`random`: a swarm per batch of kSwarmBatch cases, drawn from the seed and the batch's
// number; `random:drop,corrupt`: those kinds for every case).
struct FaultChoice {
  FaultPlan plan;  // fixed: every run under it; empty: no faults (unless random)
  bool random = false;
  std::vector<FaultKind> swarm;  // random with swarm_given: the kinds plans are drawn from
  bool swarm_given = false;      // random: named by the user rather than drawn per batch

  bool any() const { return random || !plan.empty(); }
};

// Errors name `--faults` and the item or kind that is wrong. `seed` is not used (swarm_for_case
// draws the swarms from it); it stays so that callers need not change.
Result<FaultChoice> parse_fault_choice(std::string_view text, std::uint64_t seed);

// The kinds of a swarm drawn from `seed`: each kind with odds one half, never none.
std::vector<FaultKind> draw_swarm(std::uint64_t seed);

// Cases of one backend that share a swarm under `--faults random`: over a run every kind gets
// its share, and each swarm still concentrates a batch on a few kinds (swarm testing).
inline constexpr std::size_t kSwarmBatch = 16;

// The kinds case `index` of a backend draws its plan from: the given swarm, or the swarm of its
// batch (index / kSwarmBatch), drawn from `seed` and the batch's number (batch 0: draw_swarm(seed)).
std::vector<FaultKind> swarm_for_case(const FaultChoice&, std::uint64_t seed, std::size_t index);

// `random, a swarm per 16 cases (from seed 7)`; `random, swarm drop, corrupt (given)`;
// `drop:link=0->1` for a fixed plan.
std::string describe(const FaultChoice&, std::uint64_t seed);

}  // namespace collcheck
