// The world this process was launched into by mpirun or srun: MPI on a duplicate of
// MPI_COMM_WORLD serves as the control channel (rendezvous, agreement, results).
#pragma once

#include <chrono>
#include <cstddef>
#include <optional>
#include <span>
#include <vector>

#include "impls/backend/world.h"
#include "reference/result.h"

namespace collcheck {

// The variable through which a launching collcheck names the job of the world it launches
// ("mpi-PID-N", PID its own, N the world's number), for the names of the world's segments.
inline constexpr const char* kJobVariable = "COLLCHECK_JOB";

// True when a launcher started this process as one rank of several (Open MPI, PMI, PMIx or
// Slurm variables are set).
bool launched_by_launcher();

// The world, MPI initialised on first use and finalised at exit; an error when this build has
// no MPI. Every rank must call it (MPI_Init is collective).
Result<World*> launched_world();

// Takes the launcher's variables (Open MPI's, PMI's, PMIx's, SLURM_PROCID) out of this process's
// environment, after launched_world(): launched_by_launcher() is false from then on, and an
// mpirun this process starts for a world of its own does not take itself for one of the job's
// ranks. For a campaign (harness/campaign.h), whose every process launches worlds of its own.
void leave_launcher_environment();

// A campaign's merge (harness/campaign.h), over MPI_COMM_WORLD: every rank but 0 sends `mine` to
// rank 0 and gets an empty list back; rank 0 gets what each rank sent, its own `mine` first,
// and nothing for a rank not heard from by `deadline` (it stopped or died). Call it after
// launched_world().
std::vector<std::optional<std::vector<std::byte>>> gather_at_rank_zero(std::span<const std::byte> mine,
                                                                       std::chrono::steady_clock::time_point deadline);

// Ends MPI at once on every rank (a rank that hangs cannot be waited for).
[[noreturn]] void abort_launched_world(int code);

}  // namespace collcheck
