// The fault-plan decorator: same name and capabilities as the backend it wraps, a fresh
// FaultInjector for every run, under the run's own plan when it names one.
#include "harness/faulty_backend.h"

#include "faults/injector.h"

namespace collcheck {
namespace {

class FaultyBackend final : public Backend {
 public:
  FaultyBackend(std::unique_ptr<Backend> inner, FaultPlan plan) : inner_(std::move(inner)), plan_(std::move(plan)) {}

  std::string name() const override { return inner_->name(); }
  Capabilities capabilities() const override { return inner_->capabilities(); }

  RepeatedRun run(const Case& c, const RunOptions& options) override {
    RunOptions faulty = options;
    faulty.hook = nullptr;
    faulty.fault_plan.clear();
    if (options.without_faults) return inner_->run(c, faulty);
    Result<FaultPlan> plan =
        options.fault_plan.empty() ? Result<FaultPlan>(plan_) : parse_fault_plan(options.fault_plan);
    if (!plan) return RepeatedRun::ended(Outcome::Crash, "the run's fault plan: " + plan.error().text());
    if (plan->empty()) return inner_->run(c, faulty);
    // sim's deadline is virtual: 60 s is far past any case, and a stuck run ends when its
    // events do.
    FaultInjector injector(*plan, options.schedule_seed, 60);
    faulty.hook = &injector;               // in this process (sim)
    faulty.fault_plan = to_string(*plan);  // in launched workers, which build their own
    return inner_->run(c, faulty);
  }

  void abort() override { inner_->abort(); }
  std::string cannot_run_here() const override { return inner_->cannot_run_here(); }

 private:
  std::unique_ptr<Backend> inner_;
  FaultPlan plan_;
};

}  // namespace

Result<std::unique_ptr<Backend>> with_faults(std::unique_ptr<Backend> backend, FaultPlan plan) {
  if (!backend->capabilities().hook) {
    return Error{"--faults", backend->name() +
                                 " cannot take faults yet: it has no send hook here. Backends that take "
                                 "them: every @sim backend and launched @proc worlds (ring@proc, "
                                 "tree@proc, ...); mpi, gloo and nccl:net=socket through the socket "
                                 "interposer where it is built, nccl through its net plugin; not nccl:net=ib "
                                 "(NCCL's own verbs carry its messages) nor @proc worlds in lockstep under mpirun"};
  }
  return std::unique_ptr<Backend>(std::make_unique<FaultyBackend>(std::move(backend), std::move(plan)));
}

}  // namespace collcheck
