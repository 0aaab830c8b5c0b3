// The list of what a signal takes down (launched worlds, files) and the thread that waits for
// SIGINT, SIGTERM and SIGHUP with sigwait, so that the teardown runs as ordinary code, never in
// a signal handler, and no other thread's system call is interrupted.
#include "impls/worlds/interrupts.h"

#include <chrono>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <map>
#include <set>
#include <thread>

#include <fcntl.h>
#include <pthread.h>
#include <unistd.h>

#include "impls/worlds/leftovers.h"

namespace collcheck {
namespace {

struct RememberedWorld {
  long mpirun = -1;
  std::string directory;
  std::vector<long> ranks;
};

// Never destroyed: a signal may come while static objects are being destroyed at exit.
struct TeardownList {
  std::mutex lock;
  std::uint64_t next = 1;
  std::map<std::uint64_t, RememberedWorld> worlds;
  std::set<std::string> files;
};

TeardownList& teardown_list() {
  static auto* list = new TeardownList;
  return *list;
}

// SIGINT, SIGTERM and SIGHUP, less those this process started with ignored (nohup's SIGHUP, a
// shell's background job's SIGINT, a world's guard's three): those stay ignored. A blocked signal
// is queued even when ignored, and sigwait would take it, so they are left out of both.
sigset_t stopping_signals() {
  static const sigset_t signals = [] {
    sigset_t taken;
    sigemptyset(&taken);
    for (int s : {SIGINT, SIGTERM, SIGHUP}) {
      struct sigaction current {};
      if (::sigaction(s, nullptr, &current) == 0 && current.sa_handler == SIG_IGN) continue;
      sigaddset(&taken, s);
    }
    return taken;
  }();
  return signals;
}

sigset_t original_mask;
bool quiet_on_signals = false;

// In a forked child (mpirun before its exec): the signals back as they were.
void restore_signals_in_child() { pthread_sigmask(SIG_SETMASK, &original_mask, nullptr); }

const char* signal_name(int signal) {
  return signal == SIGINT ? "SIGINT" : signal == SIGTERM ? "SIGTERM" : signal == SIGHUP ? "SIGHUP" : "a signal";
}

[[noreturn]] void wait_for_signal() {
  const sigset_t signals = stopping_signals();
  int signal = 0;
  while (sigwait(&signals, &signal) != 0) {
  }
  // From here on, nothing the other threads find out (ranks dying under our own SIGKILL) is a
  // verdict: their output goes nowhere.
  const int null = ::open("/dev/null", O_WRONLY);
  if (null >= 0) ::dup2(null, STDOUT_FILENO);
  // Held until the exit: no world is launched after this.
  const TeardownLock held = hold_teardown_list();
  const int worlds = take_down_everything(held);
  const std::string words = std::string("collcheck: stopped by ") + signal_name(signal) +
                            (worlds > 0 ? "; " + std::to_string(worlds) + " launched world(s) taken down" : "") + "\n";
  if (!quiet_on_signals) (void)!::write(STDERR_FILENO, words.data(), words.size());
  ::_exit(128 + signal);
}

}  // namespace

void take_down_on_signals(bool quiet) {
  quiet_on_signals = quiet;
  const sigset_t signals = stopping_signals();
  pthread_sigmask(SIG_BLOCK, &signals, &original_mask);
  static const bool once = [] {
    pthread_atfork(nullptr, nullptr, restore_signals_in_child);
    std::thread(wait_for_signal).detach();
    return true;
  }();
  (void)once;
}

TeardownLock hold_teardown_list() { return TeardownLock(teardown_list().lock); }

std::uint64_t remember_world(const TeardownLock&, long mpirun, const std::string& directory) {
  TeardownList& list = teardown_list();
  const std::uint64_t key = list.next++;
  list.worlds[key] = RememberedWorld{mpirun, directory, {}};
  return key;
}

void remember_world_ranks(std::uint64_t world, const std::vector<long>& pids) {
  const TeardownLock held = hold_teardown_list();
  const auto found = teardown_list().worlds.find(world);
  if (found != teardown_list().worlds.end()) found->second.ranks = pids;
}

void forget_world(std::uint64_t world) {
  const TeardownLock held = hold_teardown_list();
  teardown_list().worlds.erase(world);
}

void remember_file(const std::string& path) {
  const TeardownLock held = hold_teardown_list();
  teardown_list().files.insert(path);
}

void forget_file(const std::string& path) {
  const TeardownLock held = hold_teardown_list();
  teardown_list().files.erase(path);
}

int take_down_everything(const TeardownLock&) {
  TeardownList& list = teardown_list();
  std::map<std::uint64_t, std::vector<long>> killed;
  std::error_code ignored;
  for (const auto& [key, world] : list.worlds) {
    killed[key] = kill_world_processes(world.mpirun, world.ranks);
    // The world's directory goes at once, not only after the waits below (which may take seconds
    // under load); what a dying process still writes there goes with the second removal.
    std::filesystem::remove_all(world.directory, ignored);
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(500);
  for (const auto& [key, world] : list.worlds) {
    const std::chrono::duration<double> left = deadline - std::chrono::steady_clock::now();
    finish_off_launcher(world.mpirun, std::max(left.count(), 0.0));
    const std::vector<long> stragglers = end_world_session(world.mpirun, world.directory, 2);
    killed[key].insert(killed[key].end(), stragglers.begin(), stragglers.end());
    std::filesystem::remove_all(world.directory, ignored);
    remove_segments_of(killed[key]);
  }
  for (const std::string& file : list.files) ::unlink(file.c_str());
  const int worlds = static_cast<int>(list.worlds.size());
  list.worlds.clear();
  list.files.clear();
  return worlds;
}

}  // namespace collcheck
