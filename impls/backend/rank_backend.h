// One rank's part of a backend that runs across processes (`ALGORITHM@proc`, `mpi`, `gloo`):
// every member of a world calls run() with the same case at the same time, and gets back its
// own rank's buffers. The harness runs these in lockstep under mpirun, or launches them.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "impls/backend/backend.h"
#include "impls/backend/pinned_files.h"
#include "impls/backend/world.h"
#include "impls/link/hook.h"
#include "reference/case.h"
#include "reference/result.h"

namespace collcheck {

// One rank's part of a run (CallOptions, backend.h); its deadline is 60 s unless told.
struct RankRunOptions : CallOptions {
  RankRunOptions() { deadline = 60; }

  // This rank's given input (exactly its input buffer, packed) instead of the generated one,
  // with calls == 1.
  const std::vector<std::byte>* input = nullptr;
};

// One rank's part of a run (RunEnding, backend.h): outcome Ok, or Detected when this rank saw an
// error; seconds the mean per call when timed, otherwise the whole run.
struct RankRun : RunEnding {
  std::vector<RankResult> calls;  // this rank's results, call by call
  // Faults left this rank's connections unusable (a vendor's stream reset or corrupted): the
  // launcher starts a fresh world before the next case.
  bool world_broken = false;

  // A rank's run that ended before any call's results: outcome and why.
  static RankRun ended(Outcome outcome, std::string error, bool world_broken = false) {
    RankRun run;
    run.outcome = outcome;
    run.error = std::move(error);
    run.world_broken = world_broken;
    return run;
  }
};

class RankBackend {
 public:
  virtual ~RankBackend() = default;
  virtual std::string name() const = 0;
  // The case has nranks == the world's size; every member passes the same case and options
  // (but its own `input`).
  virtual RankRun run(const Case&, const RankRunOptions&) = 0;
};

// A backend that runs across processes, before any world exists: its name, what it can run,
// the environment its processes need (set before MPI is initialised: mpirun -x NAME=VALUE),
// and how to make its rank part once a world is there.
struct RankBackendSpec {
  std::string name;  // as the user wrote it, or as an expansion named it: `mpi:allreduce=ring`
  Capabilities capabilities;
  std::vector<std::pair<std::string, std::string>> environment;
  std::function<Result<std::unique_ptr<RankBackend>>(World&)> make;
  // What the world's processes hold on one host besides every rank's buffers and the results
  // handed back (Backend::estimate_memory): a transport's shared memory, a schedule in every
  // process, a library's temporaries. Empty: nothing more.
  std::function<MemoryEstimate(const Case&)> world_memory;
  // Set in the processes of a world on this host only, never across hosts: they name files this
  // process holds open, as /proc/PID/fd/N (a plugin's file, a schedule file's text: pinned_files.h).
  PinnedEnvironment same_host_environment;
  // Set in the processes of a world under a fault plan, in place of preloading the socket
  // interposer (nccl: its network plugin, which takes the faults message by message).
  std::vector<std::pair<std::string, std::string>> fault_environment;
  // Why no fault reaches this backend's messages (nccl:net=ib); empty: faults do, as above.
  std::string takes_no_faults;
  // Its ranks must be threads of one process (ib's loopback joins queue pairs within a process
  // only; nccl:mode=threads drives several GPUs from one process): launched as one worker with a
  // thread per rank (`collcheck worker --threads N`), or on worlds of threads of this process
  // where no launched world can serve it (registry.cc).
  bool ranks_are_threads = false;
  // Found before any world: why the backend cannot run on this machine (no GPU); empty: it can.
  std::string cannot_run_here;
};

// What a vendor library may allocate for one call on every rank, as the world_memory of mpi and
// gloo specs: a temporary as large as the rank's input and one as large as its output (Open
// MPI's reduce-scatter and ring all-reduce, Gloo's ring algorithms keep buffers of the message's
// size), an estimate from above, not a measurement.
MemoryEstimate library_temporaries(const Case&);

// True when the spec names a backend that runs across processes: `ALGORITHM@proc[...]`, `ALGORITHM@ib[...]`,
// `ALGORITHM@cuda[-host]:...,mode=processes`, `mutant:NAME@proc`, `mpi[...]`, `gloo[...]`, `plugin:PATH[...]`,
// `nccl[...]`.
bool runs_across_processes(std::string_view spec);

// True when the spec names a vendor backend that talks over its own transport (`mpi[...]`,
// `gloo[...]`, a user's `plugin:PATH[...]`, `nccl[...]`): faults reach it through the LD_PRELOAD
// interposer (nccl: its network plugin), not through a LinkHook.
bool is_vendor_backend(std::string_view spec);

// True when the spec is `family` or `family:OPTIONS`; family_options is the OPTIONS part.
bool names_family(std::string_view spec, std::string_view family);
std::string_view family_options(std::string_view spec, std::string_view family);

}  // namespace collcheck
