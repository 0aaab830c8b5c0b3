// Fault plans drawn at random for `collcheck check --faults random`: the swarm (which kinds a run
// may draw) from the seed, a RapidCheck generator of mild plans that shrink with the case.
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
// valid for it, with mild parameters: triggers in the first few messages or milliseconds, a few
// messages or a probability, delays up to 20 ms, 1..8 bits, slowdowns up to 8x, flaps of a few
// ms. Shrinks along simpler(): fewer faults first, then later and milder ones.
rc::Gen<FaultPlan> fault_plan_generator(int nranks, std::vector<FaultKind> swarm);

// The plan moved onto a world of `nranks` (a plan drawn for a larger world, its case shrunk):
// ranks taken modulo nranks, a link that would join a rank to itself moved to the next rank, and
// on one rank, where there are no links, link faults dropped and link targets widened to all.
FaultPlan fit(const FaultPlan&, int nranks);

// What `--faults` asks for: nothing, one plan for every run, or a plan per case drawn from a
// swarm (`random`: the kinds drawn from the seed; `random:drop,corrupt`: those kinds).
struct FaultChoice {
  FaultPlan plan;  // fixed: every run under it; empty: no faults (unless random)
  bool random = false;
  std::vector<FaultKind> swarm;  // random: the kinds plans are drawn from
  bool swarm_given = false;      // random: named by the user rather than drawn from the seed

  bool any() const { return random || !plan.empty(); }
};

// Errors name `--faults` and the item or kind that is wrong.
Result<FaultChoice> parse_fault_choice(std::string_view text, std::uint64_t seed);

// The kinds of a swarm drawn from `seed`: each kind with odds one half, never none.
std::vector<FaultKind> draw_swarm(std::uint64_t seed);

// `random, swarm drop, corrupt, straggler (from seed 7)`; `drop:link=0->1` for a fixed plan.
std::string describe(const FaultChoice&, std::uint64_t seed);

}  // namespace collcheck
