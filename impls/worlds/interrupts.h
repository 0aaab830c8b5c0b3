// What a signal must take down with this process — the launched worlds it runs (mpirun, the
// ranks, their directories and segments) and the files it holds — and the thread that, on
// SIGINT, SIGTERM or SIGHUP, takes them all down and exits 128 + the signal's number.
#pragma once

#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

namespace collcheck {

// Blocks SIGINT, SIGTERM and SIGHUP in this thread and in every thread started after it (a
// forked child gets them back), and starts the thread that waits for them: on one it takes
// everything remembered down, sends whatever this process prints from then on to /dev/null,
// says so on stderr (unless `quiet`: a worker, whose stderr is mpirun's log) and exits with
// 128 + the signal (130, 143, 129). Call first in main().
void take_down_on_signals(bool quiet);

// What the signal thread takes down, under one lock. A launcher holds it across fork() and
// remember_world(), so that a signal in between finds mpirun recorded, and a world cannot be
// launched while the signal thread is at work.
using TeardownLock = std::unique_lock<std::mutex>;
TeardownLock hold_teardown_list();

// A launched world, from its start until forget_world(): mpirun's pid and the world's
// directory, then the pids its ranks reported. Returns the world's key.
std::uint64_t remember_world(const TeardownLock& held, long mpirun, const std::string& directory);
void remember_world_ranks(std::uint64_t world, const std::vector<long>& pids);
void forget_world(std::uint64_t world);

// A file (a segment's name) to remove if a signal comes before forget_file().
void remember_file(const std::string& path);
void forget_file(const std::string& path);

// What the signal thread does before it exits: kills every remembered world's processes (the
// launchers get half a second to stop their ranks on other hosts), removes their directories
// and segments and every remembered file; returns how many worlds it took down.
int take_down_everything(const TeardownLock& held);

}  // namespace collcheck
