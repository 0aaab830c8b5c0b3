// What the check loop draws for each case of one backend — the case, the backend's free knobs and
// the fault plan, shrinking together — and the backend each drawn set of knobs runs on.
#pragma once

#include <cstddef>
#include <functional>
#include <map>
#include <memory>
#include <string>

#include <rapidcheck.h>

#include "harness/case_generator.h"
#include "harness/fault_generator.h"
#include "harness/knob_generator.h"
#include "impls/backend/backend.h"

namespace collcheck {

// What a backend runs with the knobs drawn per case: its knob_precondition in place of its
// precondition, where it has one (the cases drawn for it meet this one).
Capabilities with_knob_precondition(Capabilities capabilities);

// One drawn case: the case, the knobs it runs with (`chunk=64,channels=3`; empty: the backend
// as the user gave it) and its fault plan (empty: none).
struct DrawnCase {
  Case c;
  std::string knobs;
  FaultPlan plan;
};
using Drawn = rc::Shrinkable<DrawnCase>;

// Draws the cases of one backend. The cases come from the same Random whether or not knobs and
// faults are drawn, so neither changes which cases a seed draws; knobs and plans come from
// Randoms of their own. Plans are drawn for the largest world and fitted to each case, from the
// swarm of the case's batch (swarm_for_case: a new one every kSwarmBatch cases unless the user
// named it); knobs are fitted to the case too (KnobSpace::fit). `draw_knobs` false: the spec's
// knobs only. Cases are drawn in increasing order of their index; an index passed over (a case of
// another share of a campaign) is stepped over, its Randoms split as a draw would split them, so
// that case i is the same whichever cases before it were drawn (and stepping over is cheap: no
// case is generated).
class Draws {
 public:
  Draws(const CaseLimits& limits, std::uint64_t seed, const FaultChoice& faults, const Backend& backend,
        bool draw_knobs);
  Drawn next(std::size_t case_index);

 private:
  const FaultChoice& faults_;
  std::uint64_t seed_;
  std::vector<KnobSpace> knob_spaces_;
  rc::Gen<Case> cases_;
  rc::Gen<KnobValues> knobs_;
  int plan_world_;  // the ranks plans are drawn for
  rc::Gen<FaultPlan> plans_;
  std::size_t plan_batch_ = 0;  // whose swarm plans_ draws from
  rc::Random case_random_, knob_random_, plan_random_;
  std::size_t next_index_ = 0;  // the index the Randoms stand at
};

// Makes the backend of a spec (`ring@sim:chunk=64`) as the user's backends were made (wrapped
// for faults and exceptions alike).
using BackendMaker = std::function<Result<std::unique_ptr<Backend>>(const std::string& spec)>;

// The backend each case runs on: the user's own when its knobs are empty, else one made from
// the spec with the knobs added, kept for the next case that draws the same knobs. A backend
// that takes its knobs per run (Capabilities::knobs_per_run: launched worlds) is never made
// again: each setting runs on the user's own, the knobs added to every run's options.
class Runners {
 public:
  Runners(Backend& backend, BackendMaker maker)
      : backend_(backend), maker_(std::move(maker)), per_run_(backend.capabilities().knobs_per_run) {}
  ~Runners() { release(); }
  Runners(const Runners&) = delete;
  Runners& operator=(const Runners&) = delete;

  // The backend for `knobs`; the user's own if one cannot be made (never: the knobs are drawn
  // within their spaces).
  Backend& at(const std::string& knobs);
  // Every backend made, aborted and dropped (the user's own is the caller's to abort).
  void release();

 private:
  Backend& backend_;
  BackendMaker maker_;
  bool per_run_;
  std::map<std::string, std::unique_ptr<Backend>> made_;
};

}  // namespace collcheck
