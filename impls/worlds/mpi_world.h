// The world this process was launched into by mpirun or srun: MPI on a duplicate of
// MPI_COMM_WORLD serves as the control channel (rendezvous, agreement, results).
#pragma once

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

// Ends MPI at once on every rank (a rank that hangs cannot be waited for).
[[noreturn]] void abort_launched_world(int code);

}  // namespace collcheck
