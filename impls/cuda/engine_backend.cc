// The engine's backends: each case's schedule on the slot engine (slot_engine.h), every participant
// a host thread, buffers between guard zones on its device, the kernels run there.
#include "impls/cuda/engine_backend.h"

#include <algorithm>
#include <chrono>

#include "impls/cuda/slot_engine.h"
#include "impls/ib/ibverbs.h"
#include "impls/link/guarded_buffer.h"
#include "impls/mutants/mutants.h"
#include "impls/worlds/launched_backend.h"

namespace collcheck {
namespace {

// Participants are threads: beyond this many a run is mostly threads waiting for a core.
constexpr int kMaxHostRanks = 64;
constexpr std::size_t kRingBytes = std::size_t{64} << 20;

// A variant's own reduction (a mutant's) runs on the host, where only the host device's memory is.
std::string refuse_host_reduction(const SimVariant& variant, const EngineDevices& devices) {
  if (devices.make == cuda::make_host_device || (!variant.reduction.reduce && !variant.reduction.finish_average)) {
    return {};
  }
  return variant.name + " reduces on the host: run it @cuda-host";
}

// The engine's options for one run of either backend (threads, or this process's rank).
cuda::EngineOptions engine_options(const SimVariant& variant, const Knobs& knobs, const EngineDevices& devices,
                                   const CallOptions& options, double deadline) {
  cuda::EngineOptions engine;
  engine.guard = kGuardElements;
  engine.calls =
      options.timed ? std::max(options.warmup, 0) + std::max(options.iterations, 1) : std::max(options.calls, 1);
  // Timed calls run on the buffers as written once (bench checks only out of place).
  engine.call_seed_step = variant.stale_inputs ? 0 : 1;
  engine.inputs_once = options.timed;
  engine.earlier_outputs = !options.timed || options.checked;
  engine.protocol = variant_protocol(variant, knobs);
  engine.deadline = deadline;
  engine.reduction = variant.reduction;
  engine.ring_bytes = kRingBytes;
  engine.largest_slot = devices.largest_slot;
  engine.make_device = devices.make;
  engine.peer_reads = knobs.peer_reads;
  return engine;
}

// A message's pieces: one slot each, so counts near a slot's multiples reach the last piece's edges.
std::vector<std::size_t> engine_edge_bytes(const EngineDevices& devices) {
  return {cuda::ring_shape(1, kRingBytes, devices.largest_slot).slot_bytes};
}

Outcome ending(const cuda::EngineRun& run) {
  return run.detected ? Outcome::Detected : run.hang ? Outcome::Hang : Outcome::Crash;
}

// The calls a run hands back, rank by rank: every call's, or where timed the timed calls' alone, and
// only where they are checked.
std::vector<std::vector<RankResult>> handed_back(cuda::EngineRun& run, const CallOptions& options) {
  std::vector<std::vector<RankResult>> calls =
      calls_of(run.earlier_outputs, run.outputs, run.inputs, run.guards_intact);
  if (options.timed && !options.checked) calls.clear();
  if (options.timed && options.checked) calls.erase(calls.begin(), calls.begin() + std::max(options.warmup, 0));
  return calls;
}

// The timed calls' mean: from the slowest rank's return from the last warmup call.
double timed_seconds(const cuda::EngineRun& run, const CallOptions& options) {
  const int warmup = std::max(options.warmup, 0);
  const double from = warmup > 0 ? run.call_ends[static_cast<std::size_t>(warmup - 1)] : 0.0;
  return (run.call_ends.back() - from) / static_cast<double>(run.call_ends.size() - static_cast<std::size_t>(warmup));
}

class EngineBackend final : public Backend {
 public:
  EngineBackend(SimVariant variant, Knobs knobs, std::string spec, EngineDevices devices)
      : variant_(std::move(variant)), knobs_(knobs), spec_(std::move(spec)), devices_(devices) {}

  std::string name() const override { return spec_; }
  std::string cannot_run_here() const override {
    return devices_.cannot_run_here == nullptr ? std::string() : devices_.cannot_run_here();
  }

  Capabilities capabilities() const override {
    Capabilities c = variant_capabilities(variant_, knobs_, spec_);
    c.max_ranks = std::min(c.max_ranks, kMaxHostRanks);
    c.reliable = knobs_.protocol.reliable;
    c.edge_bytes = engine_edge_bytes(devices_);
    return c;
  }

  // The default's buffers and (a checked run) results, the rings, and every message staged once.
  MemoryEstimate estimate_memory(const Case& c, EstimateFor run) const override {
    MemoryEstimate estimate = Backend::estimate_memory(c, run);
    estimate.add("rings", kRingBytes, "the slots of every message stream");
    // Staged messages hold what the buffers hold, twice over under faults (the bytes before the
    // hook), each rounded up to a power of two by the staging pool.
    estimate.add("staged", case_buffers(c, 0).total() * 4, "messages staged by their senders");
    return estimate;
  }

  RepeatedRun run(const Case& c, const RunOptions& options) override {
    if (const std::string refused = refuse_host_reduction(variant_, devices_); !refused.empty()) {
      return RepeatedRun::ended(Outcome::Crash, refused);
    }
    Result<Schedule> schedule = variant_.schedule(c, knobs_);
    if (!schedule) return RepeatedRun::ended(Outcome::Crash, schedule.error().text());
    const Schedule whole = stored(std::move(schedule).value());
    cuda::EngineOptions engine = engine_options(variant_, knobs_, devices_, options, run_deadline(c, options, {}));
    engine.inputs = options.inputs;
    engine.hook = options.without_faults ? nullptr : options.hook;
    cuda::EngineRun run = cuda::run_engine(whole, engine);
    if (!run.completed) return RepeatedRun::ended(ending(run), run.error);
    RepeatedRun result;
    result.calls = handed_back(run, options);
    if (options.timed) result.seconds = timed_seconds(run, options);
    return result;
  }

 private:
  SimVariant variant_;
  Knobs knobs_;
  std::string spec_;
  EngineDevices devices_;
};

// One rank's part of `ALGORITHM@cuda[-host]:mode=processes`: the engine in this process runs the
// participants this rank hosts, the rings between the processes in shared memory.
class EngineRankBackend final : public RankBackend {
 public:
  EngineRankBackend(World& world, SimVariant variant, Knobs knobs, std::string name, EngineDevices devices,
                    std::optional<ib::VerbsChoice> rdma)
      : world_(world), variant_(std::move(variant)), knobs_(knobs), name_(std::move(name)), devices_(devices),
        rdma_(std::move(rdma)) {}

  std::string name() const override { return name_; }

  RankRun run(const Case& c, const RankRunOptions& options) override {
    const auto start = std::chrono::steady_clock::now();
    const int rank = world_.rank();
    if (c.nranks != world_.size()) {
      return RankRun::ended(Outcome::Detected, "the case has " + std::to_string(c.nranks) + " ranks, the world " +
                                                   std::to_string(world_.size()));
    }
    if (const std::string refused = refuse_host_reduction(variant_, devices_); !refused.empty()) {
      return RankRun::ended(Outcome::Crash, refused);
    }
    Knobs knobs = knobs_;  // the spec's, and the run's own on top (RunOptions::knobs)
    if (Status parsed = parse_knobs(name_, options.knobs, knobs); !parsed) {
      return RankRun::ended(Outcome::Detected, parsed.error().text());
    }
    Result<Schedule> schedule = variant_.schedule(c, knobs);
    if (!schedule) return RankRun::ended(Outcome::Detected, schedule.error().text());
    const Schedule whole = stored(std::move(schedule).value());
    cuda::EngineOptions engine = engine_options(variant_, knobs, devices_, options, options.deadline);
    std::vector<std::vector<std::byte>> inputs;
    if (options.input != nullptr) {  // this rank's given input, at its place among the ranks'
      inputs.resize(static_cast<std::size_t>(c.nranks));
      inputs[static_cast<std::size_t>(rank)] = *options.input;
      engine.inputs = &inputs;
    }
    engine.hook = options.hook;
    engine.world = &world_;
    engine.rdma = rdma_;
    cuda::EngineRun run = cuda::run_engine(whole, engine);
    if (!run.completed) return RankRun::ended(ending(run), run.error, run.world_broken);
    RankRun result;
    result.world_broken = run.world_broken;
    for (std::vector<RankResult>& call : handed_back(run, options)) {
      result.calls.push_back(std::move(call[static_cast<std::size_t>(rank)]));
    }
    result.seconds = options.timed ? timed_seconds(run, options)
                                   : std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return result;
  }

 private:
  World& world_;
  SimVariant variant_;
  Knobs knobs_;
  std::string name_;
  EngineDevices devices_;
  std::optional<ib::VerbsChoice> rdma_;
};

}  // namespace

Result<std::vector<RankBackendSpec>> engine_process_specs(std::string_view what, const Knobs& knobs,
                                                          std::string_view spec, EngineDevices devices,
                                                          std::optional<ib::VerbsChoice> rdma) {
  // Each backend is named as the spec writes its options, so that a replay line repeats them.
  const std::string suffix(spec.substr(spec.rfind('@')));
  Result<std::vector<NamedVariant>> named = named_variants(spec, what, suffix, false);
  if (!named) return named.error();
  std::vector<RankBackendSpec> specs;
  for (NamedVariant& one : *named) {
    RankBackendSpec made;
    made.name = one.name;
    made.capabilities = variant_capabilities(one.variant, knobs, one.name);
    made.capabilities.max_ranks = std::min(made.capabilities.max_ranks, kMaxHostRanks);
    made.capabilities.reliable = knobs.protocol.reliable;
    made.capabilities.edge_bytes = engine_edge_bytes(devices);
    made.capabilities.knobs_per_run = true;
    made.capabilities.independent_instances = false;
    made.cannot_run_here = devices.cannot_run_here == nullptr ? std::string() : devices.cannot_run_here();
    if (made.cannot_run_here.empty() && rdma) made.cannot_run_here = ib::verbs_cannot_run_here(*rdma);
    made.ranks_are_threads = rdma && rdma->loopback;  // the loopback joins queue pairs within one process
    if (one.variant.pinned_for_worlds) made.same_host_environment = one.variant.pinned_for_worlds();
    // Each process: its rings' words and, on the host, their slots (in shared memory; over RDMA
    // every ring between processes also has its image at its sender); the whole schedule, which
    // each builds.
    made.world_memory = [over_rdma = rdma.has_value()](const Case& c) {
      MemoryEstimate estimate;
      if (over_rdma)
        estimate.add("rings", 2 * kRingBytes, "the slots of every message stream, and their senders' images");
      else estimate.add("rings", kRingBytes, "the slots of every message stream, in shared memory");
      estimate.add("staged", case_buffers(c, 0).total() * 4, "messages staged by their senders");
      return estimate;
    };
    made.make = [variant = std::move(one.variant), knobs, name = one.name, devices,
                 rdma](World& world) -> Result<std::unique_ptr<RankBackend>> {
      return std::unique_ptr<RankBackend>(
          std::make_unique<EngineRankBackend>(world, variant, knobs, name, devices, rdma));
    };
    specs.push_back(std::move(made));
  }
  return specs;
}

std::unique_ptr<Backend> make_engine_backend(SimVariant variant, Knobs knobs, std::string spec, EngineDevices devices) {
  return std::make_unique<EngineBackend>(std::move(variant), knobs, std::move(spec), devices);
}

std::unique_ptr<Backend> make_cuda_host_backend(SimVariant variant, Knobs knobs, std::string spec) {
  return make_engine_backend(std::move(variant), knobs, std::move(spec), EngineDevices{});
}

}  // namespace collcheck
