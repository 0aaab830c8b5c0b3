// One case's runs and properties, and batches of cases on threads of their own: each thread
// takes the next case not yet taken, on its own backends, and writes its run into the case's slot.
#include "harness/case_runs.h"

#include <atomic>

#include "reference/inputs.h"
#include "reference/shared_indices.h"

namespace collcheck {

PropertyContext context_for(double deadline, std::uint64_t schedule_seed, const FaultPlan& plan,
                            std::uint64_t message_memory) {
  PropertyContext context{schedule_seed};
  context.deadline = deadline;
  context.message_memory = message_memory;
  if (!plan.empty()) {
    context.fault_plan = to_string(plan);
    context.transient = transient(plan);
  }
  return context;
}

CaseRun run_case(const CaseSetting& setting, Backend& backend, const DrawnCase& drawn, std::uint64_t schedule_seed) {
  CaseRun run;
  run.ran = true;
  InputMemo kept_inputs(cli::kept_inputs_capacity(drawn.c));
  const InputMemo::Use use(kept_inputs);
  PropertyContext context =
      context_for(setting.deadline, schedule_seed, drawn.plan, cli::message_room(backend, drawn.c, setting.memory));
  const RepeatedRun base = backend.run(drawn.c, context.run_options(schedule_seed));
  run.base_outcome = base.outcome;
  run.cannot_run_here = backend.cannot_run_here();
  if (!run.cannot_run_here.empty()) return run;
  if (base.refused) {  // outside what the backend takes: no outcome to count, no property to judge
    run.refused = base.error;
    return run;
  }
  if (setting.faults) {
    context.outcome = classify(drawn.c, base);
    run.classified = context.outcome;
  }
  context.budget_spent = setting.spent && setting.spent();
  for (const Property* property : setting.properties) {
    run.results.push_back(property->check(drawn.c, backend, base, context));
    run.cannot_run_here = backend.cannot_run_here();
    if (!run.cannot_run_here.empty()) break;
  }
  run.finished = std::chrono::duration<double>(Clock::now() - setting.start).count();
  return run;
}

CaseWorkers::CaseWorkers(const Backend& backend, const BackendMaker& make, unsigned threads) {
  if (!make || threads < 2 || !backend.capabilities().independent_instances) return;
  for (unsigned k = 0; k < threads; ++k) {
    Result<std::unique_ptr<Backend>> made = make(backend.name());
    if (!made) {
      release();
      return;
    }
    Worker worker{std::move(made).value(), nullptr};
    worker.runners = std::make_unique<Runners>(*worker.backend, make);
    workers_.push_back(std::move(worker));
  }
}

std::vector<CaseRun> CaseWorkers::run(const CaseSetting& setting, const std::vector<DrawnCase>& cases,
                                      const std::vector<std::uint64_t>& seeds, Clock::time_point deadline) {
  std::vector<CaseRun> runs(cases.size());
  // Cases are taken in order, so every case before a failed one has been taken and runs to its end.
  std::atomic<bool> one_failed{false};
  share_indices(cases.size(), workers_.size(), [&](std::size_t k, std::size_t worker) {
    if (Clock::now() >= deadline || one_failed.load()) return false;
    const DrawnCase& drawn = cases[k];
    runs[k] = run_case(setting, workers_[worker].runners->at(drawn.knobs), drawn, seeds[k]);
    if (setting.stop_at_failure && runs[k].failed()) one_failed.store(true);
    return true;
  });
  return runs;
}

void CaseWorkers::release() {
  for (Worker& worker : workers_) {
    worker.runners->release();
    worker.backend->abort();
  }
  workers_.clear();
}

}  // namespace collcheck
