// `ALGORITHM@sim` backends: the case's schedule is simulated numerically with guard zones on a
// one-switch fabric, each call with its own interleaving, and every rank's buffers returned.
#include "impls/sim/sim_backend.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>

#include "impls/link/guarded_buffer.h"
#include "reference/inputs.h"
#include "reference/key_values.h"
#include "reference/numbers.h"
#include "reference/random.h"

namespace collcheck {
namespace {

class SimBackend final : public Backend {
 public:
  SimBackend(SimVariant variant, Knobs knobs, std::string spec)
      : variant_(std::move(variant)), knobs_(knobs), spec_(std::move(spec)) {}

  std::string name() const override { return spec_; }

  Capabilities capabilities() const override { return variant_capabilities(variant_, knobs_, spec_); }

  // The schedule and the simulation that runs it: with data for a checked run, without for a timed
  // one (run_timed: no buffer at all); a variant that is no registered algorithm (a mutant) is
  // estimated by its buffers alone.
  MemoryEstimate estimate_memory(const Case& c, EstimateFor run) const override {
    Result<ScheduleSize> size = estimate_schedule(variant_.name, c, knobs_);
    if (!size) return Backend::estimate_memory(c, run);
    const bool numeric = run == EstimateFor::CheckedRun;
    SimulationOptions sim(0, nullptr, numeric);
    if (numeric) sim.guard = kGuardElements;
    sim.protocol = protocol();
    // Made on demand (a large one of a registered algorithm), its steps are never held.
    const bool on_demand = variant_.on_demand_where_large && form_for(variant_.name, c, knobs_) == Form::OnDemand;
    MemoryEstimate estimate = simulation_memory(c, *size, sim, 0, on_demand);
    estimate.add(schedule_memory(*size, on_demand));
    // A timed run outside a check makes its own schedule and keeps none (schedule_of).
    if (!numeric) return estimate;
    // Kept for the case's other runs, and the cases run in between (schedule_of), as large as it.
    const MemoryEstimate kept = schedule_memory(*size, on_demand);
    estimate.add("schedules kept for other runs", saturating_product(kept.total(), kKeptSchedules - 1),
                 std::to_string(kKeptSchedules - 1) + " x " + format_bytes(kept.total()));
    return estimate;
  }

  // All calls run in one simulation, back to back with no barrier (SimulationOptions::calls).
  RepeatedRun run(const Case& c, const RunOptions& options) override {
    RepeatedRun result;
    const std::shared_ptr<const MadeSchedule> made = schedule_of(c);
    if (!made->schedule) {
      result.outcome = Outcome::Crash;
      result.error = made->schedule.error().text();
      return result;
    }
    const Schedule& schedule = *made->schedule;
    if (options.timed)
      return options.checked ? run_timed_checked(c, schedule, options) : run_timed(c, schedule, options);
    if (!made->valid) {
      SimulatedRun invalid;
      invalid.error = made->valid.error().message;
      return failed(invalid);
    }
    SimulationOptions sim = simulation(options, options.schedule_seed, true);
    sim.validated = true;
    sim.inputs = options.inputs;
    sim.calls = std::max(options.calls, 1);
    sim.call_seed_step = variant_.stale_inputs ? 0 : 1;
    SimulatedRun run = simulate(schedule, sim_fabric(c.nranks), sim);
    if (!run.completed) return failed(run);
    result.trace = run.trace;
    result.calls = calls_of(run.earlier_outputs, run.outputs, run.inputs, run.guards_intact);
    return result;
  }

 private:
  // A case's schedule, made and validated (with the numeric runs' guard) once for all of its runs:
  // check runs a case many times, and its properties run others in between (in place, the
  // composition's two collectives). While a case is checked (an InputMemo in use on this thread)
  // the last kKeptSchedules cases' are kept in the memo, the oldest let go before another is made,
  // and all go with the memo at the case's end (estimate_memory counts them); outside a check each
  // run makes its own. A variant's schedule is a function of the case and the knobs.
  static constexpr std::size_t kKeptSchedules = 4;
  struct MadeSchedule {
    Case shape;
    Result<Schedule> schedule;
    Status valid;
  };
  using KeptSchedules = std::vector<std::shared_ptr<const MadeSchedule>>;  // the newest last
  std::shared_ptr<const MadeSchedule> schedule_of(const Case& c) const {
    InputMemo* memo = InputMemo::current();
    // Under the backend's name, which names its variant and knobs: every backend of that name
    // makes the same schedules.
    std::shared_ptr<void>* slot = memo != nullptr ? &memo->kept_for_case("schedules of " + spec_) : nullptr;
    if (slot != nullptr && *slot == nullptr) *slot = std::make_shared<KeptSchedules>();
    auto* kept = slot != nullptr ? static_cast<KeptSchedules*>(slot->get()) : nullptr;
    if (kept != nullptr) {
      for (const auto& made : *kept) {
        if (made->shape == c) return made;
      }
      if (kept->size() == kKeptSchedules) kept->erase(kept->begin());
    }
    Result<Schedule> schedule = variant_.schedule(c, knobs_);
    Status valid = !schedule || schedule->on_demand() ? Status(Ok{}) : validate(*schedule, kGuardElements);
    auto made = std::make_shared<const MadeSchedule>(MadeSchedule{c, std::move(schedule), std::move(valid)});
    if (kept != nullptr) kept->push_back(made);
    return made;
  }

  LinkProtocol protocol() const { return variant_protocol(variant_, knobs_); }

  // What every simulation of a run takes from the run's options: its interleaving's seed, the
  // hook, the link protocol and the room for its messages; numeric: with data, between guard
  // zones, reduced as the variant reduces.
  SimulationOptions simulation(const RunOptions& options, std::uint64_t seed, bool numeric) const {
    SimulationOptions sim(seed, options.hook, numeric);
    sim.protocol = protocol();
    sim.message_memory = options.message_memory;
    if (options.progress) {
      sim.progress = [report = options.progress](const SimulationProgress& progress) {
        report(progress_text(progress));
      };
      sim.progress_every = options.progress_every;
    }
    if (numeric) {
      sim.guard = kGuardElements;
      sim.reduction = variant_.reduction;
    }
    return sim;
  }

  // Detected: the protocol stopped every rank; a deadline: a hang; anything else: a crash. A run
  // stopped where its messages outgrew their room is refused: too large for the machine, not a verdict.
  static RepeatedRun failed(const SimulatedRun& run) {
    RepeatedRun result;
    result.trace = run.trace;
    if (run.out_of_memory) {
      result.outcome = Outcome::Detected;
      result.refused = true;
      result.error = "refused: " + run.error + "; lower n or ranks of the case, or raise --memory-limit";
      return result;
    }
    result.outcome = run.detected                                      ? Outcome::Detected
                     : run.error.find("deadline") != std::string::npos ? Outcome::Hang
                                                                       : Outcome::Crash;
    result.error = run.error;
    return result;
  }

  // On the simulated fabric every call of an unchecked timed loop takes the same virtual time,
  // so the mean per call is the predicted time of one call, simulated without data.
  RepeatedRun run_timed(const Case& c, const Schedule& schedule, const RunOptions& options) const {
    const SimulationOptions sim = simulation(options, options.schedule_seed, false);
    const SimulatedRun run = simulate(schedule, sim_fabric(c.nranks), sim);
    if (!run.completed) return failed(run);
    RepeatedRun result;
    result.trace = run.trace;
    result.seconds = run.time;
    return result;
  }

  // A checked timed loop with real data: inputs written once, then every call reads what the
  // previous one left in the buffers (out of place: the same inputs, so the warmup calls cannot
  // change anything and are skipped; in place: each call's input is the last call's output).
  // Each call is its own simulation with its own interleaving (schedule seed + call).
  RepeatedRun run_timed_checked(const Case& c, const Schedule& schedule, const RunOptions& options) {
    RepeatedRun result;
    const int warmup = c.in_place ? std::max(options.warmup, 0) : 0;
    const int calls = warmup + std::max(options.iterations, 1);
    std::vector<std::vector<std::byte>> buffers;  // in place: every rank's input buffer now
    double timed_seconds = 0;
    for (int k = 0; k < calls; ++k) {
      SimulationOptions sim = simulation(options, options.schedule_seed + static_cast<std::uint64_t>(k), true);
      sim.inputs = k > 0 && c.in_place ? &buffers : options.inputs;
      SimulatedRun run = simulate(schedule, sim_fabric(c.nranks), sim);
      if (!run.completed) return failed(run);
      if (c.in_place) buffers = run.inputs;
      if (k < warmup) continue;
      result.trace = mix64(result.trace ^ run.trace);
      timed_seconds += run.time;
      std::vector<RankResult> ranks(static_cast<std::size_t>(c.nranks));
      for (std::size_t r = 0; r < ranks.size(); ++r) {
        ranks[r] = RankResult{std::move(run.outputs[r]), std::move(run.inputs[r]), run.guards_intact[r]};
      }
      result.calls.push_back(std::move(ranks));
    }
    result.seconds = timed_seconds / static_cast<double>(calls - warmup);
    return result;
  }

  SimVariant variant_;
  Knobs knobs_;
  std::string spec_;
};

Topology build_sim_fabric(int nranks) {
  Topology t;
  t.name = "sim:" + std::to_string(nranks);
  for (int r = 0; r < nranks; ++r) {
    t.vertices.push_back(Vertex{VertexKind::Gpu, "gpu" + std::to_string(r), false});
    t.gpus.push_back(r);
  }
  t.vertices.push_back(Vertex{VertexKind::Switch, "switch", true});
  for (int r = 0; r < nranks; ++r) {
    t.links.push_back(Link{r, nranks, LinkKind::NVLink, 1e-6, 25e9});
    t.links.push_back(Link{nranks, r, LinkKind::NVLink, 1e-6, 25e9});
  }
  return t;
}

}  // namespace

Capabilities variant_capabilities(const SimVariant& variant, const Knobs& knobs, std::string_view spec) {
  Capabilities c;
  c.collectives = variant.collectives;
  c.dtypes.assign(all_dtypes().begin(), all_dtypes().end());
  c.ops.assign(all_ops().begin(), all_ops().end());
  c.deterministic = variant.deterministic;
  c.chunk = knobs.chunk;
  c.hook = true;
  c.reliable = knobs.protocol.reliable;
  c.knobs = free_schedule_knobs(spec, variant.name, 0);
  c.independent_instances = true;
  if (variant.narrow) variant.narrow(c);
  return c;
}

LinkProtocol variant_protocol(const SimVariant& variant, const Knobs& knobs) {
  LinkProtocol protocol = knobs.protocol;
  if (variant.skip_checksums) protocol.checksums = false;
  if (variant.skip_last_checksum) protocol.check_last = false;
  if (variant.never_time_out) protocol.timeout = -1;
  return protocol;
}

std::vector<std::vector<RankResult>> calls_of(std::vector<std::vector<std::vector<std::byte>>>& earlier_outputs,
                                              std::vector<std::vector<std::byte>>& outputs,
                                              std::vector<std::vector<std::byte>>& inputs,
                                              const std::vector<bool>& guards_intact) {
  std::vector<std::vector<RankResult>> calls;
  for (auto& call : earlier_outputs) {
    std::vector<RankResult> ranks;
    ranks.reserve(call.size());
    for (auto& output : call) ranks.push_back(RankResult{std::move(output), {}, true});
    calls.push_back(std::move(ranks));
  }
  std::vector<RankResult> last(outputs.size());
  for (std::size_t r = 0; r < last.size(); ++r) {
    last[r] = RankResult{std::move(outputs[r]), std::move(inputs[r]), guards_intact[r]};
  }
  calls.push_back(std::move(last));
  return calls;
}

// One set of fabrics per thread: a Topology fills its route cache as it is asked, which is not
// thread-safe, and `check --jobs N` runs simulations on several threads at once.
const Topology& sim_fabric(int nranks) {
  thread_local std::map<int, Topology> fabrics;
  auto found = fabrics.find(nranks);
  if (found == fabrics.end()) found = fabrics.emplace(nranks, build_sim_fabric(nranks)).first;
  return found->second;
}

std::vector<std::string> algorithm_variant_names() {
  std::vector<std::string> names;
  for (const Algorithm& a : all_algorithms()) {
    if (std::find(names.begin(), names.end(), a.name) == names.end()) names.emplace_back(a.name);
  }
  return names;
}

Result<SimVariant> algorithm_variant(std::string_view algorithm) {
  if (algorithm.starts_with("schedule:")) return schedule_file_variant(algorithm.substr(9));
  SimVariant variant;
  variant.name = std::string(algorithm);
  for (const Algorithm& a : all_algorithms()) {
    if (a.name == algorithm) variant.collectives.push_back(a.collective);
  }
  if (variant.collectives.empty()) {
    std::string names;
    for (const std::string& n : algorithm_variant_names()) names += (names.empty() ? "" : ", ") + n;
    return Error{"backend", quoted_input(algorithm) + " is not an algorithm: algorithms are " + names};
  }
  variant.description = "the reference " + variant.name + " algorithms on the simulated fabric";
  variant.schedule = [name = variant.name](const Case& c, const Knobs& knobs) {
    return make_schedule(name, c, knobs, form_for(name, c, knobs));
  };
  variant.on_demand_where_large = true;
  return variant;
}

std::unique_ptr<Backend> make_sim_backend(SimVariant variant, Knobs knobs, std::string spec) {
  return std::make_unique<SimBackend>(std::move(variant), knobs, std::move(spec));
}

namespace {

Error knob_error(std::string_view spec, const std::string& message) {
  return Error{"--backend", quoted_input(spec) + ": " + message};
}

// Every knob, what it allows and where it goes (`fan_in` is an old spelling of `fan-in`). A
// chunk longer than any case's count is one chunk; the bound keeps the generators' arithmetic
// far from overflow.
struct KnobRule {
  std::string_view key;
  std::uint64_t low, high;
  std::string_view unit;
  void (*set)(Knobs&, std::uint64_t);
};
constexpr KnobRule kKnobRules[] = {
    {"chunk", 0, kMaxCount, "elements", [](Knobs& k, std::uint64_t v) { k.chunk = v; }},
    {"channels", 1, 64, "", [](Knobs& k, std::uint64_t v) { k.channels = static_cast<int>(v); }},
    {"fan-in", 2, 64, "", [](Knobs& k, std::uint64_t v) { k.fan_in = static_cast<int>(v); }},
    {"fan_in", 2, 64, "", [](Knobs& k, std::uint64_t v) { k.fan_in = static_cast<int>(v); }},
    {"timeout", 1, 3600000, "milliseconds",
     [](Knobs& k, std::uint64_t v) { k.protocol.timeout = static_cast<double>(v) / 1000; }},
    {"retries", 0, 100, "", [](Knobs& k, std::uint64_t v) { k.protocol.retries = static_cast<int>(v); }},
    {"reliable", 0, 1, "on|off", [](Knobs& k, std::uint64_t v) { k.protocol.reliable = v == 1; }},
};
constexpr std::string_view kAllowed = "chunk, channels, fan-in, reliable, timeout, retries";

// One knob's value: on|off for reliable, else an integer in the rule's range.
Result<std::uint64_t> knob_value(const KnobRule& rule, const KeyValue& option) {
  if (rule.key == "reliable") {
    Result<bool> on = read_on_off(option);
    if (!on) return on.error();
    return std::uint64_t{*on ? 1u : 0u};
  }
  return read_unsigned(option, rule.low, rule.high, rule.unit);
}

}  // namespace

std::vector<KnobSpace> free_schedule_knobs(std::string_view spec, std::string_view algorithm,
                                           std::uint64_t default_chunk) {
  const std::size_t at = spec.find('@');
  const std::size_t colon = at == std::string_view::npos ? std::string_view::npos : spec.find(':', at);
  const std::string_view options = colon == std::string_view::npos ? "" : spec.substr(colon + 1);
  const Result<std::vector<KeyValue>> given = split_key_values(options);
  const auto fixed = [&](std::string_view key) {
    if (!given) return true;  // a spec that does not parse fixes everything
    return std::any_of(given->begin(), given->end(), [&](const KeyValue& option) {
      return option.key == key || (key == "fan-in" && option.key == "fan_in");
    });
  };
  std::vector<KnobSpace> spaces;
  if (!fixed("chunk")) {
    KnobSpace chunk =
        numeric_knob("chunk", 1, kMaxCount, default_chunk, {1, 2, 3, 4, 7, 8, 16, 31, 32, 64, 127, 128, 1024, 4096});
    chunk.fit = [](std::uint64_t value, const Case& c) {
      const std::uint64_t elements = std::max(input_elements(c), output_elements(c));
      return std::max<std::uint64_t>(value, (elements + 63) / 64);
    };
    spaces.push_back(std::move(chunk));
  }
  if (!fixed("channels")) {
    KnobSpace channels = numeric_knob("channels", 1, 64, 1, {2, 3, 4, 8, 5, 16, 64});
    channels.fit = [](std::uint64_t value, const Case& c) {
      return std::min<std::uint64_t>(value, std::max(1, 128 / std::max(c.nranks, 1)));
    };
    spaces.push_back(std::move(channels));
  }
  if (algorithm == "innet" && !fixed("fan-in"))
    spaces.push_back(numeric_knob("fan-in", 2, 64, 4, {2, 3, 8, 5, 16, 64}));
  return spaces;
}

Status parse_knobs(std::string_view spec, std::string_view text, Knobs& knobs) {
  Result<std::vector<KeyValue>> options = split_key_values(text);
  if (!options) return knob_error(spec, options.error().message);
  return apply_knobs(spec, *options, knobs);
}

Status apply_knobs(std::string_view spec, std::span<const KeyValue> options, Knobs& knobs) {
  if (const KeyValue* again = repeated_key(options))
    return knob_error(spec, escaped_input(again->key) + " given twice");
  for (const KeyValue& option : options) {
    const KnobRule* rule = std::find_if(std::begin(kKnobRules), std::end(kKnobRules),
                                        [&](const KnobRule& known) { return known.key == option.key; });
    if (rule == std::end(kKnobRules)) {
      return knob_error(spec, "unknown option " + quoted_input(option.key) + ": options are " + std::string(kAllowed));
    }
    Result<std::uint64_t> value = knob_value(*rule, option);
    if (!value) return knob_error(spec, value.error().message);
    rule->set(knobs, *value);
  }
  return Ok{};
}

}  // namespace collcheck
