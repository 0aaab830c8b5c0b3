// Backends that run across processes, seen from one process: launched worlds (this process
// starts the ranks through mpirun and drives them) and lockstep (this process is one rank of
// a world the user started with mpirun or srun, and every rank runs the same check loop).
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "impls/backend/backend.h"
#include "impls/backend/rank_backend.h"
#include "impls/backend/world.h"

namespace collcheck {

// The deadline of one run when BackendOptions gives none: 20 s, plus a second for every 50 MB
// the case moves (all calls, all ranks), so slow-but-progressing runs are not called hangs.
double default_deadline(const Case&, const RunOptions&);

// A run's deadline: the run's own, else the backend's, else default_deadline().
double run_deadline(const Case&, const RunOptions&, const BackendOptions&);

// What every rank is told of a run: its calls and timing, and 80 % of the run's deadline, so
// that our executors give up first and say where.
RankRunOptions rank_run_options(const RunOptions&, double deadline);

// How a worker starts the words of its Dying frame when the fault plan stops or kills it (so
// that the launcher does not call it a crash).
inline constexpr std::string_view kPlannedFaultWords = "planned fault: ";

// The LD_PRELOAD socket interposer (faults/interposer.cc), looked for next to the collcheck
// binary; launched mpi and gloo worlds take faults only where it is there.
inline constexpr std::string_view kInterposerFile = "libcollcheck-interpose.so";
// NCCL's network plugin with faults (faults/nccl_net_plugin.cc), next to the collcheck binary;
// launched nccl worlds under a fault plan load it (NCCL_NET_PLUGIN).
inline constexpr std::string_view kNcclNetPluginFile = "libnccl-net-collcheck.so";

// Runs the spec on worlds of `collcheck worker` processes that it launches through mpirun,
// one world per rank count (and per with or without faults), kept for the next case. A run
// past its deadline is a `hang`, a rank that dies is a `crash`; either way that world's
// processes are killed and the next case on that rank count launches a fresh one. No process
// outlives the backend.
//
// Under a fault plan (RunOptions::fault_plan) worlds run with mpirun --enable-recovery, so that
// a rank the plan kills does not take the others down with it, and mpi and gloo worlds with the
// socket interposer preloaded (mpi also with `--mca btl tcp,self`, so its traffic is on TCP
// sockets). A rank the plan stops or kills is not waited for: the run is judged on the others
// (every one must return within the deadline, else `hang`; then as their replies combine, and
// at least `detected`, for a rank is missing), and the world is relaunched afterwards, as it
// is after a run whose faults reset or corrupted a vendor's connections.
std::unique_ptr<Backend> make_launched_backend(RankBackendSpec, const BackendOptions&);

// This process is rank world.rank(): run() runs the rank's part and then gathers every rank's
// results over the world's control channel, so every rank sees the same RepeatedRun. Cases
// must have nranks == world.size() (the capabilities say so). A run past its deadline stops
// the whole world with a message naming the case (a hung rank cannot be waited for).
Result<std::unique_ptr<Backend>> make_lockstep_backend(RankBackendSpec, World&, const BackendOptions&);

}  // namespace collcheck
