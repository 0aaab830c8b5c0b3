// A schedule generator on the simulated fabric as a Backend (`ring@sim`): each case becomes a
// schedule, runs numerically on `sim` with guard zones, and every rank's buffers come back.
#pragma once

#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "impls/algorithms/algorithms.h"
#include "impls/backend/backend.h"
#include "impls/backend/pinned_files.h"
#include "impls/sim/simulator.h"
#include "reference/key_values.h"

namespace collcheck {

// What a `sim` backend runs: normally a registered algorithm; mutants (deliberately broken
// variants) replace the schedule or the reduction op.
struct SimVariant {
  std::string name;                     // `ring`, `mutant:drop-remainder`
  std::string description;              // one line
  std::vector<Collective> collectives;  // what it implements
  std::function<Result<Schedule>(const Case&, const Knobs&)> schedule;
  // Whether `schedule` makes a large schedule on demand (form_for): a registered algorithm's, never
  // held whole, so that a timed run at thousands of ranks holds one step per stream, not billions.
  bool on_demand_where_large = false;
  ReductionOverride reduction;      // null members: the standard contract
  bool deterministic = true;        // what it claims (the determinism property holds it to it)
  bool stale_inputs = false;        // broken: every call of a run reads the first call's inputs
  bool skip_checksums = false;      // broken: receivers use bytes without checking them
  bool skip_last_checksum = false;  // broken: a stream's last message of each call is used unchecked
  bool never_time_out = false;      // broken: a wait for a message that never comes never ends
  // Narrows what the backend declares it runs (a schedule file's fixed shapes); null: nothing.
  std::function<void(Capabilities&)> narrow;
  // For the worlds launched on this host (RankBackendSpec::same_host_environment), called by the
  // backends that launch them: a schedule file's text as read when the variant was made, pinned;
  // null: nothing to pin.
  std::function<PinnedEnvironment()> pinned_for_worlds;
};

// The variant of a registered algorithm name (every collective it implements), or of a
// schedule file, `schedule:FILE` (schedule_file_variant).
Result<SimVariant> algorithm_variant(std::string_view algorithm);
// An MSCCL XML algorithm file as a variant (schedule_file.cc): its schedules, and only the
// shapes it admits declared (its ranks, layout, count multiple, ops), no knobs drawn.
Result<SimVariant> schedule_file_variant(std::string_view file);
std::vector<std::string> algorithm_variant_names();  // ring, tree, ... without repeats

// What a backend running `variant` with `knobs` in this process declares (`@sim`, `@cuda-host`):
// its collectives, every dtype and op, hooks, its free knobs, independent instances, narrowed as
// the variant says.
Capabilities variant_capabilities(const SimVariant& variant, const Knobs& knobs, std::string_view spec);
// The knobs' link protocol, broken as the variant asks.
LinkProtocol variant_protocol(const SimVariant& variant, const Knobs& knobs);
// An in-process run's buffers as the harness takes them: the earlier calls' outputs, then the last
// call's outputs, inputs and guard verdicts, rank by rank (all moved from).
std::vector<std::vector<RankResult>> calls_of(std::vector<std::vector<std::vector<std::byte>>>& earlier_outputs,
                                              std::vector<std::vector<std::byte>>& outputs,
                                              std::vector<std::vector<std::byte>>& inputs,
                                              const std::vector<bool>& guards_intact);

// `spec` is the name the backend reports (`ring@sim:chunk=4`).
std::unique_ptr<Backend> make_sim_backend(SimVariant variant, Knobs knobs, std::string spec);

// `chunk=4096,channels=2,fan-in=3` into knobs; errors name `spec` and the allowed options.
// apply_knobs takes the options already split (reference/key_values.h).
Status parse_knobs(std::string_view spec, std::string_view text, Knobs& knobs);
Status apply_knobs(std::string_view spec, std::span<const KeyValue> options, Knobs& knobs);

// The schedule knobs a case may draw (Capabilities::knobs) for a backend named `spec`
// (`ring@sim:chunk=4`, `ring@proc`), those its spec fixes left out: chunk (its fallback
// `default_chunk`, 0 when the generator chooses) and channels for every algorithm, fan-in for
// innet. A drawn chunk is fitted to at least a 64th of the case's elements and channels to at
// most 128 / nranks, so that no draw makes a case's schedule hundreds of times longer (64
// channels of bruck's all-to-all on 64 ranks take 50 times the default's time).
std::vector<KnobSpace> free_schedule_knobs(std::string_view spec, std::string_view algorithm,
                                           std::uint64_t default_chunk);

// The fabric every sim backend runs on: nranks GPUs on one aggregating switch, 1 us and
// 25 GB/s per link, local copies free. The reference is the calling thread's own (a Topology
// fills its route cache as it is used, which is not thread-safe).
const Topology& sim_fabric(int nranks);

}  // namespace collcheck
