// The fault-plan decorator: same name and capabilities as the backend it wraps, a fresh
// FaultInjector for every run.
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
    // sim's deadline is virtual: 60 s is far past any case, and a stuck run ends when its
    // events do.
    FaultInjector injector(plan_, options.schedule_seed, 60);
    RunOptions faulty = options;
    faulty.hook = &injector;            // in this process (sim)
    faulty.fault_plan = to_string(plan_);  // in launched workers, which build their own
    return inner_->run(c, faulty);
  }

  void abort() override { inner_->abort(); }

 private:
  std::unique_ptr<Backend> inner_;
  FaultPlan plan_;
};

}  // namespace

Result<std::unique_ptr<Backend>> with_faults(std::unique_ptr<Backend> backend, FaultPlan plan) {
  if (!backend->capabilities().hook) {
    return Error{"--faults", backend->name() + " cannot take faults yet: the @sim backends and launched @proc "
                                               "worlds inject them (mpi, gloo and lockstep come with the rest of "
                                               "the fault issue)"};
  }
  return std::unique_ptr<Backend>(std::make_unique<FaultyBackend>(std::move(backend), std::move(plan)));
}

}  // namespace collcheck
