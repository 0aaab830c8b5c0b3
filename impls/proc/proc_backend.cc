// `ALGORITHM@proc` backends: every rank makes the case's schedule, runs the participants it
// hosts on the proc transport with guard zones around its buffers, and returns them call by call.
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <stdexcept>

#include <unistd.h>

#include "impls/algorithms/algorithms.h"
#include "impls/backend/rank_backend.h"
#include "impls/ib/ibverbs.h"
#include "impls/link/guarded_buffer.h"
#include "impls/link/reduce_op.h"
#include "impls/mutants/mutants.h"
#include "impls/proc/links.h"
#include "impls/proc/proc_backend.h"
#include "impls/proc/transport.h"
#include "impls/sim/sim_backend.h"
#include "impls/worlds/shared_segment.h"
#include "reference/inputs.h"
#include "reference/key_values.h"
#include "reference/memory.h"
#include "reference/numbers.h"

namespace collcheck {
namespace {

constexpr std::uint64_t kMaxQueuePairs = 64;  // per peer, `qps=`
// Where channels are drawn per case, channel c takes queue pair c mod this (the drawn counts
// other than 1 being mostly 2..8).
constexpr int kQueuePairsWhereChannelsAreDrawn = 4;

// This rank's memory for one case: its own buffers (one of input and output lies inside the
// other in place, as NCCL lays them out) and the scratch of the switches it hosts.
struct RankMemory {
  std::vector<GuardedBuffer> buffers;
  std::vector<ProcBuffers> participants;  // indexed by participant

  RankMemory(const Schedule& s, int rank) : participants(static_cast<std::size_t>(s.nparticipants())) {
    const std::size_t element = size_of(s.shape.dtype);
    buffers.reserve(static_cast<std::size_t>(s.nparticipants()) + 2);
    auto make = [&](int p, BufferKind kind) {
      buffers.emplace_back(s.buffer_size(p, kind), element, s.shape.offset);
      return buffers.back().data();
    };
    for (int p = 0; p < s.nparticipants(); ++p) {
      if (host_rank(p, s.nranks()) != rank) continue;
      ProcBuffers& b = participants[static_cast<std::size_t>(p)];
      b.scratch = make(p, BufferKind::Scratch);
      if (p >= s.nranks()) continue;
      const Alias alias = in_place_alias(s.shape, p);
      const bool input_stored = !s.shape.in_place || alias.inside == BufferKind::Output;
      const bool output_stored = !s.shape.in_place || alias.inside == BufferKind::Input;
      if (input_stored) b.input = make(p, BufferKind::Input);
      if (output_stored) b.output = make(p, BufferKind::Output);
      if (!input_stored) b.input = b.output + alias.offset * element;
      if (!output_stored) b.output = b.input + alias.offset * element;
    }
  }
  bool intact() const {
    return std::all_of(buffers.begin(), buffers.end(), [](const GuardedBuffer& b) { return b.intact(); });
  }
};

class ProcBackend final : public RankBackend {
 public:
  ProcBackend(World& world, SimVariant variant, Knobs knobs, ProcLinkOptions links, ProcessSabotage sabotage,
              std::string name)
      : world_(world), variant_(std::move(variant)), knobs_(knobs), links_(std::move(links)), sabotage_(sabotage),
        name_(std::move(name)) {}

  std::string name() const override { return name_; }

  RankRun run(const Case& c, const RankRunOptions& options) override {
    const auto start = std::chrono::steady_clock::now();
    const int rank = world_.rank();
    if (c.nranks != world_.size()) {
      return failed("the case has " + std::to_string(c.nranks) + " ranks, the world " + std::to_string(world_.size()));
    }
    Knobs knobs = knobs_;  // the spec's, and the run's own on top (RunOptions::knobs)
    if (Status parsed = parse_knobs(name_, options.knobs, knobs); !parsed) return failed(parsed.error().text());
    Result<Schedule> schedule = variant_.schedule(c, knobs);
    if (!schedule) return failed(schedule.error().text());
    Status valid = validate(*schedule, kGuardElements);
    if (!valid) return failed(valid.error().text());
    if (transport_ == nullptr) {  // every member's first run: connect is collective
      Result<std::unique_ptr<ProcTransport>> made = ProcTransport::connect(world_, links_);
      if (!made) {
        // No room for the shared memory on this host: the machine is short, not the run wrong.
        RankRun run = failed(made.error().text());
        run.refused = says_no_room_for_segment(made.error().message);
        return run;
      }
      transport_ = std::move(made).value();
    }
    RankMemory memory(*schedule, rank);
    Status begun = transport_->begin(
        *schedule, ProcRunOptions{options.hook, variant_.reduction, start, options.deadline, protocol(knobs)});
    if (!begun) return failed(begun.error().text(), transport_->broken());
    Calls calls{*schedule, memory, rank};
    RankRun result = options.timed ? timed(calls, options) : repeated(calls, options);
    if (result.outcome == Outcome::Ok) {
      Status finished = transport_->finish();
      if (!finished) return failed(finished.error().text(), transport_->broken());
    }
    if (!options.timed)
      result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    // ib: a queue pair in error stays in error; the world must be made again.
    result.world_broken = result.world_broken || transport_->broken();
    return result;
  }

 private:
  struct Calls {
    const Schedule& schedule;
    RankMemory& memory;
    int rank;
  };

  // The knobs' link protocol, with what a mutant breaks in it.
  LinkProtocol protocol(const Knobs& knobs) const {
    LinkProtocol p = knobs.protocol;
    if (variant_.skip_checksums) p.checksums = false;
    if (variant_.skip_last_checksum) p.check_last = false;
    if (variant_.never_time_out) p.timeout = -1;
    return p;
  }

  static RankRun failed(std::string error, bool broken = false) {
    RankRun run;
    run.outcome = Outcome::Detected;
    run.error = std::move(error);
    run.world_broken = broken;
    return run;
  }

  // Writes the inputs of call k: the case with seed + k (a stale-input mutant: always seed).
  void fill_inputs(const Calls& calls, const RankRunOptions& options, int k) {
    const Schedule& s = calls.schedule;
    const std::size_t bytes = s.buffer_size(calls.rank, BufferKind::Input) * size_of(s.shape.dtype);
    std::byte* input = calls.memory.participants[static_cast<std::size_t>(calls.rank)].input;
    if (bytes == 0) return;
    if (options.input != nullptr && k == 0) {
      std::memset(input, 0, bytes);
      std::memcpy(input, options.input->data(), std::min(bytes, options.input->size()));
      return;
    }
    Case c = s.shape;
    if (!variant_.stale_inputs) c.seed += static_cast<std::uint64_t>(k);
    InputGenerator(c).fill(calls.rank, 0, {input, bytes});
  }

  // One call on the transport, then avg's last step on this rank's output.
  Status call(const Calls& calls, int k) {
    const Schedule& s = calls.schedule;
    if (k == 0 && sabotage_ != ProcessSabotage::None && calls.rank == s.nranks() - 1 && s.nranks() >= 2) {
      if (sabotage_ == ProcessSabotage::Crash) std::abort();
      if (sabotage_ == ProcessSabotage::Throw)
        throw std::logic_error("mutant:throw: an invariant broken inside the call");
      for (;;) ::pause();  // hangs inside the call, deaf to every deadline
    }
    Status done = transport_->run_call(calls.memory.participants);
    if (!done) return Error{done.error().field, "call " + std::to_string(k) + ": " + done.error().message};
    const std::size_t count = s.buffer_size(calls.rank, BufferKind::Output);
    if (s.shape.op == RedOp::Avg && reduces(s.shape.collective) && count > 0) {
      auto finish = variant_.reduction.finish_average ? variant_.reduction.finish_average : &finish_average;
      finish(s.shape.dtype, calls.memory.participants[static_cast<std::size_t>(calls.rank)].output, count, s.nranks());
    }
    return Ok{};
  }

  static RankResult collect(const Calls& calls) {
    const Schedule& s = calls.schedule;
    const std::size_t element = size_of(s.shape.dtype);
    const ProcBuffers& b = calls.memory.participants[static_cast<std::size_t>(calls.rank)];
    const std::size_t outputs = s.buffer_size(calls.rank, BufferKind::Output) * element;
    const std::size_t inputs = s.buffer_size(calls.rank, BufferKind::Input) * element;
    RankResult result;
    if (outputs > 0) result.output.assign(b.output, b.output + outputs);
    if (inputs > 0) result.input.assign(b.input, b.input + inputs);
    result.guards_intact = calls.memory.intact();
    return result;
  }

  RankRun repeated(const Calls& calls, const RankRunOptions& options) {
    RankRun run;
    for (int k = 0; k < std::max(options.calls, 1); ++k) {
      fill_inputs(calls, options, k);
      Status done = call(calls, k);
      if (!done) return failed(done.error().text());
      run.calls.push_back(collect(calls));
    }
    return run;
  }

  // Inputs once, `warmup` untimed calls, then `iterations` timed ones. No barrier before the
  // timed calls: a rank that failed in warmup must not leave the others waiting at one.
  RankRun timed(const Calls& calls, const RankRunOptions& options) {
    RankRun run;
    fill_inputs(calls, options, 0);
    for (int k = 0; k < options.warmup; ++k) {
      Status done = call(calls, k);
      if (!done) return failed(done.error().text());
    }
    double total = 0;
    for (int k = 0; k < options.iterations; ++k) {
      const auto begin = std::chrono::steady_clock::now();
      Status done = call(calls, options.warmup + k);
      total += std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
      if (!done) return failed(done.error().text());
      if (options.checked) run.calls.push_back(collect(calls));
    }
    run.seconds = options.iterations > 0 ? total / options.iterations : 0;
    return run;
  }

  World& world_;
  SimVariant variant_;
  Knobs knobs_;
  ProcLinkOptions links_;
  ProcessSabotage sabotage_;
  std::string name_;
  std::unique_ptr<ProcTransport> transport_;  // made on the first run, kept across cases
};

// What a proc world's processes hold on one host besides the ranks' buffers: a shared-memory
// segment per rank (unless every link is TCP), and in every worker the whole schedule, which each
// builds, and its participants' scratch. A variant that is no registered algorithm (a mutant)
// counts its segments alone.
MemoryEstimate proc_world_memory(std::string_view algorithm, const Case& c, const Knobs& knobs,
                                 const ProcLinkOptions& links) {
  MemoryEstimate estimate;
  const auto ranks = static_cast<std::uint64_t>(c.nranks);
  if (links.links != ProcLinks::Tcp) {
    estimate.add("segments", saturating_product(ranks, proc::kSegmentBytes),
                 std::to_string(c.nranks) + " ranks x " + format_bytes(proc::kSegmentBytes) + " of shared memory");
  }
  Result<ScheduleSize> size = estimate_schedule(algorithm, c, knobs);
  if (!size) return estimate;
  estimate.add("schedules", saturating_product(ranks, schedule_memory(*size).total()),
               "the whole schedule in each of " + std::to_string(c.nranks) + " workers");
  if (size->scratch_elements > 0) {
    estimate.add("scratch", saturating_product(size->scratch_elements, size_of(c.dtype)), "the participants' scratch");
  }
  return estimate;
}

// The knob settings a drawn case may run with for `c` (Capabilities::knobs): the spec's own
// (empty), and each free knob at the low and the high end of its range as fitted to the case,
// in every combination, so that the memory estimate covers the costliest schedule a draw makes.
std::vector<std::string> extreme_settings(const std::vector<KnobSpace>& spaces, const Case& c) {
  std::vector<std::string> settings = {""};
  for (const KnobSpace& space : spaces) {
    std::vector<std::string> more;
    for (const std::string& setting : settings) {
      more.push_back(setting);
      for (const std::uint64_t end : {space.low, space.high}) {
        const std::uint64_t value = space.fit ? space.fit(end, c) : end;
        more.push_back(setting + (setting.empty() ? "" : ",") + space.setting(value));
      }
    }
    settings = std::move(more);
  }
  return settings;
}

// The largest of proc_world_memory over the settings a drawn case may run with.
MemoryEstimate drawn_world_memory(std::string_view algorithm, const Case& c, const Knobs& knobs,
                                  const ProcLinkOptions& links, const std::vector<KnobSpace>& spaces) {
  MemoryEstimate largest = proc_world_memory(algorithm, c, knobs, links);
  for (const std::string& setting : extreme_settings(spaces, c)) {
    Knobs drawn = knobs;
    if (!parse_knobs(algorithm, setting, drawn)) continue;
    MemoryEstimate estimate = proc_world_memory(algorithm, c, drawn, links);
    if (estimate.total() > largest.total()) largest = std::move(estimate);
  }
  return largest;
}

RankBackendSpec make_spec(SimVariant variant, Knobs knobs, const ProcLinkOptions& links, ProcessSabotage sabotage,
                          const std::string& name) {
  RankBackendSpec spec;
  spec.name = name;
  spec.capabilities.collectives = variant.collectives;
  spec.capabilities.dtypes.assign(all_dtypes().begin(), all_dtypes().end());
  spec.capabilities.ops.assign(all_ops().begin(), all_ops().end());
  spec.capabilities.deterministic = variant.deterministic;
  spec.capabilities.chunk = knobs.chunk;
  // A piece is at most one FIFO slot, and a FIFO's slots make a ring (on segments shared by few
  // streams; more streams get smaller FIFOs).
  spec.capabilities.edge_bytes = {kProcSlotBytes, kProcSlots * kProcSlotBytes};
  spec.capabilities.hook = true;  // every send passes RankRunOptions::hook
  spec.capabilities.reliable = knobs.protocol.reliable;
  // The schedule knobs the spec leaves free, drawn per case and sent with each run to the
  // workers, which build the run's schedule with them.
  spec.capabilities.knobs = free_schedule_knobs(name, variant.name, knobs.chunk);
  spec.capabilities.knobs_per_run = true;
  if (variant.narrow) variant.narrow(spec.capabilities);
  if (variant.pinned_for_worlds) spec.same_host_environment = variant.pinned_for_worlds();
  spec.world_memory = [algorithm = variant.name, knobs, links, spaces = spec.capabilities.knobs](const Case& c) {
    return drawn_world_memory(algorithm, c, knobs, links, spaces);
  };
  spec.make = [variant = std::move(variant), knobs, links, sabotage,
               name](World& world) -> Result<std::unique_ptr<RankBackend>> {
    return std::unique_ptr<RankBackend>(std::make_unique<ProcBackend>(world, variant, knobs, links, sabotage, name));
  };
  return spec;
}

// One of @ib's own options (verbs, dev, port, gid, qps) into `links`; false when `item` is none of them.
Result<bool> apply_rdma_option(std::string_view spec, const KeyValue& item, ProcLinkOptions& links) {
  if (item.key == "qps") {
    Result<std::uint64_t> number = read_unsigned(item, 1, kMaxQueuePairs);
    if (!number) return backend_spec_error(spec, number.error().message);
    links.queue_pairs = static_cast<int>(*number);
    return true;
  }
  Result<bool> taken = ib::apply_verbs_option(item, links.verbs);
  if (!taken) return backend_spec_error(spec, taken.error().message);
  return taken;
}

// The options of a spec apart: transport=auto|shm|tcp (on @proc) or verbs, dev, port, gid and
// qps (on @ib) into `links`, every other item a knob.
Result<std::vector<KeyValue>> split_transport(std::string_view options, std::string_view spec, ProcLinkOptions& links) {
  Result<std::vector<KeyValue>> items = split_key_values(options);
  if (!items) return backend_spec_error(spec, items.error().message);
  if (const KeyValue* again = repeated_key(*items))
    return backend_spec_error(spec, escaped_input(again->key) + " given twice");
  std::vector<KeyValue> knob_items;
  const bool ib = links.links == ProcLinks::Ib;
  for (const KeyValue& item : *items) {
    if (ib) {
      Result<bool> taken = apply_rdma_option(spec, item, links);
      if (!taken) return taken.error();
      if (!*taken) knob_items.push_back(item);
    } else if (item.key == "transport") {
      Result<ProcLinks> parsed = parse_proc_links(item.value);
      if (!parsed) return backend_spec_error(spec, escaped_input(item.item) + ": must be auto, shm or tcp");
      links.links = *parsed;
    } else {
      knob_items.push_back(item);
    }
  }
  return knob_items;
}

// mutant:NAME@proc: a process mutant, else a schedule mutant; mutants keep their own pipeline
// defaults, so that they break as they do on `sim`.
}  // namespace

// `what` is ALGORITHM, all or mutant:NAME; `options` the knobs and transport=auto|shm|tcp.
Result<std::vector<RankBackendSpec>> proc_backend_specs(std::string_view what, std::string_view options,
                                                        std::string_view spec, bool ib) {
  ProcLinkOptions links;
  if (ib) links.links = ProcLinks::Ib;
  Result<std::vector<KeyValue>> knob_items = split_transport(options, spec, links);
  if (!knob_items) return knob_items.error();
  Knobs knobs;
  Status parsed = apply_knobs(spec, *knob_items, knobs);
  if (!parsed) return parsed.error();
  if (links.queue_pairs == 0) {  // one per channel: the spec's, or as many as the channels drawn most
    const bool fixed = std::any_of(knob_items->begin(), knob_items->end(),
                                   [](const KeyValue& item) { return item.key == "channels"; });
    links.queue_pairs = fixed ? knobs.channels : kQueuePairsWhereChannelsAreDrawn;
  }

  const std::string suffix = (ib ? "@ib" : "@proc") + (options.empty() ? "" : ":" + std::string(options));
  Knobs algorithm_knobs = knobs;
  if (algorithm_knobs.chunk == 0) algorithm_knobs.chunk = kProcDefaultChunk;

  Result<std::vector<NamedVariant>> named = named_variants(spec, what, suffix, true);
  if (!named) return named.error();
  std::vector<RankBackendSpec> specs;
  for (NamedVariant& one : *named) {
    // An algorithm takes proc's default pipeline chunk where the spec gives none (transport.h); a
    // mutant runs with the spec's knobs as they are, as on every transport.
    const bool mutant = what.starts_with("mutant:");
    specs.push_back(make_spec(std::move(one.variant), mutant ? knobs : algorithm_knobs, links, one.sabotage, one.name));
  }
  const std::string cannot_run_here = ib ? ib::verbs_cannot_run_here(links.verbs) : std::string();
  for (RankBackendSpec& one : specs) {
    one.cannot_run_here = cannot_run_here;
    one.ranks_are_threads = links.verbs.loopback;  // the loopback joins queue pairs within one process
  }
  return specs;
}

}  // namespace collcheck
