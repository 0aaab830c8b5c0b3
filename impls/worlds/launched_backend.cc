// Launched worlds as a Backend: one world per rank count (and per with or without faults), kept
// for the next case and relaunched after a hang, a crash or a run that broke it; and the
// deadlines every cross-process run shares.
#include "impls/worlds/launched_backend.h"

#include <algorithm>
#include <map>
#include <memory>
#include <utility>

#include "impls/worlds/launched_world.h"
#include "reference/bandwidth.h"
#include "reference/memory.h"

namespace collcheck {
namespace {

class LaunchedBackend final : public Backend {
 public:
  LaunchedBackend(RankBackendSpec spec, BackendOptions options)
      : spec_(std::move(spec)), options_(std::move(options)), cannot_run_here_(spec_.cannot_run_here) {}
  ~LaunchedBackend() override { abort(); }

  std::string name() const override { return spec_.name; }
  // Vendor backends take faults through the socket interposer, where it was built, or through
  // what their fault environment loads (nccl's network plugin), unless nothing of ours is in
  // their messages' path (takes_no_faults).
  Capabilities capabilities() const override {
    Capabilities c = spec_.capabilities;
    if (is_vendor_backend(spec_.name) && spec_.takes_no_faults.empty() &&
        (interposer_built() || !spec_.fault_environment.empty()))
      c.hook = true;
    return c;
  }

  // Every rank's buffers and (a checked run) the results handed back, the processes themselves (a worker and
  // mpirun each hold about 18-21 MiB before any case: measured with ps on 4 ranks), and what the
  // world's processes hold besides (the spec's world_memory): the world runs on this host.
  MemoryEstimate estimate_memory(const Case& c, EstimateFor run) const override {
    constexpr std::uint64_t kProcessBytes = std::uint64_t{24} << 20;
    MemoryEstimate estimate = Backend::estimate_memory(c, run);
    const int workers = spec_.ranks_are_threads ? 1 : c.nranks;  // or one worker serving every rank
    estimate.add("processes", saturating_product(static_cast<std::uint64_t>(workers) + 1, kProcessBytes),
                 std::to_string(workers) + (workers == 1 ? " worker" : " workers") + " and mpirun, " +
                     format_bytes(kProcessBytes) + " each");
    if (spec_.world_memory) estimate.add(spec_.world_memory(c));
    return estimate;
  }

  RepeatedRun run(const Case& c, const RunOptions& options) override {
    if (!spec_.cannot_run_here.empty()) {
      RepeatedRun refused;
      refused.outcome = Outcome::Crash;
      refused.error = spec_.cannot_run_here;
      return refused;
    }
    const std::pair<int, bool> key{c.nranks, !options.fault_plan.empty()};
    std::unique_ptr<LaunchedWorld>& world = worlds_[key];
    if (!world) {
      world = std::make_unique<LaunchedWorld>();
      if (Status launched = world->launch(spec_, c.nranks, options_, key.second); !launched) {
        // Before any world of this backend ever started, a launch no rank of which reached us
        // says that mpirun cannot start ranks here, not that the backend is wrong.
        if (!started_once_ && !world->reached_a_rank()) cannot_run_here_ = launched.error().message;
        worlds_.erase(key);
        RepeatedRun failed;
        failed.outcome = Outcome::Crash;
        failed.error = launched.error().message;
        return failed;
      }
    }
    started_once_ = true;
    RepeatedRun run = world->run(c, options, run_deadline(c, options, options_));
    if (run.outcome == Outcome::Hang || run.outcome == Outcome::Crash || world->broken()) worlds_.erase(key);
    return run;
  }

  std::string cannot_run_here() const override { return cannot_run_here_; }

  void abort() override {
    for (auto& [n, world] : worlds_) world->stop(true);
    worlds_.clear();
  }

 private:
  RankBackendSpec spec_;
  BackendOptions options_;
  bool started_once_ = false;
  std::string cannot_run_here_;
  std::map<std::pair<int, bool>, std::unique_ptr<LaunchedWorld>> worlds_;  // by (ranks, under faults)
};

}  // namespace

double default_deadline(const Case& c, const RunOptions& options) {
  const double calls = options.timed ? options.warmup + options.iterations : std::max(options.calls, 1);
  const double bytes = static_cast<double>(algorithm_bytes(c)) * c.nranks * calls;
  return 20 + bytes / 50e6;
}

double run_deadline(const Case& c, const RunOptions& options, const BackendOptions& backend) {
  if (options.deadline > 0) return options.deadline;
  return backend.deadline > 0 ? backend.deadline : default_deadline(c, options);
}

RankRunOptions rank_run_options(const RunOptions& options, double deadline) {
  RankRunOptions out;
  static_cast<CallOptions&>(out) = options;
  out.calls = std::max(options.calls, 1);
  out.deadline = 0.8 * deadline;
  out.hook = nullptr;  // a hook lives in this process; the ranks build theirs from the fault plan
  return out;
}

std::unique_ptr<Backend> make_launched_backend(RankBackendSpec spec, const BackendOptions& options) {
  return std::make_unique<LaunchedBackend>(std::move(spec), options);
}

}  // namespace collcheck
