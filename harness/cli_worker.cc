// `collcheck worker`: one rank of a launched world. The serving is the worker's core
// (impls/worlds/worker.h); this command gives it the backend named on its command line and
// applies each run's fault plan: planned stops and kills, the fault injector, socket faults.
// `collcheck guard`: the world's guard (impls/worlds/leftovers.h) with the pids it watches.
#include "harness/cli_worker.h"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <csignal>
#include <cstdlib>
#include <limits>
#include <mutex>
#include <optional>
#include <thread>

#include <sys/types.h>

#include "faults/injector.h"
#include "faults/plan.h"
#include "faults/socket_faults.h"
#include "harness/arguments.h"
#include "impls/backend/rank_backend.h"
#include "impls/registry.h"
#include "impls/worlds/launched_backend.h"
#include "impls/worlds/leftovers.h"
#include "impls/worlds/mpi_world.h"
#include "impls/worlds/worker.h"
#include "reference/numbers.h"

namespace collcheck::cli {
namespace {

Result<std::unique_ptr<RankBackend>> make_backend(std::string_view name, World& world) {
  Result<std::vector<RankBackendSpec>> specs = rank_backend_specs(name);
  if (!specs) return specs.error();
  if (specs->size() != 1) return Error{"--backend", quoted_input(name) + " names several backends; a worker runs one"};
  return specs->front().make(world);
}

// A planned `stop` or `kill` of this rank: S seconds into the run the process raises SIGSTOP or
// SIGKILL on itself, having first told the launcher it is planned (so it is not a `crash`).
// The timer dies with the run: a rank that finished before S is left alone.
class PlannedSignal {
 public:
  PlannedSignal(const FaultPlan& plan, int rank) {
    std::optional<Fault> first;
    for (const Fault& f : plan.faults) {
      const bool mine = (f.kind == FaultKind::Stop || f.kind == FaultKind::Kill) &&
                        f.target.scope == Target::Scope::Rank && f.target.rank == rank;
      if (mine && (!first || f.trigger.at < first->trigger.at)) first = f;
    }
    if (!first) return;
    thread_ = std::thread([this, fault = *first, rank] { wait_then_signal(fault, rank); });
  }
  ~PlannedSignal() {
    {
      const std::lock_guard<std::mutex> lock(mutex_);
      cancelled_ = true;
    }
    changed_.notify_all();
    if (thread_.joinable()) thread_.join();
  }
  PlannedSignal(const PlannedSignal&) = delete;
  PlannedSignal& operator=(const PlannedSignal&) = delete;

 private:
  void wait_then_signal(const Fault& fault, int rank) {
    std::unique_lock<std::mutex> lock(mutex_);
    const auto at = clock_after(std::chrono::steady_clock::now(), fault.trigger.at);
    if (changed_.wait_until(lock, at, [this] { return cancelled_; })) return;
    const bool kill = fault.kind == FaultKind::Kill;
    const std::string words = std::string(kPlannedFaultWords) + (kill ? "SIGKILL" : "SIGSTOP") + " to rank " +
                              std::to_string(rank) + " by `" + to_string(fault) + "`";
    say_dying(words.c_str());
    ::raise(kill ? SIGKILL : SIGSTOP);
  }

  std::mutex mutex_;
  std::condition_variable changed_;
  bool cancelled_ = false;
  std::thread thread_;
};

// A vendor backend's run with its faults armed by the plan (when the plan has faults a stream of
// bytes can take): nccl's through its network plugin (the world's NCCL_NET_PLUGIN, which NCCL
// loaded), the others' (and nccl:net=socket's) through the socket interposer, this worker's
// control connection excluded.
RankRun run_over_sockets(RankBackend& backend, const wire::RunRequest& request, const FaultPlan& plan,
                         const WorkerRank& rank) {
  const bool any =
      std::any_of(plan.faults.begin(), plan.faults.end(), [](const Fault& f) { return injectable_on_sockets(f.kind); });
  if (!any) return backend.run(request.c, request.options);
  const std::string who = "rank " + std::to_string(rank.rank);
  const char* plugin = std::getenv("NCCL_NET_PLUGIN");
  const bool nccl = names_family(backend.name(), "nccl") && plugin != nullptr;  // through the net plugin
  if (!nccl && !interposer_loaded()) {
    return RankRun::ended(Outcome::Crash,
                          who +
                              ": socket faults need libcollcheck-interpose.so preloaded (launched worlds "
                              "preload it from next to the collcheck binary), NCCL's the world started with "
                              "NCCL_NET_PLUGIN");
  }
  SocketFaults faults(plan, request.fault_seed, request.options.deadline, rank.rank, rank.pids);
  RankRun run;
  if (nccl) {
    ArmedNcclNet armed(faults, plugin);
    if (!armed.armed()) return RankRun::ended(Outcome::Crash, who + ": " + armed.why());
    run = backend.run(request.c, request.options);
  } else {
    ArmedInterposer armed(faults, {rank.control_fd});
    run = backend.run(request.c, request.options);
  }
  run.world_broken = run.world_broken || faults.broke_connections();
  if (run.outcome != Outcome::Ok) {
    run.error += std::string(" [") + (nccl ? "NCCL net" : "socket") + " faults here: " + faults.summary() + "]";
  }
  return run;
}

// The run under the request's fault plan. stop and kill are signals to this process on every
// backend. The other kinds: on @proc this process's own injector, drawn from the same seed as
// every other rank's, applied to the messages this rank sends (it also still turns a stop or
// kill into dropped messages from `at` on, which the signal makes moot); on mpi, gloo and
// plugins the socket interposer; on nccl its network plugin. Where every rank is a thread of this
// process (`one_process`: --threads) a signal would take every rank, so a planned stop or kill is
// what it is on `sim`, the rank's messages dropped from its time on (the injector); and the
// interposer and NCCL's plugin take one rank's faults per process, so a vendor's run under faults
// is refused (its spec says so: takes_no_faults).
RankRun run_with_faults(RankBackend& backend, wire::RunRequest& request, const WorkerRank& rank, bool one_process) {
  Result<FaultPlan> plan = parse_fault_plan(request.fault_plan);
  if (!plan) return RankRun::ended(Outcome::Crash, plan.error().text());
  const bool vendor = is_vendor_backend(backend.name());
  if (vendor && one_process) {
    return RankRun::ended(Outcome::Crash, "rank " + std::to_string(rank.rank) +
                                              ": faults on a vendor's sockets need a process per rank, and "
                                              "this world's ranks are threads of one process");
  }
  std::optional<PlannedSignal> signal;
  if (!one_process) signal.emplace(*plan, rank.rank);
  if (vendor) return run_over_sockets(backend, request, *plan, rank);
  FaultInjector injector(*plan, request.fault_seed, request.options.deadline);
  request.options.hook = &injector;
  return backend.run(request.c, request.options);
}

// run_with_faults for a worker whose ranks are each a process, or (`one_process`) threads of one.
RunUnderFaults faults_where(bool one_process) {
  return [one_process](RankBackend& backend, wire::RunRequest& request, const WorkerRank& rank) {
    return run_with_faults(backend, request, rank, one_process);
  };
}

constexpr Option kOptions[] = {
    {"backend", "B", "", "the backend this rank runs (one spec of check --help)", Use::Required},
    {"connect", "HOST:PORT", "", "the control connection of the check or bench that launched the world", Use::Required},
    {"threads", "N", "", "serve as every rank of a world of N ranks, each a thread of this process", Use::Once},
};

constexpr Option kGuardOptions[] = {
    {"launcher", "PID", "", "the check or bench that launched the world", Use::Required},
    {"launcher-pidfd", "FD", "", "a pidfd of the launcher (without one the guard asks kill() every 0.1 s)"},
    {"world", "PID", "", "the world's mpirun, which leads the world's session", Use::Required},
    {"directory", "DIR", "", "the world's directory, whose job the world's processes carry", Use::Required},
    {"grace", "S", "3", "seconds mpirun has to stop its ranks once the launcher is gone"},
};

}  // namespace

const CommandHelp& worker_help() {
  static constexpr CommandHelp help{
      "worker",
      "one rank of a world launched by check or bench through mpirun (not run by hand)",
      kOptions,
      "",
      "check, replay and bench start workers through mpirun and talk to them over --connect (docs/processes.md).",
      "mpirun -np 4 collcheck worker --backend ring@proc --connect 127.0.0.1:40000"};
  return help;
}

int run_worker(std::span<const std::string_view> args, std::ostream&, std::ostream& err) {
  Result<Arguments> arguments = Arguments::parse(args, kOptions);
  if (!arguments) {
    err << "collcheck worker: " << arguments.error().text() << '\n';
    return 2;
  }
  const std::string connect = arguments->get("connect");
  const std::size_t colon = connect.rfind(':');
  if (!arguments->has("backend") || colon == std::string::npos) {
    err << "collcheck worker: --backend B and --connect HOST:PORT are required (workers are launched by check and "
           "bench)\n";
    return 2;
  }
  const std::string backend = arguments->get("backend");
  const std::string host = connect.substr(0, colon);
  const int port = std::atoi(connect.c_str() + colon + 1);
  auto make = [&](World& members) { return make_backend(backend, members); };
  if (arguments->has("threads")) {
    Result<std::uint64_t> threads = parse_count("--threads", arguments->get("threads"), 1, kMaxRanks);
    if (!threads) {
      err << "collcheck worker: " << threads.error().text() << '\n';
      return 2;
    }
    return serve_launcher_in_threads(host, port, static_cast<int>(*threads), make, faults_where(true));
  }
  Result<World*> world = launched_world();
  if (!world) {
    err << "collcheck worker: " << world.error().text() << '\n';
    return 2;
  }
  Result<ControlSocket> control = connect_to_launcher(host, port);
  if (!control) {
    err << "collcheck worker: " << control.error().text() << '\n';
    return 2;
  }
  return serve_launcher(*control, **world, make, faults_where(false));
}

const CommandHelp& guard_help() {
  static constexpr CommandHelp help{
      "guard",
      "takes a launched world down once the check or bench that launched it is gone (not run by hand)",
      kGuardOptions,
      "",
      "Every launched world starts one as mpirun's child; it dies with mpirun while the launcher lives "
      "(docs/processes.md).",
      "collcheck guard --launcher 4242 --world 4250 --directory /dev/shm/collcheck-world-4242-1"};
  return help;
}

int run_guard(std::span<const std::string_view> args, std::ostream&, std::ostream& err) {
  Result<Arguments> arguments = Arguments::parse(args, kGuardOptions);
  if (!arguments) {
    err << "collcheck guard: " << arguments.error().text() << '\n';
    return 2;
  }
  if (arguments->get("directory").empty()) {
    err << "collcheck guard: --directory DIR is required (guards are started by launched worlds)\n";
    return 2;
  }
  const auto pid = [&](std::string_view name) {
    return parse_count("--" + std::string(name), arguments->get(name), 1, std::numeric_limits<pid_t>::max());
  };
  const Result<std::uint64_t> launcher = pid("launcher");
  const Result<std::uint64_t> world = pid("world");
  const Result<std::uint64_t> grace = parse_count("--grace", arguments->get("grace"), 0, 3600);
  const bool has_pidfd = arguments->has("launcher-pidfd");
  const Result<std::uint64_t> pidfd =
      has_pidfd ? parse_count("--launcher-pidfd", arguments->get("launcher-pidfd"), 0, 1 << 20) : std::uint64_t{0};
  for (const Result<std::uint64_t>* parsed : {&launcher, &world, &grace, &pidfd}) {
    if (!*parsed) {
      err << "collcheck guard: " << parsed->error().text() << '\n';
      return 2;
    }
  }
  guard_world(static_cast<long>(*launcher), has_pidfd ? static_cast<int>(*pidfd) : -1, static_cast<long>(*world),
              arguments->get("directory"), static_cast<long>(*grace));
  return 0;
}

}  // namespace collcheck::cli
