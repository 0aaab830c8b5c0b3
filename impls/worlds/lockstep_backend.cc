// Lockstep: every rank of a world the user launched runs the same check loop; each run is the
// rank's own part followed by an allgather of every rank's results over the control channel,
// watched by a deadline that stops the world when a rank hangs.
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <thread>

#include "impls/worlds/launched_backend.h"
#include "impls/worlds/mpi_world.h"
#include "impls/worlds/wire.h"
#include "impls/worlds/worker.h"
#include "reference/numbers.h"

namespace collcheck {
namespace {

// Stops the world when an armed run is not disarmed in time: one thread for the backend's life.
class Watchdog {
 public:
  Watchdog() : thread_([this] { watch(); }) {}
  ~Watchdog() {
    {
      std::lock_guard<std::mutex> guard(lock_);
      quit_ = true;
    }
    changed_.notify_all();
    thread_.join();
  }

  void arm(double seconds, std::string what) {
    {
      std::lock_guard<std::mutex> guard(lock_);
      armed_ = true;
      what_ = std::move(what);
      seconds_ = seconds;
      until_ = clock_after(std::chrono::steady_clock::now(), seconds);
    }
    changed_.notify_all();
  }

  void disarm() {
    std::lock_guard<std::mutex> guard(lock_);
    armed_ = false;
  }

 private:
  void watch() {
    std::unique_lock<std::mutex> guard(lock_);
    while (!quit_) {
      if (!armed_) {
        changed_.wait(guard);
        continue;
      }
      if (changed_.wait_until(guard, until_) == std::cv_status::timeout && armed_ && !quit_ &&
          std::chrono::steady_clock::now() >= until_) {
        std::fprintf(stderr, "collcheck: hang: %s did not finish within its deadline of %.1f s; stopping the world\n",
                     what_.c_str(), seconds_);
        std::fflush(stderr);
        abort_launched_world(3);
      }
    }
  }

  std::mutex lock_;
  std::condition_variable changed_;
  bool armed_ = false, quit_ = false;
  std::string what_;
  double seconds_ = 0;
  std::chrono::steady_clock::time_point until_;
  std::thread thread_;
};

class LockstepBackend final : public Backend {
 public:
  LockstepBackend(RankBackendSpec spec, std::unique_ptr<RankBackend> backend, World& world, BackendOptions options)
      : spec_(std::move(spec)), backend_(std::move(backend)), world_(world), options_(std::move(options)) {}

  std::string name() const override { return spec_.name; }

  Capabilities capabilities() const override {
    Capabilities c = spec_.capabilities;
    c.min_ranks = c.max_ranks = world_.size();
    c.hook = false;  // faults need a hook built above impls/; launched worlds build theirs in the worker
    return c;
  }

  RepeatedRun run(const Case& c, const RunOptions& options) override {
    if (c.nranks != world_.size()) {
      RepeatedRun refused;
      refused.outcome = Outcome::Crash;
      refused.error =
          "the case has " + std::to_string(c.nranks) + " ranks and the world " + std::to_string(world_.size());
      return refused;
    }
    const double deadline = run_deadline(c, options, options_);
    RankRunOptions rank_options = rank_run_options(options, deadline);
    if (options.inputs != nullptr) rank_options.input = &options.inputs->at(static_cast<std::size_t>(world_.rank()));
    watchdog_.arm(deadline,
                  "rank " + std::to_string(world_.rank()) + " on '" + to_string(c) + "' (" + spec_.name + ")");
    RankRun mine = rank_run_caught([&] { return backend_->run(c, rank_options); });
    watchdog_.disarm();
    std::vector<RankRun> all;
    for (const std::vector<std::byte>& encoded : world_.allgather(wire::encode(mine))) {
      Result<RankRun> run = wire::decode_run(encoded);
      all.push_back(run ? std::move(*run) : RankRun::ended(Outcome::Crash, run.error().message));
    }
    return wire::combine(std::move(all));
  }

 private:
  RankBackendSpec spec_;
  std::unique_ptr<RankBackend> backend_;
  World& world_;
  BackendOptions options_;
  Watchdog watchdog_;
};

}  // namespace

Result<std::unique_ptr<Backend>> make_lockstep_backend(RankBackendSpec spec, World& world,
                                                       const BackendOptions& options) {
  if (!spec.cannot_run_here.empty()) return Error{"--backend", spec.name + " cannot run here: " + spec.cannot_run_here};
  Result<std::unique_ptr<RankBackend>> backend = spec.make(world);
  if (!backend) return backend.error();
  return std::unique_ptr<Backend>(
      std::make_unique<LockstepBackend>(std::move(spec), std::move(*backend), world, options));
}

}  // namespace collcheck
