// The memory a command may spend (--memory-limit, else what the machine has available) and the
// refusal, before anything is allocated, of a run estimated to need more (docs/reliability.md).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "harness/arguments.h"
#include "impls/algorithms/algorithms.h"
#include "impls/backend/backend.h"
#include "impls/prove/proof.h"
#include "impls/sim/simulator.h"
#include "reference/memory.h"

namespace collcheck::cli {

// The row of --memory-limit in the option table of every command that runs cases.
inline constexpr Option kMemoryLimitOption{
    "memory-limit", "SIZE", "",
    "refuse runs estimated to need more memory (512M, 64G; 0: no limit); default: what is available"};

struct MemoryBudget {
  std::uint64_t bytes = 0;  // 0: no limit
  std::string source;       // where it comes from: --memory-limit, MemAvailable, cgroup memory.max, ulimit -v
};

// The least of /proc/meminfo's MemAvailable, the cgroup's limit less its usage (v2 memory.max,
// v1 memory.limit_in_bytes) and the address-space limit (ulimit -v); none readable: no limit.
MemoryBudget available_memory();

// MemAvailable of a /proc/meminfo text, in bytes; nothing where absent.
std::optional<std::uint64_t> meminfo_available(std::string_view meminfo);
// A cgroup limit file's value in bytes; nothing for `max` or a value too large to be a limit.
std::optional<std::uint64_t> cgroup_limit(std::string_view text);

// --memory-limit SIZE (K, M, G suffixes; 0: no limit) when given, else available_memory().
Result<MemoryBudget> memory_budget(const Arguments& args);

// "the --memory-limit of 4.0 GiB", "the 23.1 GiB available (MemAvailable)".
std::string budget_text(const MemoryBudget&);

// Ok when `estimate` fits the budget; otherwise an error on `what` (a case, a request) that gives
// the estimate part by part, the budget and where it comes from, and `knobs`, what to change
// ("lower n or ranks of the case"): "needs about 72.0 GiB (buffers ...; schedule ...), more than the
// 23.1 GiB available (MemAvailable); lower n of the case, or raise --memory-limit".
Status fits(const MemoryEstimate& estimate, const MemoryBudget& budget, std::string_view what, std::string_view knobs);

// What the budget leaves to one part of an estimate that fits it: the budget less every other part
// (0 where there is no limit). A run whose part can outgrow its estimate (the simulator's messages,
// SimulationOptions::message_memory) stops at this instead of being killed for memory.
std::uint64_t room_for_part(const MemoryEstimate& estimate, const MemoryBudget& budget, std::string_view part);

// What checking one case on a backend holds at once: the backend's run, the oracle's expected
// outputs, the first run's results while a property runs the case again, and the inputs kept.
MemoryEstimate checked_case_memory(const Backend& backend, const Case& c);
// The capacity of the InputMemo that checking `c` keeps its generated inputs in (reference/inputs.h):
// three cases' worth, the case's own and the next two calls' of the repeat property, but at most
// 64 MiB (a large case's inputs cost more memory than making them again costs time).
std::uint64_t kept_inputs_capacity(const Case& c);
// What the budget leaves a run of `c` on `backend` for its messages, after the rest of the
// checked case's estimate (RunOptions::message_memory, which `sim` backends heed); 0: no budget.
std::uint64_t message_room(const Backend& backend, const Case& c, const MemoryBudget& budget);

// The ranges `check` draws cases from, as far as memory goes.
struct DrawnRanges {
  std::vector<Collective> collectives;  // empty: every one the backend has
  std::vector<DType> dtypes;            // empty: every one
  int max_ranks = 1;
  std::size_t min_count = 0, max_count = 0;
};
// The case of those ranges that needs the most memory on the backend (the most ranks, the largest
// count its collective draws, the widest dtype, real values, out of place), and what it needs.
std::pair<Case, MemoryEstimate> largest_drawn_case(const Backend& backend, const DrawnRanges& ranges);
// `check`: refuses ranges whose largest case no backend's run could hold in the budget, before any
// case runs; then lowers `jobs` (cases run at once, one a thread) to as many as the budget holds
// of that largest case, and sets `share` to each one's part of the budget.
Status largest_cases_fit(const Arguments& args, const DrawnRanges& ranges,
                         const std::vector<std::unique_ptr<Backend>>& backends, unsigned& jobs, MemoryBudget& share);
// `replay`: refuses a case the backend's run could not hold in the budget, before it runs.
Status case_fits(const MemoryBudget& budget, const Backend& backend, const Case& c);

// What `simulate` holds for one count: the schedule, the simulation (without guard zones, its
// link protocol reliable or not; `streams` its stream links and their routes once known, from
// sample_streams: the routes are counted then) and, when numeric, the oracle. What `prove` holds
// for one shape: the schedule and the proof state.
Result<MemoryEstimate> simulated_case_memory(std::string_view algorithm, const Case& c, const Knobs& knobs,
                                             bool numeric = true, bool reliable = false, StreamSample streams = {});
// `rank0_alone`: the proof on rank 0 alone of a schedule that turns out symmetric. `unit`: the
// proof of every rank of the schedule in units of that many elements (impls/prove: in_units).
Result<MemoryEstimate> proved_shape_memory(std::string_view algorithm, const Case& shape, const Knobs& knobs,
                                           bool rank0_alone = false, std::uint64_t unit = 1);
// The proof of every rank of the schedule in pieces (impls/prove: in_pieces), `in_pieces` being its
// case with the line's pieces for elements; the line's cuts included. Without it, what such a proof
// holds at least, with a piece per non-empty block (before the line is cut).
Result<MemoryEstimate> proved_in_pieces_memory(std::string_view algorithm, const Case& shape,
                                               const std::optional<Case>& in_pieces, const Knobs& knobs);

// Whether the proof in pieces of `shape` fits: first with a piece per block at least (before any
// schedule is made; the refusal says so), then with its line cut (the schedule made on demand, every
// step once), the schedule in pieces then given in `cut` and its estimate in `bytes`. Nothing where
// it cannot be proven in pieces. `what`: the shape in words, for a refusal.
std::optional<Status> in_pieces_fit(std::string_view algorithm, const Case& shape, const Knobs& knobs,
                                    const MemoryBudget& budget, const std::string& what, std::optional<InPieces>& cut,
                                    std::uint64_t& bytes);

// Gives the memory freed so far back to the system (glibc's malloc_trim; nothing elsewhere, nor
// under AddressSanitizer, whose allocator keeps its own heap). A run that frees large blocks and
// then makes others of other sizes would otherwise keep the freed ones resident in the
// allocator's heap, where a larger block cannot reuse a smaller one's room: the
// proofs of a sweep, each estimated at 70 MB, stood at 101 MB resident one after the other (81 MB
// trimmed after each). Only where 16 MiB or more lie free in the heap: trimming costs a few
// hundred microseconds, a sweep's small proofs less. Called between such runs, not per allocation.
void give_back_freed_memory();
// The other way round, for a command that frees and makes blocks of the same sizes again and again
// (check: every run of every case its buffers, inputs and outputs): glibc's heap keeps what is
// freed, up to 1 GiB at its top, and only blocks of 32 MiB and more are mapped apart (and handed
// back when freed). Handed back, a page is cleared by the kernel when it comes back: a sixth of
// check's time went to those faults. The resident set then stays near its peak, which the estimates
// bound. Called once, before the command runs anything.
void keep_freed_memory();

// What the line of a proof in pieces holds while it waits for its proof: its cuts and the case's
// counts held again (by the schedule in pieces and its case).
std::uint64_t kept_line_bytes(const Case& shape, const InPieces& pieces);

// The lines a sweep's proofs in pieces were cut along when their memory was checked, kept for their
// proofs (cutting one again costs about a tenth of its proof) as far as memory allows: a line is
// kept only where all those kept fit in `room` (what the largest proof so far leaves of the
// budget), the sweep lets go of those kept last once it knows how much its proofs at once leave
// (hold_at_most), and a proof whose line is gone cuts it again. Thread-safe.
class CutLines {
 public:
  void keep(const std::string& key, InPieces pieces, std::uint64_t bytes, std::uint64_t room);
  std::optional<InPieces> take(const std::string& key);
  void hold_at_most(std::uint64_t bytes);
  std::uint64_t held();

 private:
  struct Kept {
    InPieces pieces;
    std::uint64_t bytes = 0;
  };
  std::mutex mutex_;
  std::map<std::string, Kept> lines_;
  std::vector<std::string> order_;  // the keys, in the order kept
  std::uint64_t held_ = 0;
};

}  // namespace collcheck::cli
