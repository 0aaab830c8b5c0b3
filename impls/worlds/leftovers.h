// What worlds leave on a host while they run — processes below mpirun, world directories and
// shared-memory segments, each name carrying its owner's pid — and how they are taken away: a
// world's own at its teardown, and a sweep of what owners that are dead left behind.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace collcheck {

// Where worlds keep their files: /dev/shm (tmpfs, as Open MPI wants for shared memory), else /tmp.
std::filesystem::path world_base();

// A segment's name (without the leading '/' of shm_open): "collcheck-JOB-RANK-pidPID", PID this
// process, so that it can be removed by whoever outlives it.
std::string segment_name(std::string_view job, int rank);

// The pid that owns one of these names, 0 for any other name:
//   collcheck-world-PID-N               a world directory; PID: the launching process
//   collcheck-{mpi,threads}-A-B-R-pidPID  a segment; PID: the process that created it
//   collcheck-{mpi,threads}-PID-B-R     a segment of older builds; PID: rank 0 (or the test)
long owner_of(std::string_view name);

// Removes from world_base() and /tmp every world directory and segment whose owner is dead (a
// process killed before it could clean up); never one whose owner lives. Once per process.
void sweep_leftovers();

// Removes the segments, in world_base() and /tmp, created by any of `pids`.
void remove_segments_of(const std::vector<long>& pids);

// Starts taking a launched world down: every process below `mpirun` on this host or in its
// session, and `ranks` (the pids its ranks reported), get SIGKILL with the process group each
// leads (Open MPI puts every rank in a group of its own); mpirun and its group get SIGTERM, so
// that it stops its ranks on other hosts. Returns every process killed. finish_off_launcher() ends the job.
std::vector<long> kill_world_processes(long mpirun, const std::vector<long>& ranks);

// Waits until `mpirun` (a child of this process) has exited or `seconds` have passed, then sends
// SIGKILL to it and its process group; true when it had exited (and was reaped, here or elsewhere).
bool finish_off_launcher(long mpirun, double seconds);

// After mpirun has been reaped: kills whatever is still alive in its session (mpirun is started
// as a session leader; a rank it forked after kill_world_processes() looked, orphaned when
// mpirun died, is one) until none is left or `seconds` have passed, so that nothing writes into
// the world's directory once it is removed. Returns every process killed.
// Processes that left the session but carry the world's job in their environment (every rank
// does: COLLCHECK_JOB, from `directory`'s name) go the same way. Processes in `spared` are left
// alone (the world's guard spares itself and a mpirun it has not reaped).
std::vector<long> end_world_session(long mpirun, const std::string& directory, double seconds,
                                    const std::vector<long>& spared = {});

// A world's guard makes sure that the world does not outlive its launcher by long, whatever
// killed the launcher (SIGKILL included, which leaves it no chance to clean up): mpirun has the
// SIGTERM of its parent's death (PR_SET_PDEATHSIG), and a loaded mpirun has been seen to take more
// than 10 s over it. The guard is `executable guard ...` (the launcher's own image, /proc/self/exe,
// named `executable`: the file may have been rebuilt or removed since; its `guard` command calls
// guard_world()), a fresh process that holds nothing of the launcher's: no file
// descriptor (a rank's control connection reads the launcher's death from its closing) and no
// copy of its memory.
//
// start_world_guard() is called in the child that is about to become mpirun, once it leads a
// session of its own; it starts the guard as that child's child, deaf to SIGINT, SIGTERM and
// SIGHUP, and killed with mpirun while the launcher lives.
void start_world_guard(const std::string& executable, long launcher, const std::string& directory, long grace_seconds);

// The guard's work: waits until `launcher` is gone (its pidfd readable, `launcher_pidfd`, or
// without one kill() saying so), then gives mpirun (`world`, the session leader)
// `grace_seconds` to stop its ranks, then kills what is left of the world as end_world_session()
// does, mpirun last. Returns when mpirun ended first while the launcher lived: the guard is then
// no longer needed (it is normally killed with mpirun before that).
void guard_world(long launcher, int launcher_pidfd, long world, const std::string& directory, long grace_seconds);

}  // namespace collcheck
