// Launched worlds: `mpirun -np N collcheck worker ...` in its own process group, one control
// connection per rank, deadlines on every reply, and a world that hung or lost a rank killed
// (process group, then every worker's pid) and relaunched on the next case; under faults, the
// socket interposer preloaded and planned stops and kills told apart from crashes.
#include "impls/worlds/launched_backend.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <thread>
#include <utility>

#include <fcntl.h>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include "impls/worlds/control_socket.h"
#include "impls/worlds/wire.h"
#include "reference/bandwidth.h"

namespace collcheck {
namespace {

using Clock = std::chrono::steady_clock;

constexpr double kLaunchSeconds = 60;
constexpr double kCrashGraceSeconds = 1;  // after one rank died, how long the others get

SteadyTime after(double seconds) {
  return Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
}

std::string self_executable() {
  char path[4096];
  const ssize_t n = ::readlink("/proc/self/exe", path, sizeof path - 1);
  return n > 0 ? std::string(path, static_cast<std::size_t>(n)) : "collcheck";
}

std::string interposer_path() {
  return (std::filesystem::path(self_executable()).parent_path() / kInterposerFile).string();
}

bool interposer_built() {
  std::error_code error;
  return std::filesystem::is_regular_file(interposer_path(), error);
}

std::string host_name() {
  char name[256] = {};
  ::gethostname(name, sizeof name - 1);
  return name;
}

std::string tail_of(const std::string& path, std::size_t lines) {
  std::ifstream in(path);
  std::vector<std::string> all;
  for (std::string line; std::getline(in, line);) {
    if (!line.empty()) all.push_back(line);
  }
  std::string out;
  for (std::size_t i = all.size() > lines ? all.size() - lines : 0; i < all.size(); ++i) out += "\n    " + all[i];
  return out;
}

// Where worlds keep their files: /dev/shm (tmpfs, as Open MPI wants for shared memory), else /tmp.
std::filesystem::path world_base() {
  std::error_code error;
  return std::filesystem::is_directory("/dev/shm", error) ? "/dev/shm" : "/tmp";
}

// Removes the world directories of collcheck processes that are gone (killed before they could
// clean up), once per process.
void sweep_stale_directories() {
  static bool swept = false;
  if (std::exchange(swept, true)) return;
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator(world_base(), error)) {
    const std::string name = entry.path().filename().string();
    if (!name.starts_with("collcheck-world-")) continue;
    const long pid = std::atol(name.c_str() + std::strlen("collcheck-world-"));
    if (pid > 0 && ::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH) std::filesystem::remove_all(entry.path(), error);
  }
}

// A fresh directory for one world: collcheck-world-PID-N.
std::string world_directory() {
  static int next = 0;
  sweep_stale_directories();
  const std::filesystem::path path =
      world_base() / ("collcheck-world-" + std::to_string(::getpid()) + "-" + std::to_string(next++));
  std::error_code error;
  std::filesystem::create_directories(path, error);
  return path.string();
}

struct Hello {
  int rank = -1;
  long pid = 0;
  std::string host;
  std::string error;
};

Hello read_hello(const Frame& frame) {
  wire::Reader r(frame.payload);
  Hello h;
  h.rank = static_cast<int>(r.u64());
  h.pid = static_cast<long>(r.u64());
  h.host = r.text();
  h.error = r.text();
  if (!r.ok()) h.error = "malformed hello";
  return h;
}

// One launched world: mpirun (leader of its process group), a connection per rank.
class LaunchedWorld {
 public:
  LaunchedWorld() = default;
  LaunchedWorld(const LaunchedWorld&) = delete;
  LaunchedWorld& operator=(const LaunchedWorld&) = delete;
  ~LaunchedWorld() { stop(false); }

  // `faulty`: the world will run cases under fault plans.
  Status launch(const RankBackendSpec& spec, int nranks, const BackendOptions& options, bool faulty) {
    Result<Listener> listener = Listener::open();
    if (!listener) return listener.error();
    // One directory per world for mpirun's output and Open MPI's shared-memory files (which a
    // killed world would otherwise leave in /dev/shm); removed with the world.
    directory_ = world_directory();
    log_ = directory_ + "/mpirun.log";
    std::vector<std::string> argv = {"mpirun", "-np", std::to_string(nranks), "--oversubscribe", "--bind-to", "none",
                                     "--mca", "btl_vader_backing_directory", directory_};
    for (const auto& [name, value] : spec.environment) {
      argv.push_back("-x");
      argv.push_back(name + "=" + value);
    }
    if (faulty) fault_arguments(spec, argv);
    argv.insert(argv.end(), options.launcher_arguments.begin(), options.launcher_arguments.end());
    const bool many_hosts = std::any_of(options.launcher_arguments.begin(), options.launcher_arguments.end(),
                                        [](const std::string& a) { return a.starts_with("--host") || a == "-H"; });
    const std::string connect = (many_hosts ? host_name() : std::string("127.0.0.1")) + ":" + std::to_string(listener->port());
    argv.insert(argv.end(), {self_executable(), "worker", "--backend", spec.name, "--connect", connect});
    command_.clear();
    for (const std::string& a : argv) command_ += (command_.empty() ? "" : " ") + a;
    if (Status started = start(argv); !started) return started;
    return accept_ranks(*listener, nranks);
  }

  // A run left the world unusable: a rank stopped or killed by the plan, or a vendor's
  // connections reset or corrupted. The backend relaunches it.
  bool broken() const { return broken_; }

  // Sends the request to every rank and waits for every reply until the deadline.
  RepeatedRun run(const Case& c, const RunOptions& options, double deadline) {
    const RankRunOptions rank_options = rank_run_options(options, deadline);
    for (std::size_t r = 0; r < ranks_.size(); ++r) {
      wire::RunRequest request{c, rank_options, std::nullopt, options.fault_plan, options.schedule_seed};
      if (options.inputs != nullptr) request.input = options.inputs->at(r);
      if (Status sent = ranks_[r].send(FrameKind::Run, wire::encode(request)); !sent) {
        return ended(Outcome::Crash, "rank " + std::to_string(r) + " is gone: " + sent.error().message);
      }
    }
    return collect(after(deadline), deadline);
  }

  // Kills the world: a polite quit when it is healthy, else the process group and every
  // worker we know of, at once.
  void stop(bool healthy) {
    if (mpirun_ <= 0) return;
    if (healthy) {
      for (ControlSocket& rank : ranks_) (void)rank.send(FrameKind::Quit, {});
      if (wait_for_exit(after(5))) return finish();
    }
    ranks_.clear();  // workers see their control connection close and exit
    ::kill(-mpirun_, SIGTERM);
    if (!wait_for_exit(after(2))) {
      ::kill(-mpirun_, SIGKILL);
      for (long pid : local_pids_) ::kill(static_cast<pid_t>(pid), SIGKILL);
      wait_for_exit(after(5));
    }
    for (long pid : local_pids_) ::kill(static_cast<pid_t>(pid), SIGKILL);
    finish();
  }

 private:
  // A rank the plan kills must not take the world down (Open MPI's default), and vendor
  // traffic goes through the interposer, MPI's over TCP.
  static void fault_arguments(const RankBackendSpec& spec, std::vector<std::string>& argv) {
    argv.push_back("--enable-recovery");
    if (!is_vendor_backend(spec.name) || !interposer_built()) return;
    argv.insert(argv.end(), {"-x", "LD_PRELOAD=" + interposer_path()});
#if defined(__SANITIZE_ADDRESS__)
    // Under AddressSanitizer its runtime insists on coming first among the loaded libraries; the
    // interposer, preloaded, would come before it. Its own wrappers still reach ASan's through
    // RTLD_NEXT, so the order does not matter here.
    const char* asan = std::getenv("ASAN_OPTIONS");
    argv.insert(argv.end(), {"-x", std::string("ASAN_OPTIONS=") + (asan ? std::string(asan) + ":" : "") +
                                       "verify_asan_link_order=0"});
#endif
    if (spec.name.starts_with("mpi")) argv.insert(argv.end(), {"--mca", "btl", "tcp,self"});
  }

  Status start(const std::vector<std::string>& argv) {
    const pid_t child = ::fork();
    if (child < 0) return Error{"--backend", std::string("fork: ") + std::strerror(errno)};
    if (child == 0) {
      ::setpgid(0, 0);
      const int log = ::open(log_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      if (log >= 0) {
        ::dup2(log, 1);
        ::dup2(log, 2);
      }
      if (::geteuid() == 0) {
        ::setenv("OMPI_ALLOW_RUN_AS_ROOT", "1", 1);
        ::setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", 1);
      }
      std::vector<char*> args;
      for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
      args.push_back(nullptr);
      ::execvp(args[0], args.data());
      std::fprintf(stderr, "collcheck: cannot run mpirun: %s\n", std::strerror(errno));
      ::_exit(127);
    }
    ::setpgid(child, child);
    mpirun_ = child;
    return Ok{};
  }

  Status accept_ranks(Listener& listener, int nranks) {
    const SteadyTime deadline = after(kLaunchSeconds);
    ranks_.clear();
    ranks_.resize(static_cast<std::size_t>(nranks));
    for (int accepted = 0; accepted < nranks;) {
      Result<ControlSocket> socket = listener.accept(std::min(deadline, after(0.2)));
      if (!socket) {
        if (exited()) return launch_error("mpirun ended before every rank connected");
        if (Clock::now() >= deadline) return launch_error("ranks did not connect within 60 s");
        continue;
      }
      Result<Frame> frame = socket->receive(after(kLaunchSeconds));
      if (!frame || frame->kind != FrameKind::Hello) return launch_error("a rank connected but sent no hello");
      const Hello hello = read_hello(*frame);
      if (!hello.error.empty()) return launch_error("rank " + std::to_string(hello.rank) + ": " + hello.error);
      if (hello.rank < 0 || hello.rank >= nranks || ranks_[static_cast<std::size_t>(hello.rank)].open()) {
        return launch_error("a worker said it was rank " + std::to_string(hello.rank));
      }
      if (hello.host == host_name()) local_pids_.push_back(hello.pid);
      pids_[hello.rank] = hello.host == host_name() ? hello.pid : 0;
      ranks_[static_cast<std::size_t>(hello.rank)] = std::move(*socket);
      ++accepted;
    }
    return Ok{};
  }

  Error launch_error(const std::string& what) {
    const std::string output = tail_of(log_, 12);
    stop(false);
    return Error{"--backend", "launching `" + command_ + "`: " + what + "; its output:" + output};
  }

  RepeatedRun collect(SteadyTime deadline, double seconds) {
    const std::size_t n = ranks_.size();
    std::vector<std::optional<RankRun>> replies(n);
    std::vector<std::string> died(n), planned(n);  // planned: stopped or killed by the fault plan
    std::size_t answered = 0, dead = 0, stopped = 0;
    std::vector<Frame> frames(n);
    const auto waiting = [&](std::size_t r) { return !replies[r] && died[r].empty() && planned[r].empty(); };
    while (answered + dead + stopped < n) {
      const SteadyTime until = dead > 0 ? std::min(deadline, first_death_ + std::chrono::seconds(1)) : deadline;
      if (Clock::now() >= until) break;
      std::vector<pollfd> polls;
      for (std::size_t r = 0; r < n; ++r) {
        if (waiting(r)) polls.push_back(pollfd{ranks_[r].fd(), POLLIN, 0});
      }
      const auto wait = std::chrono::duration_cast<std::chrono::milliseconds>(until - Clock::now()).count();
      ::poll(polls.data(), polls.size(), static_cast<int>(std::clamp<long long>(wait, 0, 1000)));
      for (std::size_t r = 0; r < n; ++r) {
        if (!waiting(r)) continue;
        for (;;) {
          Result<bool> got = ranks_[r].receive_some(frames[r]);
          if (!got) {
            died[r] = dying_words_[r].empty() ? "its process ended" : dying_words_[r];
            if (dead++ == 0) first_death_ = Clock::now();
            break;
          }
          if (!*got) break;
          if (frames[r].kind == FrameKind::Dying) {
            std::string words(reinterpret_cast<const char*>(frames[r].payload.data()), frames[r].payload.size());
            if (words.starts_with(kPlannedFaultWords)) {
              planned[r] = words.substr(kPlannedFaultWords.size());
              ++stopped;
              break;
            }
            dying_words_[r] = std::move(words);
            continue;
          }
          Result<RankRun> run = wire::decode_run(frames[r].payload);
          replies[r] = run ? std::move(*run) : RankRun{Outcome::Crash, run.error().message, {}, 0};
          ++answered;
          break;
        }
      }
    }
    return judge(std::move(replies), died, planned, seconds);
  }

  RepeatedRun judge(std::vector<std::optional<RankRun>> replies, const std::vector<std::string>& died,
                    const std::vector<std::string>& planned, double seconds) {
    kill_planned(planned);
    // A rank that said how it died is the cause; mpirun then takes the others down with it.
    const bool any_words = !dying_words_.empty();
    std::string dead, silent;
    for (std::size_t r = 0; r < replies.size(); ++r) {
      if (!died[r].empty() && (!any_words || dying_words_.contains(r))) {
        dead += (dead.empty() ? "" : "; ") + std::string("rank ") + std::to_string(r) + " died: " + died[r];
      } else if (!replies[r] && died[r].empty() && planned[r].empty()) {
        silent += (silent.empty() ? "" : ", ") + std::to_string(r);
      }
    }
    if (!dead.empty()) {
      stop(false);
      return ended(Outcome::Crash, dead + signal_lines());
    }
    if (!silent.empty()) {
      stop(false);
      char limit[32];
      std::snprintf(limit, sizeof limit, "%.1f", seconds);
      return ended(Outcome::Hang, "rank(s) " + silent + " did not return within the deadline of " + limit + " s");
    }
    // The ranks the plan took away count as having seen an error: the run is at least
    // `detected`, judged otherwise on the others' replies.
    std::vector<RankRun> all;
    for (std::size_t r = 0; r < replies.size(); ++r) {
      if (!planned[r].empty()) {
        all.push_back(RankRun{Outcome::Detected, "taken away by the fault plan (" + planned[r] + ")", {}, 0, true});
      } else {
        all.push_back(std::move(*replies[r]));
      }
      broken_ = broken_ || all.back().world_broken;
    }
    return wire::combine(std::move(all));
  }

  // A stopped rank cannot even take SIGTERM: planned victims get SIGKILL at once.
  void kill_planned(const std::vector<std::string>& planned) {
    for (std::size_t r = 0; r < planned.size(); ++r) {
      const auto pid = pids_.find(static_cast<int>(r));
      if (!planned[r].empty() && pid != pids_.end() && pid->second > 0) ::kill(static_cast<pid_t>(pid->second), SIGKILL);
    }
  }

  std::string signal_lines() {
    std::string out;
    std::ifstream in(log_);
    for (std::string line; std::getline(in, line);) {
      if (line.find("signal") != std::string::npos || line.find("Aborted") != std::string::npos) out += "\n    " + line;
    }
    return out;
  }

  static RepeatedRun ended(Outcome outcome, std::string error) {
    RepeatedRun run;
    run.outcome = outcome;
    run.error = std::move(error);
    return run;
  }

  bool exited() {
    if (mpirun_ <= 0) return true;
    int status = 0;
    return ::waitpid(mpirun_, &status, WNOHANG) == mpirun_ && (mpirun_ = -1, true);
  }

  bool wait_for_exit(SteadyTime deadline) {
    while (!exited()) {
      if (Clock::now() >= deadline) return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return true;
  }

  void finish() {
    ranks_.clear();
    local_pids_.clear();
    pids_.clear();
    mpirun_ = -1;
    std::error_code ignored;
    if (!directory_.empty()) std::filesystem::remove_all(directory_, ignored);
    directory_.clear();
  }

  pid_t mpirun_ = -1;
  std::vector<ControlSocket> ranks_;
  std::vector<long> local_pids_;
  std::map<int, long> pids_;  // per rank, on this host (0: elsewhere)
  bool broken_ = false;
  std::map<std::size_t, std::string> dying_words_;
  SteadyTime first_death_;
  std::string directory_;
  std::string log_;
  std::string command_;
};

class LaunchedBackend final : public Backend {
 public:
  LaunchedBackend(RankBackendSpec spec, BackendOptions options) : spec_(std::move(spec)), options_(std::move(options)) {}
  ~LaunchedBackend() override { abort(); }

  std::string name() const override { return spec_.name; }
  // Vendor backends take faults through the socket interposer, where it was built.
  Capabilities capabilities() const override {
    Capabilities c = spec_.capabilities;
    if (is_vendor_backend(spec_.name) && interposer_built()) c.hook = true;
    return c;
  }

  RepeatedRun run(const Case& c, const RunOptions& options) override {
    const std::pair<int, bool> key{c.nranks, !options.fault_plan.empty()};
    std::unique_ptr<LaunchedWorld>& world = worlds_[key];
    if (!world) {
      world = std::make_unique<LaunchedWorld>();
      if (Status launched = world->launch(spec_, c.nranks, options_, key.second); !launched) {
        worlds_.erase(key);
        RepeatedRun failed;
        failed.outcome = Outcome::Crash;
        failed.error = launched.error().message;
        return failed;
      }
    }
    RepeatedRun run = world->run(c, options, run_deadline(c, options, options_));
    if (run.outcome == Outcome::Hang || run.outcome == Outcome::Crash || world->broken()) worlds_.erase(key);
    return run;
  }

  void abort() override {
    for (auto& [n, world] : worlds_) world->stop(true);
    worlds_.clear();
  }

 private:
  RankBackendSpec spec_;
  BackendOptions options_;
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
  out.calls = std::max(options.calls, 1);
  out.deadline = 0.8 * deadline;
  out.timed = options.timed;
  out.warmup = options.warmup;
  out.iterations = options.iterations;
  out.checked = options.checked;
  return out;
}

std::unique_ptr<Backend> make_launched_backend(RankBackendSpec spec, const BackendOptions& options) {
  return std::make_unique<LaunchedBackend>(std::move(spec), options);
}

}  // namespace collcheck
