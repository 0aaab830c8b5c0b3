// The engine's backends: each case's schedule on the slot engine (slot_engine.h), every participant
// a host thread, buffers between guard zones on its device, the kernels run there.
#include "impls/cuda/engine_backend.h"

#include <algorithm>

#include "impls/cuda/slot_engine.h"
#include "impls/link/guarded_buffer.h"
#include "impls/worlds/launched_backend.h"

namespace collcheck {
namespace {

// Participants are threads: beyond this many a run is mostly threads waiting for a core.
constexpr int kMaxHostRanks = 64;
constexpr std::size_t kRingBytes = std::size_t{64} << 20;

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
    // A message's pieces: one slot each, so counts near a slot's multiples reach the last piece's edges.
    c.edge_bytes = {cuda::ring_shape(1, kRingBytes, devices_.largest_slot).slot_bytes};
    return c;
  }

  // The default's buffers and results, the rings, and every message staged once.
  MemoryEstimate estimate_memory(const Case& c) const override {
    MemoryEstimate estimate = Backend::estimate_memory(c);
    estimate.add("rings", kRingBytes, "the slots of every message stream");
    // Staged messages hold what the buffers hold, twice over under faults (the bytes before the
    // hook), each rounded up to a power of two by the staging pool.
    estimate.add("staged", case_buffers(c, 0).total() * 4, "messages staged by their senders");
    return estimate;
  }

  RepeatedRun run(const Case& c, const RunOptions& options) override {
    if (devices_.make != cuda::make_host_device && (variant_.reduction.reduce || variant_.reduction.finish_average)) {
      return RepeatedRun::ended(Outcome::Crash, variant_.name + " reduces on the host: run it @cuda-host");
    }
    Result<Schedule> schedule = variant_.schedule(c, knobs_);
    if (!schedule) return RepeatedRun::ended(Outcome::Crash, schedule.error().text());
    const Schedule whole = stored(std::move(schedule).value());
    cuda::EngineOptions engine;
    engine.guard = kGuardElements;
    engine.inputs = options.inputs;
    engine.calls =
        options.timed ? std::max(options.warmup, 0) + std::max(options.iterations, 1) : std::max(options.calls, 1);
    // Timed calls run on the buffers as written once (bench checks only out of place).
    engine.call_seed_step = variant_.stale_inputs ? 0 : 1;
    engine.inputs_once = options.timed;
    engine.earlier_outputs = !options.timed || options.checked;
    engine.hook = options.without_faults ? nullptr : options.hook;
    engine.protocol = protocol();
    engine.deadline = run_deadline(c, options, {});
    engine.reduction = variant_.reduction;
    engine.ring_bytes = kRingBytes;
    engine.largest_slot = devices_.largest_slot;
    engine.make_device = devices_.make;
    cuda::EngineRun run = cuda::run_engine(whole, engine);
    if (!run.completed) {
      return RepeatedRun::ended(run.detected ? Outcome::Detected
                                : run.hang   ? Outcome::Hang
                                             : Outcome::Crash,
                                run.error);
    }
    RepeatedRun result;
    result.calls = calls_of(run.earlier_outputs, run.outputs, run.inputs, run.guards_intact);
    if (options.timed) {
      // The timed calls only: from the slowest rank's return from the last warmup call.
      const int warmup = std::max(options.warmup, 0);
      const double from = warmup > 0 ? run.call_ends[static_cast<std::size_t>(warmup - 1)] : 0.0;
      result.seconds = (run.call_ends.back() - from) / (engine.calls - warmup);
      if (!options.checked) result.calls.clear();
      else result.calls.erase(result.calls.begin(), result.calls.begin() + std::max(options.warmup, 0));
    }
    return result;
  }

 private:
  LinkProtocol protocol() const { return variant_protocol(variant_, knobs_); }

  SimVariant variant_;
  Knobs knobs_;
  std::string spec_;
  EngineDevices devices_;
};

}  // namespace

std::unique_ptr<Backend> make_engine_backend(SimVariant variant, Knobs knobs, std::string spec, EngineDevices devices) {
  return std::make_unique<EngineBackend>(std::move(variant), knobs, std::move(spec), devices);
}

std::unique_ptr<Backend> make_cuda_host_backend(SimVariant variant, Knobs knobs, std::string spec) {
  return make_engine_backend(std::move(variant), knobs, std::move(spec), EngineDevices{});
}

}  // namespace collcheck
