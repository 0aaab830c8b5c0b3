// Leftovers of worlds: the names of world directories and segments and the owner pid each one
// carries, the sweep of those whose owner is dead, the killing of a world's processes, and the
// guard that kills them once their launcher is gone.
#include "impls/worlds/leftovers.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <fstream>
#include <map>
#include <mutex>
#include <thread>
#include <utility>

#include <fcntl.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

namespace collcheck {
namespace {

bool all_digits(std::string_view text) {
  return !text.empty() && text.size() < 19 && text.find_first_not_of("0123456789") == std::string_view::npos;
}

long number(std::string_view digits) {
  long value = 0;
  for (char c : digits) value = value * 10 + (c - '0');
  return value;
}

std::vector<std::string_view> split(std::string_view text, char separator) {
  std::vector<std::string_view> parts;
  for (std::size_t at = 0;;) {
    const std::size_t next = text.find(separator, at);
    parts.push_back(text.substr(at, next == std::string_view::npos ? std::string_view::npos : next - at));
    if (next == std::string_view::npos) return parts;
    at = next + 1;
  }
}

// No such process: ESRCH. A process of another user (EPERM) and a zombie still count as alive.
bool dead(long pid) { return pid > 0 && ::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH; }

std::vector<std::filesystem::path> leftover_folders() {
  std::vector<std::filesystem::path> folders = {world_base()};
  if (folders.front() != "/tmp") folders.emplace_back("/tmp");
  return folders;
}

// Removes every name in the folders whose owner `doomed` says must go.
template <class Doomed>
void remove_owned(Doomed doomed) {
  for (const std::filesystem::path& folder : leftover_folders()) {
    std::error_code error;
    for (const auto& entry : std::filesystem::directory_iterator(folder, error)) {
      const long owner = owner_of(entry.path().filename().string());
      std::error_code ignored;
      if (owner > 0 && doomed(owner)) std::filesystem::remove_all(entry.path(), ignored);
    }
  }
}

// One line of /proc/PID/stat: "PID (COMMAND) STATE PPID PGRP SESSION ...".
struct ProcessEntry {
  long pid = 0;
  long parent = 0;
  long session = 0;
  bool zombie = false;
};

std::vector<ProcessEntry> process_table() {
  std::vector<ProcessEntry> table;
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator("/proc", error)) {
    const std::string name = entry.path().filename().string();
    if (!all_digits(name)) continue;
    std::ifstream in(entry.path() / "stat");
    std::string stat;
    std::getline(in, stat);
    const std::size_t close = stat.rfind(')');
    if (close == std::string::npos || close + 4 >= stat.size()) continue;
    const std::vector<std::string_view> fields = split(std::string_view(stat).substr(close + 2), ' ');
    if (fields.size() < 4 || !all_digits(fields[1]) || !all_digits(fields[3])) continue;
    table.push_back(ProcessEntry{number(name), number(fields[1]), number(fields[3]), fields[0] == "Z"});
  }
  return table;
}

// Every process below `pid`, and every live process in the session `pid` leads (a rank whose
// mpirun died before it could stop it is no longer below mpirun, but still in its session).
std::vector<long> world_processes_of(long pid) {
  const std::vector<ProcessEntry> table = process_table();
  std::multimap<long, long> children;
  for (const ProcessEntry& process : table) children.emplace(process.parent, process.pid);
  std::vector<long> found;
  std::vector<long> parents = {pid};
  while (!parents.empty()) {
    const long parent = parents.back();
    parents.pop_back();
    for (auto [child, end] = children.equal_range(parent); child != end; ++child) {
      found.push_back(child->second);
      parents.push_back(child->second);
    }
  }
  for (const ProcessEntry& process : table) {
    if (process.session == pid && process.pid != pid && !process.zombie &&
        std::find(found.begin(), found.end(), process.pid) == found.end())
      found.push_back(process.pid);
  }
  return found;
}

// Every live process (but this one) whose environment names the world's job — COLLCHECK_JOB=mpi-ID
// for the world directory collcheck-world-ID — whatever parent or session it has by now.
std::vector<long> processes_of_job(const std::string& directory) {
  const std::string base = std::filesystem::path(directory).filename().string();
  const std::string prefix = "collcheck-world-";
  if (!base.starts_with(prefix)) return {};
  const std::string marker = std::string("COLLCHECK_JOB=mpi-") + base.substr(prefix.size());
  std::vector<long> found;
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator("/proc", error)) {
    const std::string name = entry.path().filename().string();
    if (!all_digits(name) || number(name) == ::getpid()) continue;
    std::ifstream in(entry.path() / "environ", std::ios::binary);
    for (std::string variable; std::getline(in, variable, '\0');) {
      if (variable == marker) {
        found.push_back(number(name));
        break;
      }
    }
  }
  return found;
}

void kill_with_groups(const std::vector<long>& pids) {
  for (long pid : pids) {
    if (pid <= 1) continue;
    ::kill(static_cast<pid_t>(-pid), SIGKILL);
    ::kill(static_cast<pid_t>(pid), SIGKILL);
  }
}

}  // namespace

std::filesystem::path world_base() {
  std::error_code error;
  return std::filesystem::is_directory("/dev/shm", error) ? "/dev/shm" : "/tmp";
}

std::string segment_name(std::string_view job, int rank) {
  std::string name = "collcheck-";
  for (char c : job) name += std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '.' ? c : '_';
  return name + "-" + std::to_string(rank) + "-pid" + std::to_string(::getpid());
}

long owner_of(std::string_view name) {
  const std::vector<std::string_view> parts = split(name, '-');
  if (parts.size() < 4 || parts[0] != "collcheck") return 0;
  if (parts.size() == 4 && parts[1] == "world" && all_digits(parts[2]) && all_digits(parts[3])) return number(parts[2]);
  const bool segment = parts.size() >= 5 && (parts[1] == "mpi" || parts[1] == "threads") && all_digits(parts[2]) &&
                       all_digits(parts[3]) && all_digits(parts[4]);
  if (segment && parts.size() == 5) return number(parts[2]);
  if (segment && parts.size() == 6 && parts[5].starts_with("pid") && all_digits(parts[5].substr(3)))
    return number(parts[5].substr(3));
  return 0;
}

void sweep_leftovers() {
  static std::once_flag swept;  // once per process, whose ranks may be threads calling at once
  std::call_once(swept, [] { remove_owned([](long owner) { return dead(owner); }); });
}

void remove_segments_of(const std::vector<long>& pids) {
  if (pids.empty()) return;
  remove_owned([&](long owner) {
    for (long pid : pids) {
      if (pid == owner) return true;
    }
    return false;
  });
}

std::vector<long> kill_world_processes(long mpirun, const std::vector<long>& ranks) {
  std::vector<long> killed = world_processes_of(mpirun);
  killed.insert(killed.end(), ranks.begin(), ranks.end());
  kill_with_groups(killed);
  ::kill(static_cast<pid_t>(-mpirun), SIGTERM);
  ::kill(static_cast<pid_t>(mpirun), SIGTERM);
  return killed;
}

bool finish_off_launcher(long mpirun, double seconds) {
  const auto reaped = [mpirun] {
    int status = 0;
    const pid_t done = ::waitpid(static_cast<pid_t>(mpirun), &status, WNOHANG);
    return done == static_cast<pid_t>(mpirun) || (done < 0 && errno == ECHILD);
  };
  const auto wait_until = [&](std::chrono::steady_clock::time_point deadline) {
    while (!reaped()) {
      if (std::chrono::steady_clock::now() >= deadline) return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return true;
  };
  const auto start = std::chrono::steady_clock::now();
  if (wait_until(start + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                             std::chrono::duration<double>(seconds))))
    return true;
  ::kill(static_cast<pid_t>(-mpirun), SIGKILL);
  ::kill(static_cast<pid_t>(mpirun), SIGKILL);
  return wait_until(std::chrono::steady_clock::now() + std::chrono::seconds(1));
}

std::vector<long> end_world_session(long mpirun, const std::string& directory, double seconds,
                                    const std::vector<long>& spared) {
  std::vector<long> killed;
  const auto deadline =
      std::chrono::steady_clock::now() +
      std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(seconds));
  for (;;) {
    std::vector<long> left = world_processes_of(mpirun);
    for (long pid : processes_of_job(directory)) {
      if (std::find(left.begin(), left.end(), pid) == left.end()) left.push_back(pid);
    }
    std::erase_if(left, [&spared](long pid) { return std::find(spared.begin(), spared.end(), pid) != spared.end(); });
    if (left.empty() || std::chrono::steady_clock::now() >= deadline) return killed;
    kill_with_groups(left);
    killed.insert(killed.end(), left.begin(), left.end());
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

namespace {

// The guard's file descriptors before its exec: /dev/null for 0-2 (the launcher's terminal or
// ctest's pipes must see their end when the launcher's do) and `keep`, moved to 3 and open across
// the exec; every other one closed. Returns the descriptor `keep` now has, or -1.
int keep_only(int keep) {
  // Out of the way first: with the launcher's stdin closed, `keep` may be 0, which /dev/null takes.
  if (keep >= 0 && keep < 10) {
    const int moved = ::fcntl(keep, F_DUPFD, 10);
    ::close(keep);
    keep = moved;
  }
  const int null = ::open("/dev/null", O_RDWR);
  for (int standard = 0; standard < 3 && null >= 0; ++standard) ::dup2(null, standard);
  if (keep >= 0) {
    ::dup2(keep, 3);  // the copy is not closed on exec
    keep = 3;
  }
  const unsigned first_closed = keep >= 0 ? 4 : 3;
  if (::close_range(first_closed, ~0U, 0) != 0) {
    std::vector<int> open;
    std::error_code error;
    for (const auto& entry : std::filesystem::directory_iterator("/proc/self/fd", error)) {
      const std::string name = entry.path().filename().string();
      if (all_digits(name) && number(name) >= first_closed) open.push_back(static_cast<int>(number(name)));
    }
    for (int descriptor : open) ::close(descriptor);
  }
  return keep;
}

// Waits until `launcher` is gone (true), or the guard's parent is no longer `world` (false).
bool wait_for_death(long launcher, int launcher_pidfd, long world) {
  for (;;) {
    if (::getppid() != static_cast<pid_t>(world)) return false;
    if (launcher_pidfd >= 0) {
      pollfd watched{launcher_pidfd, POLLIN, 0};
      const int ready = ::poll(&watched, 1, 1000);
      if (ready > 0 && (watched.revents & POLLIN) != 0) return true;
      // Not a pidfd that polling can read (or polling fails): ask kill() instead.
      if ((ready > 0 && (watched.revents & (POLLERR | POLLNVAL)) != 0) || (ready < 0 && errno != EINTR))
        launcher_pidfd = -1;
      continue;
    }
    if (dead(launcher)) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

}  // namespace

void start_world_guard(const std::string& executable, long launcher, const std::string& directory, long grace_seconds) {
  const long world = ::getpid();
  const int launcher_pidfd = static_cast<int>(::syscall(SYS_pidfd_open, static_cast<pid_t>(launcher), 0));
  std::vector<std::string> arguments = {
      executable,    "guard",   "--launcher", std::to_string(launcher),     "--world", std::to_string(world),
      "--directory", directory, "--grace",    std::to_string(grace_seconds)};
  if (launcher_pidfd >= 0) arguments.insert(arguments.end(), {"--launcher-pidfd", "3"});
  std::vector<char*> argv;
  argv.reserve(arguments.size() + 1);
  for (std::string& argument : arguments) argv.push_back(argument.data());
  argv.push_back(nullptr);
  const pid_t guard = ::fork();
  if (guard != 0) {
    if (launcher_pidfd >= 0) ::close(launcher_pidfd);
    return;
  }
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);  // kept across the exec
  if (::getppid() != static_cast<pid_t>(world)) ::_exit(0);
  // Ignored signals stay ignored across the exec (and collcheck keeps them so): mpirun's process
  // group, the guard's too, may get SIGTERM from mpirun itself as it stops.
  for (int deaf : {SIGINT, SIGTERM, SIGHUP}) std::signal(deaf, SIG_IGN);
  keep_only(launcher_pidfd);
  // This process's own image, named as its file (which a rebuild may have replaced or removed).
  ::execv("/proc/self/exe", argv.data());
  ::execv(argv[0], argv.data());
  ::_exit(127);
}

void guard_world(long launcher, int launcher_pidfd, long world, const std::string& directory, long grace_seconds) {
  if (!wait_for_death(launcher, launcher_pidfd, world)) return;
  // From here the guard outlives mpirun if it must: mpirun's end shows as a new parent.
  ::prctl(PR_SET_PDEATHSIG, 0);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(grace_seconds);
  while (::getppid() == static_cast<pid_t>(world) && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  // What is left: below mpirun, in its session, or carrying the world's job; the guard and mpirun
  // spared (mpirun's process group holds the guard), then mpirun.
  end_world_session(world, directory, 2, {world, static_cast<long>(::getpid())});
  if (::getppid() == static_cast<pid_t>(world)) ::kill(static_cast<pid_t>(world), SIGKILL);
}

}  // namespace collcheck
