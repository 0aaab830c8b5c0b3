// Properties of the fault-plan language over drawn plans: every valid plan prints and parses
// back to itself, and every simpler() candidate of it is valid.
#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include <vector>

#include "faults/plan.h"

namespace collcheck {
namespace {

constexpr int world = 8;

// A finite double in [0, limit] whose text form is short, like the ones people type.
rc::Gen<double> amount(double limit) {
  return rc::gen::map(rc::gen::inRange(0, 1000), [limit](int k) { return limit * k / 1000; });
}

// A valid fault for a world of `world` ranks: only the keys its kind takes.
rc::Gen<Fault> valid_fault() {
  return rc::gen::exec([] {
    Fault f;
    f.kind = *rc::gen::elementOf(std::vector<FaultKind>(all_fault_kinds().begin(), all_fault_kinds().end()));
    const int from = *rc::gen::inRange(0, world);
    const int to = (from + *rc::gen::inRange(1, world)) % world;
    const bool message = f.kind == FaultKind::Drop || f.kind == FaultKind::Delay || f.kind == FaultKind::Corrupt ||
                         f.kind == FaultKind::Duplicate || f.kind == FaultKind::Reorder;
    const bool link = f.kind == FaultKind::LinkDown || f.kind == FaultKind::LinkFlap;
    const int scope = message ? *rc::gen::inRange(0, 3) : link ? 1 : 2;
    f.target = Target{static_cast<Target::Scope>(scope), from, to, from};
    if (scope == 0) f.target = Target{};
    if (*rc::gen::arbitrary<bool>()) f.trigger.at = *amount(0.01);
    if (message) {
      f.trigger.after = *rc::gen::inRange<std::uint64_t>(0, 100);
      f.trigger.offset = *rc::gen::inRange<std::uint64_t>(0, 1 << 20);
      f.trigger.p = 1 - *amount(0.999);
      f.trigger.times = *rc::gen::inRange<std::uint64_t>(0, 10);
      f.trigger.message = static_cast<StreamPosition>(*rc::gen::inRange(0, 3));
    }
    if (f.kind == FaultKind::Delay || f.kind == FaultKind::Straggler) f.ms = *amount(100);
    if (f.kind == FaultKind::Delay) f.jitter = *amount(10);
    if (f.kind == FaultKind::Corrupt) f.bits = *rc::gen::inRange(1, 65);
    if (f.kind == FaultKind::Corrupt) f.where = static_cast<BytePlace>(*rc::gen::inRange(0, 5));
    if (f.kind == FaultKind::LinkFlap) f.period = 0.001 + *amount(10);
    if (f.kind == FaultKind::Straggler) f.factor = 1 + *amount(16);
    return f;
  });
}

rc::Gen<FaultPlan> valid_plan() {
  return rc::gen::map(rc::gen::container<std::vector<Fault>>(valid_fault()),
                      [](std::vector<Fault> faults) { return FaultPlan{std::move(faults)}; });
}

RC_GTEST_PROP(FaultPlanProperty, PrintsAndParsesBack, ()) {
  const FaultPlan plan = *valid_plan();
  RC_LOG() << to_string(plan) << "\n";
  RC_ASSERT(validate(plan, world).ok());
  const Result<FaultPlan> back = parse_fault_plan(to_string(plan));
  RC_ASSERT(back.ok());
  RC_LOG() << to_string(*back) << "\n";
  RC_ASSERT(*back == plan);
}

RC_GTEST_PROP(FaultPlanProperty, SimplerCandidatesAreValid, ()) {
  const FaultPlan plan = *valid_plan();
  for (const FaultPlan& candidate : simpler(plan)) {
    RC_ASSERT(candidate != plan);
    RC_ASSERT(validate(candidate, world).ok());
    RC_ASSERT(candidate.faults.size() <= plan.faults.size());
  }
}

}  // namespace
}  // namespace collcheck
