// The memory budget from --memory-limit or from the machine (/proc/meminfo, the cgroup, the
// address-space limit), and the refusal that names the estimate, the budget and the knobs.
#include "harness/memory_check.h"

#include <sys/resource.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif

#include <algorithm>
#include <charconv>
#include <fstream>
#include <sstream>

#include "impls/prove/proof.h"
#include "impls/prove/symmetry.h"
#include "impls/sim/simulator.h"
#include "reference/counts.h"
#include "reference/inputs.h"

namespace collcheck::cli {
namespace {

// A value this large is no limit (cgroup v1 writes 2^63 rounded down to a page).
constexpr std::uint64_t kNoLimit = std::uint64_t{1} << 60;

std::string read_text(const std::string& path) {
  std::ifstream file(path);
  std::ostringstream text;
  text << file.rdbuf();
  return text.str();
}

std::optional<std::uint64_t> read_number(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
  std::uint64_t value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc{} || end == text.data()) return std::nullopt;
  return value;
}

// The path of this process's cgroup: v2's `0::PATH`, or v1's memory controller `N:memory:PATH`.
std::optional<std::string> cgroup_path(std::string_view cgroups, std::string_view prefix) {
  for (std::string_view rest = cgroups; !rest.empty();) {
    const std::size_t end = std::min(rest.find('\n'), rest.size());
    const std::string_view line = rest.substr(0, end);
    rest.remove_prefix(std::min(end + 1, rest.size()));
    const std::size_t at = line.find(prefix);
    if (at != std::string_view::npos && (at == 0 || line[at - 1] == ':' || prefix.front() == ':')) {
      return std::string(line.substr(at + prefix.size()));
    }
  }
  return std::nullopt;
}

// What the cgroup still allows: its limit less its usage; nothing where there is no limit.
std::optional<std::uint64_t> cgroup_room() {
  const std::string cgroups = read_text("/proc/self/cgroup");
  struct Version {
    std::string_view prefix, directory, limit, usage;
  };
  constexpr Version kVersions[] = {
      {"0::", "/sys/fs/cgroup", "memory.max", "memory.current"},
      {":memory:", "/sys/fs/cgroup/memory", "memory.limit_in_bytes", "memory.usage_in_bytes"}};
  for (const Version& version : kVersions) {
    const std::optional<std::string> path = cgroup_path(cgroups, version.prefix);
    if (!path) continue;
    const std::string directory = std::string(version.directory) + *path + "/";
    const std::optional<std::uint64_t> limit = cgroup_limit(read_text(directory + std::string(version.limit)));
    if (!limit) continue;
    const std::uint64_t usage = read_number(read_text(directory + std::string(version.usage))).value_or(0);
    return *limit > usage ? *limit - usage : 0;
  }
  return std::nullopt;
}

}  // namespace

std::optional<std::uint64_t> meminfo_available(std::string_view meminfo) {
  constexpr std::string_view kKey = "MemAvailable:";
  const std::size_t at = meminfo.find(kKey);
  if (at == std::string_view::npos) return std::nullopt;
  const std::optional<std::uint64_t> kibibytes = read_number(meminfo.substr(at + kKey.size()));
  if (!kibibytes) return std::nullopt;
  return saturating_product(*kibibytes, 1024);
}

std::optional<std::uint64_t> cgroup_limit(std::string_view text) {
  const std::optional<std::uint64_t> value = read_number(text);
  if (!value || *value >= kNoLimit) return std::nullopt;
  return value;
}

MemoryBudget available_memory() {
  MemoryBudget budget;
  auto lower = [&budget](std::optional<std::uint64_t> bytes, std::string_view source) {
    if (bytes && (budget.bytes == 0 || *bytes < budget.bytes))
      budget = MemoryBudget{std::max<std::uint64_t>(*bytes, 1), std::string(source)};
  };
  lower(meminfo_available(read_text("/proc/meminfo")), "MemAvailable");
  lower(cgroup_room(), "cgroup memory.max");
  rlimit address_space{};
  if (getrlimit(RLIMIT_AS, &address_space) == 0 && address_space.rlim_cur != RLIM_INFINITY &&
      address_space.rlim_cur < kNoLimit) {
    lower(address_space.rlim_cur, "ulimit -v");
  }
  return budget;
}

Result<MemoryBudget> memory_budget(const Arguments& args) {
  if (!args.has("memory-limit")) return available_memory();
  Result<std::uint64_t> bytes = parse_count("--memory-limit", args.get("memory-limit"), 0, kNoLimit);
  if (!bytes) return bytes.error();
  return MemoryBudget{*bytes, "--memory-limit"};
}

std::string budget_text(const MemoryBudget& budget) {
  return budget.source == "--memory-limit" ? "the --memory-limit of " + format_bytes(budget.bytes)
                                           : "the " + format_bytes(budget.bytes) + " available (" + budget.source + ")";
}

Status fits(const MemoryEstimate& estimate, const MemoryBudget& budget, std::string_view what, std::string_view knobs) {
  if (budget.bytes == 0 || estimate.total() <= budget.bytes) return Ok{};
  return Error{std::string(what), "needs about " + format_bytes(estimate.total()) + " (" + estimate.describe() +
                                      "), more than " + budget_text(budget) + "; " + std::string(knobs) +
                                      ", or raise --memory-limit"};
}

std::uint64_t room_for_part(const MemoryEstimate& estimate, const MemoryBudget& budget, std::string_view part) {
  if (budget.bytes == 0) return 0;
  const std::uint64_t others = estimate.total() - estimate.part(part);
  return budget.bytes > others ? budget.bytes - others : 1;
}

MemoryEstimate checked_case_memory(const Backend& backend, const Case& c) {
  MemoryEstimate estimate = backend.estimate_memory(c, EstimateFor::CheckedRun);
  estimate.add(oracle_memory(c));
  // A property runs the case again while the first run's results are held, up to three calls
  // back to back (the repeat property), each call's outputs kept.
  const std::uint64_t outputs = saturating_product(saturating_product(output_elements(c), size_of(c.dtype)),
                                                   static_cast<std::uint64_t>(c.nranks));
  estimate.add("second run", saturating_sum(case_buffers(c, 0).total(), saturating_product(outputs, 2)),
               "results held while the case runs again (a property's 3 calls, bench's timed calls)");
  estimate.add("kept inputs", kept_inputs_capacity(c), "generated inputs kept while the case is checked");
  return estimate;
}

std::uint64_t kept_inputs_capacity(const Case& c) {
  constexpr std::uint64_t kMost = std::uint64_t{64} << 20;
  return std::min(saturating_product(input_bytes(c), 3), kMost);
}

std::uint64_t message_room(const Backend& backend, const Case& c, const MemoryBudget& budget) {
  return budget.bytes == 0 ? 0 : room_for_part(checked_case_memory(backend, c), budget, "messages");
}

std::pair<Case, MemoryEstimate> largest_drawn_case(const Backend& backend, const DrawnRanges& ranges) {
  const Capabilities capabilities = backend.capabilities();
  auto allowed = [](const auto& mine, const auto& only, auto value) {
    return std::find(mine.begin(), mine.end(), value) != mine.end() &&
           (only.empty() || std::find(only.begin(), only.end(), value) != only.end());
  };
  Case largest;
  largest.values = ValueKind::Real;
  largest.nranks = std::max(1, std::min(ranges.max_ranks, capabilities.max_ranks));
  bool any_dtype = false;
  for (DType dtype : capabilities.dtypes) {
    if (!allowed(capabilities.dtypes, ranges.dtypes, dtype)) continue;
    if (!any_dtype || size_of(dtype) > size_of(largest.dtype)) largest.dtype = dtype;
    any_dtype = true;
  }
  std::pair<Case, MemoryEstimate> most{largest, {}};
  for (Collective collective : capabilities.collectives) {
    if (!allowed(capabilities.collectives, ranges.collectives, collective)) continue;
    Case c = largest;
    c.collective = collective;
    c.op = reduces(collective) && !capabilities.ops.empty() ? capabilities.ops.front() : RedOp::Sum;
    // As the generator draws it: a collective whose buffers hold a block per rank gets its share.
    const std::size_t blocks = input_elements(collective, 1, c.nranks) + output_elements(collective, 1, c.nranks) - 1;
    c.count = blocks > 1 ? std::max(ranges.min_count, ranges.max_count / blocks) : ranges.max_count;
    MemoryEstimate estimate = checked_case_memory(backend, c);
    if (estimate.total() > most.second.total()) most = {c, std::move(estimate)};
  }
  return most;
}

Status largest_cases_fit(const Arguments& args, const DrawnRanges& ranges,
                         const std::vector<std::unique_ptr<Backend>>& backends, unsigned& jobs, MemoryBudget& share) {
  Result<MemoryBudget> budget = memory_budget(args);
  if (!budget) return budget.error();
  std::uint64_t most = 0;
  for (const auto& backend : backends) {
    const auto [largest, estimate] = largest_drawn_case(*backend, ranges);
    Status fit =
        fits(estimate, *budget, "--count " + args.get("count") + " on --ranks " + args.get("ranks"),
             "lower --count or --ranks (the largest case, " + to_string(largest) + " on " + backend->name() + ")");
    if (!fit) return fit;
    most = std::max(most, estimate.total());
  }
  share = *budget;
  if (budget->bytes == 0 || most == 0) return Ok{};
  jobs = static_cast<unsigned>(std::clamp<std::uint64_t>(budget->bytes / most, 1, std::max(jobs, 1U)));
  share.bytes = budget->bytes / jobs;
  return Ok{};
}

Status case_fits(const MemoryBudget& budget, const Backend& backend, const Case& c) {
  return fits(checked_case_memory(backend, c), budget, to_string(c), "lower n or ranks of the case");
}

Result<MemoryEstimate> simulated_case_memory(std::string_view algorithm, const Case& c, const Knobs& knobs,
                                             bool numeric, bool reliable, StreamSample streams) {
  Result<ScheduleSize> size = estimate_schedule(algorithm, c, knobs);
  if (!size) return size.error();
  // Made on demand (as simulate makes a large one where it can), the steps are never held.
  const bool on_demand = form_for(algorithm, c, knobs) == Form::OnDemand;
  MemoryEstimate estimate = schedule_memory(*size, on_demand);
  SimulationOptions options(0, nullptr, numeric);
  options.protocol.reliable = reliable;
  estimate.add(simulation_memory(c, *size, options, streams.links, on_demand));
  if (streams.links != 0) {
    estimate.add("routes", route_memory(streams.links, streams.route_links),
                 std::to_string(streams.links) + " routes of " + std::to_string(streams.route_links) + " links");
  }
  if (numeric) estimate.add(oracle_memory(c));
  return estimate;
}

namespace {

// Whether the full proof of the schedule runs as it is made, never storing it: made on demand, with one
// stream per participant (a stream per channel; with several the proof stores the steps first).
bool proven_as_made(std::string_view algorithm, const Case& shape, const Knobs& knobs) {
  return has_on_demand_form(algorithm, shape.collective) && knobs.channels <= 1;
}

}  // namespace

Result<MemoryEstimate> proved_shape_memory(std::string_view algorithm, const Case& shape, const Knobs& knobs,
                                           bool rank0_alone, std::uint64_t unit) {
  Result<ScheduleSize> size = estimate_schedule(algorithm, shape, knobs);
  if (!size) return size.error();
  const bool on_demand = has_on_demand_form(algorithm, shape.collective);
  const bool as_made = proven_as_made(algorithm, shape, knobs);
  if (unit > 1) {
    // In units, the proof holds `unit` times fewer elements; a stored schedule is held twice, as it
    // is and in units.
    ScheduleSize narrowed = *size;
    narrowed.scratch_elements /= unit;
    MemoryEstimate estimate = proof_memory(case_in_units(shape, unit), narrowed, as_made);
    if (!on_demand) estimate.add(schedule_memory(*size));
    return estimate;
  }
  if (rank0_alone && !on_demand) return rank0_proof_memory(shape, *size, true);
  if (rank0_alone && per_rank_counts(shape.collective) && !provenance::rank_buffers_alike(shape)) {
    // Ranks unlike but a cover offered (impls/prove/cover.h): rank 0 holds the cover's elements,
    // and the counts are held by the case and the schedule, and by its generator by row and by
    // column in 32 bits.
    if (size->cover_count == 0) return Error{"algorithm", "its schedule offers no cover"};
    MemoryEstimate estimate = rank0_proof_memory(uniform_case(shape, size->cover_count), *size);
    estimate.add("the counts",
                 saturating_product(shape.counts.size(), 2 * sizeof(std::size_t) + 2 * sizeof(std::uint32_t)),
                 std::to_string(shape.counts.size()) + " counts x 24 B");
    return estimate;
  }
  if (rank0_alone) {
    // Where blocks differ in length, through the cover: rank 0 then holds the cover's elements.
    Case held = shape;
    held.count = std::max<std::uint64_t>(held.count, size->cover_count);
    return rank0_proof_memory(held, *size);
  }
  return proof_memory(shape, *size, as_made);
}

Result<MemoryEstimate> proved_in_pieces_memory(std::string_view algorithm, const Case& shape,
                                               const std::optional<Case>& cut, const Knobs& knobs) {
  Result<ScheduleSize> size = estimate_schedule(algorithm, shape, knobs);
  if (!size) return size.error();
  Case in_pieces = cut ? *cut : shape;
  if (!cut) {  // a piece per non-empty block: what cutting the line gives at least
    in_pieces.count = 0;
    for (std::size_t& count : in_pieces.counts) in_pieces.count += count = std::min<std::size_t>(count, 1);
  }
  const bool on_demand = has_on_demand_form(algorithm, shape.collective);
  // Scratch lies on the line too: it shrinks as the line does (rounded up).
  ScheduleSize narrowed = *size;
  const std::uint64_t length = std::max<std::uint64_t>(shape.count, 1);
  narrowed.scratch_elements = (saturating_product(size->scratch_elements, in_pieces.count) + length - 1) / length;
  MemoryEstimate estimate = proof_memory(in_pieces, narrowed, proven_as_made(algorithm, shape, knobs));
  if (!on_demand) estimate.add(schedule_memory(*size));  // held twice, as it is and in pieces
  estimate.add(pieces_line_memory(shape, in_pieces.count));
  // The case's counts again in the schedule made on demand, the copy its schedule in pieces keeps,
  // and the case in pieces (an alltoallv's are n^2).
  estimate.add("the counts, held again", saturating_product(shape.counts.size(), 3 * sizeof(std::size_t)),
               std::to_string(shape.counts.size()) + " counts x 3");
  return estimate;
}

std::optional<Status> in_pieces_fit(std::string_view algorithm, const Case& shape, const Knobs& knobs,
                                    const MemoryBudget& budget, const std::string& what, std::optional<InPieces>& cut,
                                    std::uint64_t& bytes) {
  Result<MemoryEstimate> least = proved_in_pieces_memory(algorithm, shape, std::nullopt, knobs);
  if (!least) return std::nullopt;
  Status least_fit =
      fits(*least, budget, what + " in pieces (a piece per block at least)", "lower --ranks or --counts");
  if (!least_fit) return least_fit;
  Result<Schedule> made = make_schedule(algorithm, shape, knobs, Form::OnDemand);
  cut = made ? in_pieces(*made) : std::nullopt;
  if (!cut) return std::nullopt;
  Result<MemoryEstimate> estimate = proved_in_pieces_memory(algorithm, shape, cut->schedule.shape, knobs);
  if (!estimate) return std::nullopt;
  bytes = estimate->total();
  return fits(*estimate, budget, what + " in pieces", "lower --ranks or --counts");
}

// glibc's heap is the one to tend only where glibc's malloc is the allocator: under AddressSanitizer
// its own allocator serves every malloc, and glibc's heap is never set up; two threads asking
// mallinfo2 about it at once then race its setup (one reads the top chunk before the other has made it).
#if defined(__GLIBC__) && !defined(__SANITIZE_ADDRESS__)
#define COLLCHECK_TENDS_GLIBC_HEAP 1
#endif

void give_back_freed_memory() {
#ifdef COLLCHECK_TENDS_GLIBC_HEAP
  // Trimming walks the heap and advises the kernel page by page: worth it only where much is free.
  constexpr std::size_t kWorthTrimming = std::size_t{16} << 20;
  if (mallinfo2().fordblks >= kWorthTrimming) malloc_trim(0);
#endif
}

void keep_freed_memory() {
#ifdef COLLCHECK_TENDS_GLIBC_HEAP
  constexpr int kKeptAtTheTop = 1 << 30;
  constexpr int kMappedApart = 32 << 20;  // glibc's most for M_MMAP_THRESHOLD on 64-bit
  mallopt(M_TRIM_THRESHOLD, kKeptAtTheTop);
  mallopt(M_MMAP_THRESHOLD, kMappedApart);
#endif
}

std::uint64_t kept_line_bytes(const Case& shape, const InPieces& pieces) {
  return saturating_sum(pieces_line_memory(shape, pieces.pieces).total(),
                        saturating_product(shape.counts.size(), 2 * sizeof(std::size_t)));
}

void CutLines::keep(const std::string& key, InPieces pieces, std::uint64_t bytes, std::uint64_t room) {
  const std::lock_guard<std::mutex> lock(mutex_);
  if (lines_.contains(key) || held_ + bytes > room) return;  // kept already, or its proof cuts it again
  lines_.emplace(key, Kept{std::move(pieces), bytes});
  order_.push_back(key);
  held_ += bytes;
}

std::optional<InPieces> CutLines::take(const std::string& key) {
  const std::lock_guard<std::mutex> lock(mutex_);
  const auto found = lines_.find(key);
  if (found == lines_.end()) return std::nullopt;
  InPieces pieces = std::move(found->second.pieces);
  held_ -= found->second.bytes;
  lines_.erase(found);
  return pieces;
}

void CutLines::hold_at_most(std::uint64_t bytes) {
  const std::lock_guard<std::mutex> lock(mutex_);
  while (held_ > bytes && !order_.empty()) {
    const auto found = lines_.find(order_.back());
    order_.pop_back();
    if (found == lines_.end()) continue;  // taken already
    held_ -= found->second.bytes;
    lines_.erase(found);
  }
}

std::uint64_t CutLines::held() {
  const std::lock_guard<std::mutex> lock(mutex_);
  return held_;
}

}  // namespace collcheck::cli
