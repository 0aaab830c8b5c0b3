// The draws of one backend's cases (case, knobs, plan as one shrinkable) and the backends their
// knobs run on.
#include "harness/draws.h"

#include <algorithm>
#include <utility>

#include "reference/random.h"

namespace collcheck {
namespace {

// Backends made for drawn knobs kept at most; past it they are all released and made again.
constexpr std::size_t kMaxRunners = 64;

// The user's own backend with the drawn knobs added to every run's options, for a backend that
// takes them per run (Capabilities::knobs_per_run). Aborting it aborts nothing: the user's
// backend, and the worlds it holds, are the caller's.
class WithRunKnobs final : public Backend {
 public:
  WithRunKnobs(Backend& backend, std::string knobs) : backend_(backend), knobs_(std::move(knobs)) {}
  std::string name() const override { return spec_with_knobs(backend_.name(), knobs_); }
  Capabilities capabilities() const override { return with_knob_precondition(backend_.capabilities()); }
  MemoryEstimate estimate_memory(const Case& c, EstimateFor run) const override {
    return backend_.estimate_memory(c, run);
  }
  std::string cannot_run_here() const override { return backend_.cannot_run_here(); }
  RepeatedRun run(const Case& c, const RunOptions& options) override {
    RunOptions with_knobs = options;
    with_knobs.knobs = options.knobs.empty() ? knobs_ : options.knobs + "," + knobs_;
    return backend_.run(c, with_knobs);
  }

 private:
  Backend& backend_;
  std::string knobs_;
};

}  // namespace

Capabilities with_knob_precondition(Capabilities capabilities) {
  if (capabilities.knob_precondition) capabilities.precondition = capabilities.knob_precondition;
  return capabilities;
}

Draws::Draws(const CaseLimits& limits, std::uint64_t seed, const FaultChoice& faults, const Backend& backend,
             bool draw_knobs)
    : faults_(faults), seed_(seed), knob_spaces_(draw_knobs ? backend.capabilities().knobs : std::vector<KnobSpace>{}),
      cases_(
          case_generator(draw_knobs ? with_knob_precondition(backend.capabilities()) : backend.capabilities(), limits)),
      knobs_(knob_generator(knob_spaces_)),
      plan_world_(std::max(2, std::min(limits.max_ranks, backend.capabilities().max_ranks))),
      plans_(fault_plan_generator(plan_world_, swarm_for_case(faults, seed, 0))),
      case_random_(seed ^ hash_text(backend.name())), knob_random_(mix64(seed ^ hash_text(backend.name()) ^ 0x4b0b)),
      plan_random_(mix64(seed ^ hash_text(backend.name()) ^ 0xfa17)) {}

Drawn Draws::next(std::size_t case_index) {
  // Stepping over a case splits exactly the Randoms its draw below splits.
  for (; next_index_ < case_index; ++next_index_) {
    case_random_.split();
    if (!knob_spaces_.empty()) knob_random_.split();
    if (faults_.random) plan_random_.split();
  }
  ++next_index_;
  // RapidCheck's sizes: small cases first, full-sized ones (100) from the 45th case on.
  const int size = static_cast<int>(std::min<std::size_t>(10 + 2 * case_index, 100));
  rc::Shrinkable<Case> c = cases_(case_random_.split(), size);
  rc::Shrinkable<KnobValues> knobs =
      knob_spaces_.empty() ? rc::shrinkable::just(KnobValues{}) : knobs_(knob_random_.split(), size);
  if (faults_.random && case_index / kSwarmBatch != plan_batch_) {
    plan_batch_ = case_index / kSwarmBatch;
    plans_ = fault_plan_generator(plan_world_, swarm_for_case(faults_, seed_, case_index));
  }
  rc::Shrinkable<FaultPlan> plan =
      faults_.random ? plans_(plan_random_.split(), size) : rc::shrinkable::just(faults_.plan);
  return rc::shrinkable::map(
      rc::shrinkable::pair(rc::shrinkable::pair(std::move(c), std::move(knobs)), std::move(plan)),
      [spaces = knob_spaces_, random = faults_.random](std::pair<std::pair<Case, KnobValues>, FaultPlan> drawn) {
        const Case& drawn_case = drawn.first.first;
        DrawnCase fitted{drawn_case, knob_settings(spaces, drawn.first.second, drawn_case), std::move(drawn.second)};
        if (random) fitted.plan = fit(fitted.plan, drawn_case.nranks);
        return fitted;
      });
}

Backend& Runners::at(const std::string& knobs) {
  if (knobs.empty() || (!maker_ && !per_run_)) return backend_;
  if (const auto found = made_.find(knobs); found != made_.end()) return *found->second;
  if (made_.size() >= kMaxRunners) release();
  if (per_run_) return *made_.emplace(knobs, std::make_unique<WithRunKnobs>(backend_, knobs)).first->second;
  Result<std::unique_ptr<Backend>> made = maker_(spec_with_knobs(backend_.name(), knobs));
  if (!made) return backend_;
  return *made_.emplace(knobs, std::move(made).value()).first->second;
}

void Runners::release() {
  for (auto& [knobs, backend] : made_) backend->abort();
  made_.clear();
}

}  // namespace collcheck
