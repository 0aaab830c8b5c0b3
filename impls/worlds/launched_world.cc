// Launched worlds' processes: `mpirun -np N collcheck worker ...` (or `-np 1 ... --threads N`
// where the spec's ranks are threads of one process) in a session of its own, in a
// directory of its own, its ranks' control connections accepted, and the world killed (every
// process below mpirun, then mpirun) and cleaned up; under faults, the socket interposer preloaded.
#include "impls/worlds/launched_world.h"

#include <algorithm>
#include <array>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string_view>
#include <thread>
#include <tuple>
#include <utility>

#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "impls/backend/pinned_files.h"
#include "impls/worlds/interrupts.h"
#include "impls/worlds/launched_backend.h"
#include "impls/worlds/leftovers.h"
#include "impls/worlds/mpi_world.h"
#include "impls/worlds/wire.h"

namespace collcheck {
namespace {

using Clock = std::chrono::steady_clock;

constexpr double kLaunchSeconds = 60;
// How long mpirun has to stop its ranks after its launcher's death before the guard kills them.
constexpr long kGuardGraceSeconds = 3;

// This program's file, as a path: the link in /proc, less the " (deleted)" the kernel adds once
// the file has been removed or replaced (a rebuild does both).
std::string self_executable() {
  char path[4096];
  const ssize_t n = ::readlink("/proc/self/exe", path, sizeof path - 1);
  if (n <= 0) return "collcheck";
  std::string found(path, static_cast<std::size_t>(n));
  constexpr std::string_view kDeleted = " (deleted)";
  if (found.ends_with(kDeleted)) found.resize(found.size() - kDeleted.size());
  return found;
}

// What a world's ranks run. On one host: a link in the world's directory, named as this program
// is, to this process's own image (/proc/PID/exe, which the kernel keeps while the process lives),
// so that a campaign whose binary is rebuilt or removed while it runs goes on launching the
// program it started with (a new build may not speak its wire; a removed one cannot be run), and
// `ps` still says `collcheck worker`. Across hosts, or where the link cannot be made: the
// program's path, which every host must have.
std::string worker_program(const std::string& directory, bool many_hosts) {
  std::string path = self_executable();
  if (many_hosts) return path;
  const std::filesystem::path image = pinned_program();
  const std::filesystem::path link = std::filesystem::path(directory) / std::filesystem::path(path).filename();
  std::error_code error;
  if (!std::filesystem::exists(image, error)) return path;
  std::filesystem::create_symlink(image, link, error);
  return error ? path : link.string();
}

std::string interposer_path() {
  return (std::filesystem::path(self_executable()).parent_path() / kInterposerFile).string();
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

}  // namespace

std::string notable_log_lines(const std::string& log_text, std::size_t most) {
  static constexpr std::array<std::string_view, 7> kMarks = {
      "signal", "Aborted", "Sanitizer", "runtime error:", "terminate called", "Segmentation fault", "core dumped"};
  std::string out;
  std::size_t taken = 0;
  std::istringstream lines(log_text);
  for (std::string line; taken < most && std::getline(lines, line);) {
    if (std::any_of(kMarks.begin(), kMarks.end(),
                    [&](std::string_view mark) { return line.find(mark) != line.npos; })) {
      out += "\n    " + line;
      ++taken;
    }
  }
  return out;
}

namespace {

// Where a world of `processes` keeps its files: world_base() (/dev/shm) where it has room for them
// (Open MPI's shared-memory files and session directory: 8.9 MiB for 8 processes, measured; proc's
// segments find their own room, create_segment), else /tmp. A container's /dev/shm (64 MiB unless
// `docker run --shm-size` says more), filled by the worlds kept for other rank counts, made a
// world's MPI_Init fail, and the case was reported as the backend's crash.
std::filesystem::path world_folder(int processes) {
  constexpr std::uintmax_t kPerProcess = std::uintmax_t{4} << 20;
  constexpr std::uintmax_t kPerWorld = std::uintmax_t{16} << 20;
  std::error_code error;
  const std::filesystem::path base = world_base();
  const std::filesystem::space_info space = std::filesystem::space(base, error);
  const std::uintmax_t wanted = kPerWorld + static_cast<std::uintmax_t>(std::max(processes, 1)) * kPerProcess;
  return !error && space.available < wanted ? std::filesystem::path("/tmp") : base;
}

// A fresh directory for one world of `processes`, collcheck-world-PID-N, and its job name,
// mpi-PID-N; what dead owners left is swept first.
std::pair<std::string, std::string> world_directory_and_job(int processes) {
  static int next = 0;
  sweep_leftovers();
  const std::string id = std::to_string(::getpid()) + "-" + std::to_string(next++);
  const std::filesystem::path path = world_folder(processes) / ("collcheck-world-" + id);
  std::error_code error;
  std::filesystem::create_directories(path, error);
  return {path.string(), "mpi-" + id};
}

#if defined(__SANITIZE_ADDRESS__)
// Under AddressSanitizer the workers run with this process's ASAN_OPTIONS but without leak
// detection: nothing reads a worker's report (it goes to the world's log as the world stops),
// MPI_Init's own allocations make every worker report one, and symbolising it took about 2 s of
// CPU per world, a good part of the sanitizer preset's time. Leaks in our own code are still
// found by the tests that run it in this process (thread worlds, the simulator, the gtests).
std::string worker_asan_options() {
  const char* asan = std::getenv("ASAN_OPTIONS");
  return (asan != nullptr && *asan != '\0' ? std::string(asan) + ":" : std::string()) + "detect_leaks=0";
}
#endif

}  // namespace

bool spans_hosts(const std::vector<std::string>& launcher_arguments) {
  static constexpr std::array<std::string_view, 8> kHostOptions = {
      "--host", "-H", "-host", "--hostfile", "-hostfile", "--machinefile", "-machinefile", "--default-hostfile"};
  return std::any_of(launcher_arguments.begin(), launcher_arguments.end(), [](const std::string& argument) {
    const std::string_view name = std::string_view(argument).substr(0, argument.find('='));
    return std::find(kHostOptions.begin(), kHostOptions.end(), name) != kHostOptions.end();
  });
}

std::string nccl_net_plugin_path() {
  return (std::filesystem::path(self_executable()).parent_path() / kNcclNetPluginFile).string();
}

bool interposer_built() {
  std::error_code error;
  return std::filesystem::is_regular_file(interposer_path(), error);
}

Status LaunchedWorld::launch(const RankBackendSpec& spec, int nranks, const BackendOptions& options, bool faulty) {
  Result<Listener> listener = Listener::open();
  if (!listener) return listener.error();
  // One directory per world for mpirun's output, Open MPI's shared-memory files and its session
  // directory (mpirun's TMPDIR), which a killed world would otherwise leave in /dev/shm and
  // /tmp; removed with the world. The job name goes into the names of the ranks' segments.
  // From the directory's creation until mpirun is recorded, a signal waits (interrupts.h).
  TeardownLock held = hold_teardown_list();
  // A spec whose ranks are threads of one process gets one process that serves every rank.
  const int processes = spec.ranks_are_threads ? 1 : nranks;
  std::string job;
  std::tie(directory_, job) = world_directory_and_job(processes);
  log_ = directory_ + "/mpirun.log";
  std::vector<std::string> argv = {"mpirun", "-np",   std::to_string(processes),     "--oversubscribe", "--bind-to",
                                   "none",   "--mca", "btl_vader_backing_directory", directory_};
  argv.insert(argv.end(), {"-x", std::string(kJobVariable) + "=" + job});
  const bool many_hosts = spans_hosts(options.launcher_arguments);
  for (const auto& [name, value] : spec.environment) argv.insert(argv.end(), {"-x", name + "=" + value});
  if (!many_hosts) {
    for (const auto& [name, value] : spec.same_host_environment) argv.insert(argv.end(), {"-x", name + "=" + value});
  }
  if (faulty) fault_arguments(spec, many_hosts, argv);
  argv.insert(argv.end(), options.launcher_arguments.begin(), options.launcher_arguments.end());
  const std::string connect =
      (many_hosts ? this_host_name() : std::string("127.0.0.1")) + ":" + std::to_string(listener->port());
  argv.insert(argv.end(),
              {worker_program(directory_, many_hosts), "worker", "--backend", spec.name, "--connect", connect});
  if (spec.ranks_are_threads) argv.insert(argv.end(), {"--threads", std::to_string(nranks)});
  command_.clear();
  for (const std::string& a : argv) command_ += (command_.empty() ? "" : " ") + a;
  Status started = start(argv, held);
  held.unlock();
  if (!started) return started;
  return accept_ranks(*listener, nranks);
}

void LaunchedWorld::stop(bool healthy) {
  if (mpirun_ <= 0) {
    if (!directory_.empty()) finish();  // mpirun never started (or has been reaped)
    return;
  }
  if (healthy) {
    for (ControlSocket& rank : ranks_) (void)rank.send(FrameKind::Quit, {});
    if (wait_for_exit(seconds_from_now(5))) return finish();
  }
  ranks_.clear();  // workers see their control connection close and exit
  // Every local process below mpirun at once, ranks that have not connected yet included (each
  // in a process group of its own); mpirun gets a second to stop those on other hosts.
  killed_ = kill_world_processes(mpirun_, local_pids_);
  const long launcher = mpirun_;
  if (!wait_for_exit(seconds_from_now(1))) {
    finish_off_launcher(mpirun_, 0);
    wait_for_exit(seconds_from_now(5));
  }
  const std::vector<long> stragglers = end_world_session(launcher, directory_, 2);
  killed_.insert(killed_.end(), stragglers.begin(), stragglers.end());
  finish();
}

// A rank the plan kills must not take the world down (Open MPI's default), and vendor
// traffic goes through the interposer, MPI's over TCP.
void LaunchedWorld::fault_arguments(const RankBackendSpec& spec, bool many_hosts, std::vector<std::string>& argv) {
  argv.push_back("--enable-recovery");
  for (const auto& [name, value] : spec.fault_environment) argv.insert(argv.end(), {"-x", name + "=" + value});
  if (!spec.fault_environment.empty()) return;  // it takes faults through what these load
  if (!is_vendor_backend(spec.name) || !interposer_built()) return;
  // On this host the interposer as first preloaded, kept open (impls/backend/pinned_files.h): a
  // rebuild that removes it changes nothing later worlds preload.
  const std::string interposer = interposer_path();
  const int kept = many_hosts ? -1 : kept_open(interposer);
  argv.insert(argv.end(), {"-x", "LD_PRELOAD=" + (kept < 0 ? interposer : pinned_name(kept))});
#if defined(__SANITIZE_ADDRESS__)
  // Under AddressSanitizer its runtime insists on coming first among the loaded libraries; the
  // interposer, preloaded, would come before it. Its own wrappers still reach ASan's through
  // RTLD_NEXT, so the order does not matter here.
  argv.insert(argv.end(), {"-x", "ASAN_OPTIONS=" + worker_asan_options() + ":verify_asan_link_order=0"});
#endif
  if (spec.name.starts_with("mpi")) argv.insert(argv.end(), {"--mca", "btl", "tcp,self"});
}

Status LaunchedWorld::start(const std::vector<std::string>& argv, const TeardownLock& held) {
  const pid_t launcher = ::getpid();
#if defined(__SANITIZE_ADDRESS__)
  const std::string asan_options = worker_asan_options();
#endif
  const pid_t child = ::fork();
  if (child < 0) return Error{"--backend", std::string("fork: ") + std::strerror(errno)};
  if (child == 0) {
    // A session of its own (and so a process group): every process mpirun starts stays in it,
    // even one orphaned when mpirun dies, so that the teardown finds it (end_world_session).
    ::setsid();
    // If this launching thread dies (collcheck killed by SIGKILL), mpirun gets SIGTERM and stops
    // its ranks, rather than leaving them waiting in MPI_Init for ever.
    ::prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (::getppid() != launcher) ::_exit(1);
    ::setenv("TMPDIR", directory_.c_str(), 1);
    const int log = ::open(log_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (log >= 0) {
      ::dup2(log, 1);
      ::dup2(log, 2);
    }
#if defined(__SANITIZE_ADDRESS__)
    ::setenv("ASAN_OPTIONS", asan_options.c_str(), 1);
#endif
    start_world_guard(self_executable(), launcher, directory_, kGuardGraceSeconds);
    if (::geteuid() == 0) {
      ::setenv("OMPI_ALLOW_RUN_AS_ROOT", "1", 1);
      ::setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", 1);
    }
    std::vector<char*> args;
    args.reserve(argv.size() + 1);
    for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    ::execvp(args[0], args.data());
    std::fprintf(stderr, "collcheck: cannot run mpirun: %s\n", std::strerror(errno));
    ::_exit(127);
  }
  mpirun_ = child;
  remembered_ = remember_world(held, mpirun_, directory_);
  return Ok{};
}

Status LaunchedWorld::accept_ranks(Listener& listener, int nranks) {
  const SteadyTime deadline = seconds_from_now(kLaunchSeconds);
  ranks_.clear();
  ranks_.resize(static_cast<std::size_t>(nranks));
  for (int accepted = 0; accepted < nranks;) {
    Result<ControlSocket> socket = listener.accept(std::min(deadline, seconds_from_now(0.2)));
    if (!socket) {
      if (exited()) return launch_error("mpirun ended before every rank connected");
      if (Clock::now() >= deadline) return launch_error("ranks did not connect within 60 s");
      continue;
    }
    reached_a_rank_ = true;
    Result<Frame> frame = socket->receive(seconds_from_now(kLaunchSeconds));
    if (!frame || frame->kind != FrameKind::Hello) return launch_error("a rank connected but sent no hello");
    const wire::Hello hello = wire::decode_hello(frame->payload);
    if (!hello.error.empty()) return launch_error("rank " + std::to_string(hello.rank) + ": " + hello.error);
    if (hello.rank < 0 || hello.rank >= nranks || ranks_[static_cast<std::size_t>(hello.rank)].open()) {
      return launch_error("a worker said it was rank " + std::to_string(hello.rank));
    }
    if (hello.host == this_host_name()) {
      local_pids_.push_back(hello.pid);
      remember_world_ranks(remembered_, local_pids_);
    }
    pids_[hello.rank] = hello.host == this_host_name() ? hello.pid : 0;
    ranks_[static_cast<std::size_t>(hello.rank)] = std::move(*socket);
    ++accepted;
  }
  return Ok{};
}

Error LaunchedWorld::launch_error(const std::string& what) {
  const std::string output = tail_of(log_, 12);
  stop(false);
  return Error{"--backend", "launching `" + command_ + "`: " + what + "; its output:" + output};
}

// A stopped rank cannot even take SIGTERM: planned victims get SIGKILL at once.
void LaunchedWorld::kill_planned(const std::vector<std::string>& planned) {
  for (std::size_t r = 0; r < planned.size(); ++r) {
    const auto pid = pids_.find(static_cast<int>(r));
    if (!planned[r].empty() && pid != pids_.end() && pid->second > 0) ::kill(static_cast<pid_t>(pid->second), SIGKILL);
  }
}

bool LaunchedWorld::exited() {
  if (mpirun_ <= 0) return true;
  int status = 0;
  const pid_t done = ::waitpid(mpirun_, &status, WNOHANG);
  if (done != mpirun_ && !(done < 0 && errno == ECHILD)) return false;
  mpirun_ = -1;
  return true;
}

bool LaunchedWorld::wait_for_exit(SteadyTime deadline) {
  while (!exited()) {
    if (Clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return true;
}

// The world's files: its directory, and the segments of its ranks that died before they could
// remove their names (killed while connecting).
void LaunchedWorld::finish() {
  ranks_.clear();
  killed_.insert(killed_.end(), local_pids_.begin(), local_pids_.end());
  remove_segments_of(killed_);
  killed_.clear();
  local_pids_.clear();
  pids_.clear();
  mpirun_ = -1;
  std::error_code ignored;
  if (!directory_.empty()) {
    std::ifstream log(log_);
    last_log_notes_ = notable_log_lines(std::string(std::istreambuf_iterator<char>(log), {}));
    std::filesystem::remove_all(directory_, ignored);
  }
  directory_.clear();
  forget_world(remembered_);
  remembered_ = 0;
}

}  // namespace collcheck
