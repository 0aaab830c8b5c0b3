// What the harness sees of anything under test: its capabilities, and one call that runs a
// case on all ranks and hands back every rank's output. Our algorithms on `sim`, and later
// NCCL, MPI, Gloo and plugins, all sit behind it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "impls/link/hook.h"
#include "reference/case.h"
#include "reference/memory.h"
#include "reference/result.h"

namespace collcheck {

// A knob the backend takes in its spec (`ring@sim:chunk=64`) that the check loop may draw per
// case, as a search over the backend's variants: what its documentation allows (`low..high`, or
// one of `choices`, whose index is the value), the value it means when not given, values worth
// drawing more often (block, slot and segment sizes, powers of two and their neighbours), and how
// a drawn value is fitted to a case (keeping the run's cost in bounds). Values outside are never
// drawn; anything that goes wrong inside is a finding.
struct KnobSpace {
  std::string name;
  std::uint64_t low = 0, high = 0;
  std::uint64_t fallback = 0;                                    // the value when the spec leaves the knob out
  std::vector<std::uint64_t> edges;                              // drawn more often, simplest first
  std::vector<std::string> choices;                              // a named set: values index it; empty: numbers
  std::function<std::uint64_t(std::uint64_t, const Case&)> fit;  // unset: as drawn
  // The default is fitted too: where a case may forbid it (Gloo's bcube base must divide the
  // ranks), fit gives the allowed value, and otherwise the default itself.
  bool fit_default = false;

  // `chunk=64`, `transport=tcp`.
  std::string setting(std::uint64_t value) const;
};

// A knob of numbers low..high.
KnobSpace numeric_knob(std::string name, std::uint64_t low, std::uint64_t high, std::uint64_t fallback,
                       std::vector<std::uint64_t> edges);

struct Capabilities {
  std::vector<Collective> collectives;
  std::vector<DType> dtypes;
  std::vector<RedOp> ops;
  bool in_place = true;
  bool out_of_place = true;        // false: it runs in place only (an in-place MSCCL file)
  std::size_t count_multiple = 1;  // it runs only counts that are multiples of this
  int min_ranks = 1;
  int max_ranks = kMaxRanks;
  std::string memory = "host";  // where its buffers live: host, device
  bool deterministic = true;    // the same case twice gives the same bits
  bool rank_identical = true;   // all-reduce, all-gather, broadcast give every rank the same bits
  std::size_t chunk = 0;        // its pipeline chunk in elements, if it has one (0: none known)
  // Message sizes in bytes where the backend changes how it moves data (a FIFO slot, a library's
  // eager limit or fragment): check draws counts whose bytes lie within one element of a multiple.
  std::vector<std::size_t> edge_bytes;
  bool hook = false;  // honours RunOptions::hook or fault_plan (fault injection)
  // Retransmits lost and damaged messages (LinkProtocol::reliable): transient faults must end
  // `ok` (the reliability property).
  bool reliable = false;
  // A documented limit beyond the lists above (Gloo's bcube: ranks divisible by its base);
  // cases it refuses are never drawn. Unset: none.
  std::function<bool(const Case&)> precondition;
  // Where the knobs drawn per case (fitted to it) lift a limit of the spec's own knobs: what a
  // case must meet then, in place of `precondition` (Gloo's bcube: some base of 2..64 divides the
  // ranks, and the drawn base is fitted to one). Unset: `precondition`.
  std::function<bool(const Case&)> knob_precondition;
  // Instances of the backend (made from its spec) may run cases at once, each in a thread of
  // its own, in one process: check then runs cases on every core. Launched worlds may not.
  bool independent_instances = false;
  // The knobs the spec left free, which check may draw per case (empty: none).
  std::vector<KnobSpace> knobs;
  // Takes drawn knobs per run (RunOptions::knobs) instead of from a backend made per setting:
  // launched worlds, where a backend per setting would be a world of processes per setting.
  bool knobs_per_run = false;

  bool supports(const Case&) const;
  // Why the backend does not run the case ("it runs the collectives allreduce, ..."); "" when it
  // does.
  std::string unsupported(const Case&) const;
};

// How a run ended, before the oracle looks at the data: `Ok` (every rank returned), `Detected`
// (every rank reported an error), `Hang` (the deadline passed), `Crash`. The harness turns
// an Ok with wrong data into `Corrupt`.
enum class Outcome { Ok, Detected, Hang, Corrupt, Crash };
std::string_view name(Outcome);

struct RankResult {
  std::vector<std::byte> output;  // the rank's output, packed (empty: reduce non-root)
  std::vector<std::byte> input;   // its input buffer after the call
  bool guards_intact = true;      // nothing written just before or after any buffer
};

// What a run is asked besides the case, for a whole world (RunOptions) and for one rank's part
// of it (RankRunOptions, rank_backend.h) alike: a field both need is added here, once.
// `calls` > 1 is a training loop: the collective runs that many times back to back on the same
// buffers, each rank writing the inputs of call k (the case with seed + k) as soon as its own
// call k-1 has returned; the run then holds every call's outputs, call by call.
struct CallOptions {
  int calls = 1;
  // Seconds the run may take. A whole run past it is reported as a hang (0: the backend's
  // default, derived from the case's size); a rank's waits give up past it and the run ends
  // with an error (where the backend can: our executors can, a vendor call may not return).
  double deadline = 0;
  // Every send of the run passes through it (faults, docs/faults.md); null: none. Backends
  // that cannot honour a hook say so in Capabilities::hook.
  LinkHook* hook = nullptr;
  // Timing (`collcheck bench`): inputs written once, `warmup` untimed calls, then `iterations`
  // timed ones on the same buffers; `seconds` of the run is the mean time per timed call (the
  // slowest rank's) and `calls` is ignored. When `checked`, the timed calls' outputs are
  // returned too, one per call, for the oracle.
  bool timed = false;
  int warmup = 0;
  int iterations = 0;
  bool checked = false;
  // Knobs for this run only, on top of the spec's (`chunk=64,channels=2`, as the spec writes
  // them), for backends that take them per run (Capabilities::knobs_per_run); empty: the spec's.
  // The run behaves as the backend made from the spec with these knobs added would.
  std::string knobs = {};
};

// A whole world's run: RunOptions{} or RunOptions{schedule_seed, calls}, then fields by name.
struct RunOptions : CallOptions {
  RunOptions() = default;
  explicit RunOptions(std::uint64_t seed, int call_count = 1) : schedule_seed(seed) { calls = call_count; }

  std::uint64_t schedule_seed = 0;  // sim: the interleaving
  // Given inputs, rank by rank, instead of the generated ones (with calls == 1): how the
  // composition property feeds one collective's outputs into the next.
  const std::vector<std::vector<std::byte>>* inputs = nullptr;
  // The same faults as a plan's text (faults/plan.h), for backends whose ranks run in other
  // processes and build their own hook from it, seeded by schedule_seed; empty: none.
  std::string fault_plan = {};
  // Run without the faults a decorator would add (the recovery property's fresh run).
  bool without_faults = false;
  // Bytes the run's messages may hold at once (`sim`: SimulationOptions::message_memory), what the
  // memory budget leaves after the rest of the case's estimate; past it the run stops, refused
  // (RunEnding::refused). 0: no bound.
  std::uint64_t message_memory = 0;
  // News of a long run, where the backend has any (`sim`: its messages sent of all, the virtual time
  // and the wall time left, progress_text), a line at most every progress_every seconds of wall
  // time; null: none. For whoever watches a run at thousands of ranks take minutes.
  std::function<void(const std::string& line)> progress;
  double progress_every = 10;
};

// How a run ended, as a whole run (RepeatedRun) and one rank's part of it (RankRun) both say it:
// a field every run reports is added here, once.
struct RunEnding {
  Outcome outcome = Outcome::Ok;
  std::string error;   // what went wrong, naming the rank, step or call
  double seconds = 0;  // timed: mean seconds per call; on `sim` the predicted (virtual) time
  // The backend refused the case when it ran, as outside what it takes (NCCL's ncclInvalidUsage
  // for a combination it does not run): a precondition met late, not a finding. `error` says
  // why; the outcome stays Detected, so that nothing reads the run as a result.
  bool refused = false;
};

// How a run ended and what every rank holds after each call.
struct RepeatedRun : RunEnding {
  std::vector<std::vector<RankResult>> calls;  // calls[k][rank]
  std::uint64_t trace = 0;

  // A run that ended before any call's results: outcome and why.
  static RepeatedRun ended(Outcome outcome, std::string error) {
    RepeatedRun run;
    run.outcome = outcome;
    run.error = std::move(error);
    return run;
  }
};

// How backends that run across processes are started.
struct BackendOptions {
  double deadline = 0;  // seconds per run before it is a hang; 0: default_deadline(); +infinity: none
  // Extra arguments for mpirun when launching worlds (--hostfile ..., --mca ...).
  std::vector<std::string> launcher_arguments;
  // Backends across processes, where no launcher started this process: on worlds of threads of
  // this process (every rank a thread, nothing launched), as the conformance suite runs them,
  // instead of launched worlds.
  bool worlds_of_threads = false;
};

// Which run a memory estimate is for: one that hands every call's results back to be checked
// (check, replay, bench -c 1), or a timed run that nobody checks (RunOptions::timed without
// `checked`: bench -c 0), which hands nothing back.
enum class EstimateFor { CheckedRun, TimedRun };

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string name() const = 0;  // as the user wrote it: `ring@sim:chunk=4`
  virtual Capabilities capabilities() const = 0;
  virtual RepeatedRun run(const Case&, const RunOptions&) = 0;
  // The memory one run of the case needs on this machine, estimated before it runs, so that a
  // request memory cannot hold is refused instead of killed. The default: every rank's guarded
  // buffers and, for a checked run, the copies of them the run hands back; executors add their
  // own state (a timed run of `sim` moves no data: no buffers at all).
  virtual MemoryEstimate estimate_memory(const Case&, EstimateFor) const;
  // Stops whatever it runs and releases what it holds (launched worlds of processes); it may
  // run again afterwards, starting afresh.
  virtual void abort() {}
  // Why this backend cannot run on this machine as it is set up (mpirun refuses the launcher's
  // arguments, or ends before any rank of its first world started); empty while it can. A run
  // that ends this way is not a verdict on the backend's collectives: check stops the backend
  // and reports why, replay exits 77.
  virtual std::string cannot_run_here() const { return {}; }
};

// The backend, with what its run() throws caught: such a run ends `detected`, its error the
// exception's message ("an exception in the run: ..."), so an exception inside a backend (our
// executors' or a vendor's) is reported with its cause instead of ending collcheck or being
// judged as data. make_backends (impls/registry.h) returns every backend this way.
std::unique_ptr<Backend> catching_exceptions(std::unique_ptr<Backend> backend);

}  // namespace collcheck
