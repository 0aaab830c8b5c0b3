// `collcheck worker`: one rank of a launched world. It says hello (rank, pid, host), then runs
// every case it is sent, under the case's faults, and sends back its rank's results; it says
// how it dies when it dies, and exits at once when the launching process goes away.
#include "harness/cli_worker.h"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <csignal>
#include <cstring>
#include <exception>
#include <functional>
#include <mutex>
#include <optional>
#include <thread>

#include <poll.h>
#include <unistd.h>

#include "faults/injector.h"
#include "faults/plan.h"
#include "faults/socket_faults.h"
#include "harness/arguments.h"
#include "impls/worlds/control_socket.h"
#include "impls/worlds/launched_backend.h"
#include "impls/worlds/mpi_world.h"
#include "impls/backend/rank_backend.h"
#include "impls/worlds/wire.h"
#include "impls/registry.h"

namespace collcheck::cli {
namespace {

int control_fd = -1;  // for the signal handlers, which may only write()

// Sends a Dying frame by hand (kind 4, length, text): async-signal-safe.
void say_dying(const char* words) {
  if (control_fd < 0) return;
  const std::size_t length = std::strlen(words);
  unsigned char header[12] = {4, 0, 0, 0};
  for (std::size_t i = 0; i < 8; ++i) header[4 + i] = static_cast<unsigned char>(static_cast<std::uint64_t>(length) >> (8 * i));
  (void)!::write(control_fd, header, sizeof header);
  (void)!::write(control_fd, words, length);
}

void on_fatal_signal(int signal) {
  const char* words = signal == SIGSEGV ? "signal 11 (SIGSEGV)"
                      : signal == SIGABRT ? "signal 6 (SIGABRT)"
                      : signal == SIGBUS  ? "signal 7 (SIGBUS)"
                      : signal == SIGFPE  ? "signal 8 (SIGFPE)"
                                          : "signal 4 (SIGILL)";
  say_dying(words);
  std::signal(signal, SIG_DFL);
  std::raise(signal);
}

void on_terminate() {
  std::string words = "an exception escaped";
  if (std::exception_ptr current = std::current_exception()) {
    try {
      std::rethrow_exception(current);
    } catch (const std::exception& e) {
      words += ": " + std::string(e.what());
    } catch (...) {
    }
  }
  say_dying(words.c_str());
  std::signal(SIGABRT, SIG_DFL);
  std::abort();
}

// Exits the process as soon as the launching process closes the connection, even while the
// main thread is stuck inside a vendor's collective.
void watch_launcher(int fd) {
  std::thread([fd] {
    for (;;) {
      pollfd p{fd, POLLRDHUP, 0};
      if (::poll(&p, 1, -1) > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR))) ::_exit(3);
    }
  }).detach();
}

std::vector<std::byte> hello(int rank, const std::string& error) {
  char host[256] = {};
  ::gethostname(host, sizeof host - 1);
  wire::Writer w;
  w.u64(static_cast<std::uint64_t>(rank));
  w.u64(static_cast<std::uint64_t>(::getpid()));
  w.text(host);
  w.text(error);
  return std::move(w.data());
}

Result<std::unique_ptr<RankBackend>> make_backend(std::string_view name, World& world) {
  Result<std::vector<RankBackendSpec>> specs = rank_backend_specs(name);
  if (!specs) return specs.error();
  if (specs->size() != 1) return Error{"--backend", "'" + std::string(name) + "' names several backends; a worker runs one"};
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
    if (changed_.wait_for(lock, std::chrono::duration<double>(fault.trigger.at), [this] { return cancelled_; })) return;
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

// What every run of this worker shares: its rank, and every rank's process id (to tell which
// rank a vendor's socket leads to).
struct WorkerWorld {
  int rank = 0;
  std::vector<long> pids;
  World* world = nullptr;
};

// One run with the control world's calls bounded by the run's deadline: a rank that never joins
// a barrier (stopped, killed) ends the run `detected` here instead of leaving this rank waiting,
// and the world, whose control channel now has a call pending, is relaunched.
RankRun run_bounded(const WorkerWorld& world, const std::function<RankRun()>& run, double deadline) {
  using Clock = std::chrono::steady_clock;
  world.world->set_deadline(deadline > 0 ? Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                                              std::chrono::duration<double>(deadline))
                                         : Clock::time_point::max());
  RankRun result;
  try {
    result = run();
  } catch (const WorldTimeout& timeout) {
    result = RankRun{Outcome::Detected, timeout.what, {}, 0};
    result.world_broken = true;
  }
  world.world->set_deadline(Clock::time_point::max());
  return result;
}

// A vendor backend's run with the socket interposer armed by the plan (when the plan has
// faults a socket can take), this worker's control connection excluded.
RankRun run_over_sockets(RankBackend& backend, const wire::RunRequest& request, const FaultPlan& plan,
                         const WorkerWorld& world) {
  const bool any = std::any_of(plan.faults.begin(), plan.faults.end(),
                               [](const Fault& f) { return injectable_on_sockets(f.kind); });
  if (!any) return backend.run(request.c, request.options);
  if (!interposer_loaded()) {
    return RankRun{Outcome::Crash, "rank " + std::to_string(world.rank) + ": socket faults need libcollcheck-interpose.so "
                                   "preloaded (launched worlds preload it from next to the collcheck binary)", {}, 0};
  }
  SocketFaults faults(plan, request.fault_seed, request.options.deadline, world.rank, world.pids);
  RankRun run;
  {
    ArmedInterposer armed(faults, {control_fd});
    run = backend.run(request.c, request.options);
  }
  run.world_broken = faults.broke_connections();
  if (run.outcome != Outcome::Ok) run.error += " [socket faults here: " + faults.summary() + "]";
  return run;
}

// The run under the request's fault plan. stop and kill are signals to this process on every
// backend. The other kinds: on @proc this process's own injector, drawn from the same seed as
// every other rank's, applied to the messages this rank sends (it also still turns a stop or
// kill into dropped messages from `at` on, which the signal makes moot); on mpi and gloo the
// socket interposer.
RankRun run_with_faults(RankBackend& backend, wire::RunRequest& request, const WorkerWorld& world) {
  if (request.fault_plan.empty()) return backend.run(request.c, request.options);
  Result<FaultPlan> plan = parse_fault_plan(request.fault_plan);
  if (!plan) return RankRun{Outcome::Crash, plan.error().text(), {}, 0};
  PlannedSignal signal(*plan, world.rank);
  if (is_vendor_backend(backend.name())) return run_over_sockets(backend, request, *plan, world);
  FaultInjector injector(*plan, request.fault_seed, request.options.deadline);
  request.options.hook = &injector;
  return backend.run(request.c, request.options);
}

int serve(ControlSocket& control, RankBackend& backend, const WorkerWorld& world) {
  for (;;) {
    Result<Frame> frame = control.receive(SteadyTime::max());
    if (!frame || frame->kind == FrameKind::Quit) return 0;
    if (frame->kind != FrameKind::Run) continue;
    Result<wire::RunRequest> request = wire::decode_request(frame->payload);
    RankRun run;
    if (!request) {
      run.outcome = Outcome::Crash;
      run.error = request.error().text();
    } else {
      if (request->input) request->options.input = &*request->input;
      run = run_bounded(world, [&] { return run_with_faults(backend, *request, world); }, request->options.deadline);
    }
    if (!control.send(FrameKind::Result, wire::encode(run))) return 3;
  }
}

constexpr Option kOptions[] = {
    {"backend", "B", "", "the backend this rank runs (one spec of check --help)", Use::Required},
    {"connect", "HOST:PORT", "", "the control connection of the check or bench that launched the world", Use::Required},
};

}  // namespace

const CommandHelp& worker_help() {
  static constexpr CommandHelp help{
      "worker", "one rank of a world launched by check or bench through mpirun (not run by hand)", kOptions, "",
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
    err << "collcheck worker: --backend B and --connect HOST:PORT are required (workers are launched by check and bench)\n";
    return 2;
  }
  Result<World*> world = launched_world();
  if (!world) {
    err << "collcheck worker: " << world.error().text() << '\n';
    return 2;
  }
  Result<ControlSocket> control = ControlSocket::connect(connect.substr(0, colon), std::atoi(connect.c_str() + colon + 1),
                                                         std::chrono::steady_clock::now() + std::chrono::seconds(30));
  if (!control) {
    err << "collcheck worker: " << control.error().text() << '\n';
    return 2;
  }
  control_fd = control->fd();
  watch_launcher(control->fd());
  for (int s : {SIGSEGV, SIGABRT, SIGBUS, SIGFPE, SIGILL}) std::signal(s, on_fatal_signal);
  std::set_terminate(on_terminate);
  // Every rank's pid, gathered while no fault is armed (every rank is here at once).
  WorkerWorld shared{(*world)->rank(), {}, *world};
  const std::uint64_t pid = static_cast<std::uint64_t>(::getpid());
  for (const auto& bytes : (*world)->allgather({reinterpret_cast<const std::byte*>(&pid), sizeof pid})) {
    std::uint64_t other = 0;
    std::memcpy(&other, bytes.data(), std::min(bytes.size(), sizeof other));
    shared.pids.push_back(static_cast<long>(other));
  }
  Result<std::unique_ptr<RankBackend>> backend = make_backend(arguments->get("backend"), **world);
  if (!control->send(FrameKind::Hello, hello((*world)->rank(), backend ? "" : backend.error().text()))) return 3;
  if (!backend) return 2;
  return serve(*control, **backend, shared);
}

}  // namespace collcheck::cli
