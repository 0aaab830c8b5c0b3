// `collcheck simulate --algorithm ring --collective allreduce --ranks 8 --topology dgx-h100`:
// every count of the list is run on `sim` and timed in virtual time: numerically and checked by
// the oracle, or with --timing-only on timing alone (no data), with the engine's events per second.
#include "harness/cli_simulate.h"

#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "faults/injector.h"
#include "faults/plan.h"
#include "harness/arguments.h"
#include "harness/bench.h"
#include "harness/knob_options.h"
#include "harness/memory_check.h"
#include "harness/text_table.h"
#include "impls/algorithms/algorithms.h"
#include "impls/sim/simulator.h"
#include "reference/bandwidth.h"
#include "reference/counts.h"
#include "reference/numbers.h"
#include "reference/oracle.h"

namespace collcheck::cli {
namespace {

using Json = nlohmann::ordered_json;  // keys in the order docs/cli.md shows them

constexpr Option kOptions[] = {
    {"algorithm", "A", "ring", "the algorithm to run (collcheck list names them)"},
    {"collective", "C", "allreduce", "the collective"},
    {"ranks", "N", "8", "rank count, up to 16384"},
    {"counts", "LIST", "1K,64K,1M", "element counts, one table row each"},
    {"dtype", "D", "f32", "element type"},
    {"op", "O", "sum", "reduction op"},
    {"values", "exact|real|special", "exact", "input values (docs/oracle.md)"},
    {"seed", "S", "0", "seed of the inputs"},
    {"schedule-seed", "S", "0", "seed of the fabric's choices and of the faults drawn"},
    {"topology", "PRESET|FILE", "",
     "the fabric: ring:N, dgx-h100, ib-fat-tree:NODES, rail-fat-tree:NODES, dragonfly:GROUPS, or a topology file; "
     "default: ring:RANKS"},
    {"root", "R", "0", "root of rooted collectives"},
    kChunkOption,
    kChannelsOption,
    kFanInOption,
    {"faults", "PLAN", "none", "a fault plan for every message, e.g. 'drop:link=2->3:p=0.01;delay:rank=1:ms=5'"},
    {"inplace", "", "", "run in place (the output buffer holds the input)"},
    {"reliable", "", "", "the link protocol retransmits lost and damaged messages (as reliable=on)"},
    {"timing-only", "", "", "move no data: predicted time, link loads and trace only (no oracle check)"},
    kProgressOption,
    {"json", "FILE", "", "write the plan and each count's figures as JSON (docs/cli.md)"},
    kMemoryLimitOption,
};
constexpr int kUsageError = 2;

struct Plan {
  std::string algorithm;
  Case base;
  std::vector<std::uint64_t> counts;
  Knobs knobs;
  Topology topology;
  std::uint64_t schedule_seed = 0;
  FaultPlan faults;  // empty: none
  bool timing_only = false;
  bool reliable = false;
  double progress_every = 0;  // seconds of wall time between progress lines; 0: none
};

Result<std::uint64_t> number(const Arguments& args, std::string_view flag, std::uint64_t low, std::uint64_t high) {
  return parse_count("--" + std::string(flag), args.get(flag), low, high);
}

Status parse_case_fields(const Arguments& args, Plan& plan) {
  Result<Collective> collective = parse_collective(args.get("collective"));
  Result<DType> dtype = parse_dtype(args.get("dtype"));
  Result<RedOp> op = parse_op(args.get("op"));
  Result<ValueKind> values = parse_value_kind(args.get("values"));
  if (!collective) return Error{"--collective", collective.error().message};
  if (!dtype) return Error{"--dtype", dtype.error().message};
  if (!op) return Error{"--op", op.error().message};
  if (!values) return Error{"--values", values.error().message};
  Result<std::uint64_t> ranks = number(args, "ranks", 1, kMaxRanks);
  if (!ranks) return ranks.error();
  Result<std::uint64_t> root = number(args, "root", 0, *ranks - 1);
  if (!root) return root.error();
  Result<std::uint64_t> seed = number(args, "seed", 0, ~std::uint64_t{0});
  if (!seed) return seed.error();
  plan.base.collective = *collective;
  plan.base.dtype = *dtype;
  plan.base.op = *op;
  plan.base.values = *values;
  plan.base.nranks = static_cast<int>(*ranks);
  plan.base.root = static_cast<int>(*root);
  plan.base.seed = *seed;
  plan.base.in_place = args.has("inplace");
  return Ok{};
}

Result<Plan> parse_plan(const Arguments& args) {
  Plan plan;
  plan.algorithm = args.get("algorithm");
  Status fields = parse_case_fields(args, plan);
  if (!fields) return fields.error();
  Result<std::vector<std::uint64_t>> counts = parse_set("--counts", args.get("counts"), 0, 1ull << 28);
  if (!counts) return counts.error();
  plan.counts = *counts;
  Result<Knobs> knobs = parse_knob_options(args);
  if (!knobs) return knobs.error();
  Result<std::uint64_t> schedule_seed = number(args, "schedule-seed", 0, ~std::uint64_t{0});
  if (!schedule_seed) return schedule_seed.error();
  plan.knobs = *knobs;
  plan.schedule_seed = *schedule_seed;
  const std::string topology = args.get("topology", "ring:" + std::to_string(plan.base.nranks));
  Result<Topology> loaded = load_topology(topology);
  if (!loaded) return Error{"--topology", loaded.error().text()};
  plan.topology = std::move(loaded).value();
  Result<FaultPlan> faults = parse_fault_plan(args.get("faults"));
  if (!faults) return faults.error();
  if (Status valid = validate(*faults, plan.base.nranks); !valid) return valid.error();
  plan.faults = std::move(faults).value();
  plan.timing_only = args.has("timing-only");
  plan.reliable = args.has("reliable");
  Result<double> progress = progress_option(args);
  if (!progress) return progress.error();
  plan.progress_every = *progress;
  return plan;
}

std::string hex(std::uint64_t value) {
  char text[24];
  std::snprintf(text, sizeof text, "%016" PRIx64, value);
  return text;
}

// Checks every rank's output against the oracle; returns the elements that are wrong.
std::size_t wrong_elements(const Case& c, const SimulatedRun& run, std::string& first) {
  Oracle oracle(c);
  std::size_t wrong = 0;
  for (int rank = 0; rank < c.nranks; ++rank) {
    const Verdict verdict = compare(oracle.expected(rank), rank, run.outputs[static_cast<std::size_t>(rank)]);
    wrong += verdict.ok ? 0 : std::max<std::size_t>(verdict.mismatched, 1);
    if (!verdict.ok && first.empty()) first = verdict.describe(c.dtype);
  }
  return wrong;
}

// The base case at one --counts value; a v-collective's counts spread around it (counts.h).
Case with_count(Case c, std::size_t count) {
  c.count = count;
  if (per_rank_counts(c.collective)) set_counts(c, spread_counts(c.collective, c.nranks, count));
  return c;
}

// Refuses, before anything runs, a count whose simulation memory could not hold; `streams`, the
// schedule's stream links and routes once it is built (none: before). `message_room`, when given:
// what the budget leaves to the run's messages (SimulationOptions::message_memory).
Status count_fits(const MemoryBudget& budget, const Plan& plan, std::uint64_t count, StreamSample streams,
                  std::uint64_t* message_room = nullptr) {
  const Case c = with_count(plan.base, count);
  Result<MemoryEstimate> estimate =
      simulated_case_memory(plan.algorithm, c, plan.knobs, !plan.timing_only, plan.reliable, streams);
  if (!estimate) return Ok{};  // make_schedule names what is wrong
  if (message_room != nullptr) *message_room = room_for_part(*estimate, budget, "messages");
  return fits(*estimate, budget, "--counts " + std::to_string(count), "lower --counts or --ranks, or raise --chunk");
}

// Every count before any runs. A schedule that would be stored is estimated by the bound on its
// stream links; one made on demand costs nothing to make, so it is made and its links counted
// (sample_streams), since the bound would turn away what fits (a ring has one link per rank
// where the bound says 2 (log2 p + 1): 171 MiB estimated for a 2048-rank ring that holds 14 MB).
// `sampled`, per count: those links (none where stored: run_count counts them once built).
Status counts_fit(const MemoryBudget& budget, const Plan& plan, std::vector<StreamSample>& sampled) {
  sampled.assign(plan.counts.size(), StreamSample{});
  for (std::size_t k = 0; k < plan.counts.size(); ++k) {
    const Case c = with_count(plan.base, plan.counts[k]);
    if (form_for(plan.algorithm, c, plan.knobs) == Form::OnDemand) {
      Result<Schedule> schedule = make_schedule(plan.algorithm, c, plan.knobs, Form::OnDemand);
      if (schedule) sampled[k] = sample_streams(*schedule, plan.topology);
    }
    if (Status fit = count_fits(budget, plan, plan.counts[k], sampled[k]); !fit) return fit;
  }
  return Ok{};
}

// An algorithm with switch nodes (innet) needs a fabric with a switch that reduces in the network:
// refused before anything runs, naming the presets that have one. The count does not change how
// many switch nodes there are, so the schedule's estimate says (nothing is made).
Status switches_placeable(const Plan& plan) {
  if (!plan.topology.aggregating_switches().empty()) return Ok{};
  Result<ScheduleSize> size = estimate_schedule(plan.algorithm, plan.base, plan.knobs);
  if (!size || size->participants <= static_cast<std::uint64_t>(plan.base.nranks)) return Ok{};
  return Error{"--topology", plan.topology.name + " has no switch that aggregates, where " + plan.algorithm +
                                 "'s switch nodes run; every preset but ring:N has one (" + topology_presets() +
                                 "), or give a topology file with a switch marked 'aggregates'"};
}

// How far the run of one count has come, while it runs (progress_text).
std::string progress_line(std::uint64_t count, const SimulationProgress& progress) {
  return "collcheck simulate: count " + std::to_string(count) + ": " + progress_text(progress);
}

// What the engine did for one count, and how fast: events and messages per second of wall time.
std::string engine_line(std::uint64_t count, const SimulatedRun& run, double seconds) {
  return std::to_string(count) + ": " + std::to_string(run.events) + " events, " + std::to_string(run.messages) +
         " messages in " + printf_text("%.3f", seconds) + " s: " + millions_per_second(run.events, seconds) +
         " events/s, " + millions_per_second(run.messages, seconds) + " messages/s; messages held at most " +
         format_bytes(run.peak_message_memory);
}

// The bytes every link carried, and the link that was busy longest (none where no byte crossed one).
struct LinkLoads {
  std::uint64_t total = 0;
  std::size_t busiest = 0;
};
LinkLoads link_loads(const SimulatedRun& run) {
  LinkLoads loads;
  for (std::size_t link = 0; link < run.link_busy.size(); ++link) {
    loads.total += run.link_bytes[link];
    if (run.link_busy[link] > run.link_busy[loads.busiest]) loads.busiest = link;
  }
  return loads;
}

// The busiest link's share of the predicted time, in per cent.
double busy_share(const SimulatedRun& run, std::size_t link) {
  return run.time > 0 ? 100 * run.link_busy[link] / run.time : 0;
}

const std::string& vertex_label(const Topology& topology, int vertex) {
  return topology.vertices[static_cast<std::size_t>(vertex)].label;
}

// The link that was busy longest, what it carried, and its share of the predicted time.
std::string busiest_link_line(std::uint64_t count, const SimulatedRun& run, const LinkLoads& loads,
                              const Topology& topology) {
  if (loads.total == 0) return std::to_string(count) + ": no bytes crossed a link";
  const Link& link = topology.links[loads.busiest];
  return std::to_string(count) + ": links carried " + std::to_string(loads.total) + " B; busiest " +
         vertex_label(topology, link.from) + "->" + vertex_label(topology, link.to) + " (" +
         std::string(name(link.kind)) + ") " + std::to_string(run.link_bytes[loads.busiest]) + " B, busy " +
         printf_text("%.1f", busy_share(run, loads.busiest)) + " % of the time";
}

// One count's figures for --json: what the table and the lines under it say, as numbers.
Json count_json(const Case& c, const SimulatedRun& run, double seconds, const bench::Bandwidth& bandwidth,
                const LinkLoads& loads, const Topology& topology) {
  Json entry;
  entry["count"] = c.count;
  entry["bytes"] = algorithm_bytes(c);
  entry["completed"] = run.completed;
  entry["detected"] = run.detected;
  entry["error"] = run.error;
  entry["time_us"] = run.time * 1e6;
  entry["algbw_gbps"] = bandwidth.algbw;
  entry["busbw_gbps"] = bandwidth.busbw;
  entry["wrong"] = nullptr;
  entry["trace"] = hex(run.trace);
  entry["events"] = run.events;
  entry["messages"] = run.messages;
  entry["retransmissions"] = run.retransmissions;
  entry["discarded"] = run.discarded;
  entry["wall_seconds"] = seconds;
  entry["messages_per_second"] = seconds > 0 ? static_cast<double>(run.messages) / seconds : 0;
  entry["peak_message_bytes"] = run.peak_message_memory;
  entry["link_bytes"] = loads.total;
  entry["busiest_link"] = nullptr;
  if (loads.total > 0) {
    const Link& link = topology.links[loads.busiest];
    entry["busiest_link"] = Json{{"from", vertex_label(topology, link.from)},
                                 {"to", vertex_label(topology, link.to)},
                                 {"kind", std::string(name(link.kind))},
                                 {"bytes", run.link_bytes[loads.busiest]},
                                 {"busy_percent", busy_share(run, loads.busiest)}};
  }
  return entry;
}

// What the counts' runs print, gathered as they go.
struct Report {
  TextTable table;
  int status = 0;
  std::string first_wrong;
  std::vector<std::string> injected, engine;
  Json counts = Json::array();  // --json: count_json of each count run
};

// Builds and runs one count, adding its row and lines to `report`; an error is a usage error (a
// run that fails is reported on `err` and sets the status instead).
Status run_count(const Plan& plan, const MemoryBudget& budget, std::uint64_t count, StreamSample sampled,
                 Report& report, std::ostream& err) {
  const Case c = with_count(plan.base, count);
  // A large schedule is made on demand where the algorithm can: the same steps, never all held.
  Result<Schedule> schedule = make_schedule(plan.algorithm, c, plan.knobs, form_for(plan.algorithm, c, plan.knobs));
  if (!schedule) return schedule.error();
  // Checked again with the schedule's stream links and their routes, sampled, before any engine
  // state exists; the messages, which a reliable run may hold more of than estimated, may take
  // what the rest leaves.
  std::uint64_t message_room = 0;
  if (sampled.links == 0) sampled = sample_streams(*schedule, plan.topology);
  if (Status fit = count_fits(budget, plan, count, sampled, &message_room); !fit) return fit;
  // The faults are drawn from the schedule seed: the same command injects the same faults.
  FaultInjector injector(plan.faults, plan.schedule_seed, 60);
  injector.serve_one_thread();
  SimulationOptions options(plan.schedule_seed, &injector, !plan.timing_only);
  options.protocol.reliable = plan.reliable;
  options.message_memory = message_room;
  if (plan.progress_every > 0) {
    options.progress_every = plan.progress_every;
    options.progress = [count, &err](const SimulationProgress& progress) {
      err << progress_line(count, progress) << std::endl;
    };
  }
  const auto began = std::chrono::steady_clock::now();
  const SimulatedRun run = simulate(*schedule, plan.topology, options);
  const std::chrono::duration<double> took = std::chrono::steady_clock::now() - began;
  if (!plan.faults.faults.empty()) report.injected.push_back(std::to_string(count) + ": " + injector.summary());
  report.engine.push_back(engine_line(count, run, took.count()));
  const bench::Bandwidth bandwidth = bench::bandwidth(c, run.time);  // nccl-tests' figures, as bench's
  const LinkLoads loads = link_loads(run);
  report.counts.push_back(count_json(c, run, took.count(), bandwidth, loads, plan.topology));
  Json& entry = report.counts.back();
  if (!plan.faults.faults.empty()) entry["faults_affected"] = injector.summary();
  if (run.out_of_memory) {
    return Error{"--counts " + std::to_string(count),
                 to_string(c) + ": " + run.error + " by the " + budget_text(budget) +
                     "; lower --counts or --ranks, or the fault rate, or raise --memory-limit"};
  }
  if (!run.completed) {
    err << "collcheck simulate: " << to_string(c) << ": " << (run.detected ? "detected: " : "") << run.error << '\n';
    report.status = 1;
    return Ok{};
  }
  report.engine.push_back(busiest_link_line(count, run, loads, plan.topology));
  const std::size_t wrong = plan.timing_only ? 0 : wrong_elements(c, run, report.first_wrong);
  if (wrong > 0) report.status = 1;
  if (!plan.timing_only) entry["wrong"] = wrong;
  report.table.add_row({std::to_string(algorithm_bytes(c)), std::to_string(count), std::string(name(c.dtype)),
                        std::string(name(c.op)), rooted(c.collective) ? std::to_string(c.root) : "-",
                        printf_text("%.2f", run.time * 1e6), printf_text("%.2f", bandwidth.algbw),
                        printf_text("%.2f", bandwidth.busbw), plan.timing_only ? "-" : std::to_string(wrong),
                        hex(run.trace)});
  return Ok{};
}

// --json: the plan, each count's figures (count_json) in the order run, the exit status and, where
// a count was refused as it ran, why (the counts before it are there).
void write_json(std::ofstream& file, const Plan& plan, const Report& report, int status, const std::string& error) {
  const Case& c = plan.base;
  Json json;
  json["command"] = "simulate";
  json["algorithm"] = plan.algorithm;
  json["collective"] = std::string(name(c.collective));
  json["topology"] = plan.topology.name;
  json["ranks"] = c.nranks;
  json["dtype"] = std::string(name(c.dtype));
  json["op"] = std::string(name(c.op));
  json["values"] = std::string(name(c.values));
  json["root"] = rooted(c.collective) ? Json(c.root) : Json(nullptr);
  json["in_place"] = c.in_place;
  json["seed"] = c.seed;
  json["schedule_seed"] = plan.schedule_seed;
  json["chunk"] = plan.knobs.chunk;
  json["channels"] = plan.knobs.channels;
  json["fan_in"] = plan.knobs.fan_in;
  json["faults"] = plan.faults.faults.empty() ? std::string() : to_string(plan.faults);
  json["reliable"] = plan.reliable;
  json["timing_only"] = plan.timing_only;
  json["counts"] = report.counts;
  json["status"] = status;
  json["error"] = error;
  file << json.dump(2) << '\n';
}

}  // namespace

const CommandHelp& simulate_help() {
  static constexpr CommandHelp help{
      "simulate",
      "run an algorithm on the simulated fabric, check it, predict its time",
      kOptions,
      "",
      "LIST: 1,2,8..16; counts take K, M, G (powers of 1024). Fault plans: docs/faults.md; the fabric and\n"
      "its topologies: docs/simulator.md.",
      "collcheck simulate --algorithm ring --ranks 8 --topology dgx-h100 --counts 16,1K,1M"};
  return help;
}

int run_simulate(std::span<const std::string_view> raw, std::ostream& out, std::ostream& err) {
  Result<Arguments> args = Arguments::parse(raw, kOptions);
  if (!args) {
    err << "collcheck simulate: " << args.error().text() << '\n';
    return kUsageError;
  }
  Result<Plan> plan = parse_plan(*args);
  if (!plan) {
    err << "collcheck simulate: " << plan.error().text() << '\n';
    return kUsageError;
  }
  Result<MemoryBudget> budget = memory_budget(*args);
  if (!budget) {
    err << "collcheck simulate: " << budget.error().text() << '\n';
    return kUsageError;
  }
  if (Status placeable = switches_placeable(*plan); !placeable) {
    err << "collcheck simulate: " << placeable.error().text() << '\n';
    return kUsageError;
  }
  std::vector<StreamSample> sampled;
  if (Status fit = counts_fit(*budget, *plan, sampled); !fit) {
    err << "collcheck simulate: " << fit.error().text() << '\n';
    return kUsageError;
  }
  Result<std::unique_ptr<std::ofstream>> json = open_output(*args, "json");
  if (!json) {
    err << "collcheck simulate: " << json.error().text() << '\n';
    return kUsageError;
  }
  out << "# " << plan->algorithm << " " << name(plan->base.collective) << " on " << plan->topology.name << ", "
      << plan->base.nranks << " ranks, " << name(plan->base.dtype) << " " << name(plan->base.op) << ", values "
      << name(plan->base.values) << ", seed " << plan->base.seed << ", schedule seed " << plan->schedule_seed << "\n";
  Report report;
  report.table.add_row(
      {"size(B)", "count", "type", "redop", "root", "time(us)", "algbw(GB/s)", "busbw(GB/s)", "#wrong", "trace"});
  for (std::size_t k = 0; k < plan->counts.size(); ++k) {
    if (Status ran = run_count(*plan, *budget, plan->counts[k], sampled[k], report, err); !ran) {
      err << "collcheck simulate: " << ran.error().text() << '\n';
      if (*json) write_json(**json, *plan, report, kUsageError, ran.error().text());
      return kUsageError;
    }
  }
  if (*json) write_json(**json, *plan, report, report.status, "");
  report.table.print(out);
  if (!report.first_wrong.empty()) out << "first wrong output:\n" << report.first_wrong;
  if (!plan->faults.faults.empty()) {
    out << "# faults " << to_string(plan->faults) << " (drawn from the schedule seed); messages affected per count:\n";
    for (const std::string& line : report.injected) out << "#   " << line << "\n";
  }
  for (const std::string& line : report.engine) out << "# " << line << "\n";
  return report.status;
}

}  // namespace collcheck::cli
