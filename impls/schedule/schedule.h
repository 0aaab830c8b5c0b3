// A collective algorithm as data: for each participant (ranks, then switch nodes), an ordered
// script of steps over element ranges of its input, output and scratch buffers.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "impls/schedule/step_sequence.h"
#include "reference/case.h"
#include "reference/collective.h"
#include "reference/memory.h"
#include "reference/result.h"

namespace collcheck {

enum class BufferKind : std::uint8_t { Input, Output, Scratch };
std::string_view name(BufferKind);

// `count` elements of one buffer of the participant that runs the step, from `offset`. Packed
// into 16 bytes: an offset fits 56 bits, since a buffer holds at most kMaxBufferElements (2^36).
struct Range {
  BufferKind buffer : 8 = BufferKind::Input;
  std::uint64_t offset : 56 = 0;
  std::uint64_t count = 0;

  friend bool operator==(const Range&, const Range&) = default;
};
static_assert(sizeof(Range) == 16);
static_assert(kMaxBufferElements < (std::uint64_t{1} << 55), "a buffer's offsets, guard zone included, fit 56 bits");

// What one step does; ⊕ is the case's reduction op.
//   Send        send `from` to `peer`. Sends are buffered: a send completes when posted.
//   Recv        receive from `peer` into `to`.
//   RecvReduce  to = from ⊕ (what `peer` sent); `from` and `to` may be the same range.
//   Copy        to = from.
//   Reduce      to = to ⊕ from.
// The k-th send from a to b on channel c is received by the k-th Recv or RecvReduce at b
// from a on channel c, and must have the same count.
enum class StepKind : std::uint8_t { Send, Recv, RecvReduce, Copy, Reduce };
std::string_view name(StepKind);

struct Step {
  StepKind kind = StepKind::Copy;
  int peer = -1;  // Send, Recv, RecvReduce: the other participant
  Range from;     // Send, RecvReduce, Copy, Reduce
  Range to;       // Recv, RecvReduce, Copy, Reduce
  int channel = 0;
  // Steps of one stream run in order, streams run concurrently (MSCCL's thread blocks); a step
  // also waits for the steps its participant lists for it (Participant::after, MSCCL's depid).
  int stream = 0;

  bool sends() const { return kind == StepKind::Send; }
  bool receives() const { return kind == StepKind::Recv || kind == StepKind::RecvReduce; }
  bool reads() const { return kind != StepKind::Recv; }
  bool writes() const { return kind != StepKind::Send; }
};
static_assert(sizeof(Step) <= 48, "a schedule at 16,384 ranks holds a billion steps");

// A rank owns input and output buffers of the case's sizes; a switch node (in-network
// aggregation) owns only scratch. Every participant may have scratch.
struct Participant {
  bool is_switch = false;
  std::size_t scratch = 0;  // elements
  std::vector<Step> steps;
  // The earlier steps that step k also waits for; kept beside the steps, not in them, since
  // only a few hand-made schedules have any and a Step stays small.
  std::map<int, std::vector<int>> waits;

  std::span<const int> after(int step) const {
    if (waits.empty()) return {};
    const auto found = waits.find(step);
    return found == waits.end() ? std::span<const int>() : std::span<const int>(found->second);
  }
  void add_after(int step, int earlier) { waits[step].push_back(earlier); }
};

// A participant's steps made on demand, in order (a generator's per-participant form).
using MakeSteps = std::function<StepSequence(int participant)>;

// Splits [0, count) into `parts` ranges whose sizes differ by at most one, the larger first:
// the usual way a generator gives each rank or channel its share of a buffer that nranks
// need not divide.
struct Slice {
  std::size_t offset;
  std::size_t count;
};
Slice slice(std::size_t count, std::size_t parts, std::size_t index);

struct Schedule;

// Where a schedule's blocks differ in length, its cover: the same algorithm on the uniform count at
// which every block is as long as the longest block here. Two kinds are known: the ring all-reduce,
// which cuts its input and output into `parts` parts by slice(), each part into one block per rank
// by slice(), so that blocks differ by an element where the count does not divide (the cover on the
// count rounded up); and pairwise all-to-all-v, whose block for each pair holds that pair's count
// (the cover: pairwise all-to-all on the longest pair's count; `parts` 1). The prover turns the
// cover's rank 0 and cuts it to these blocks to prove by rotation a schedule whose ranks' programs
// differ in length (impls/prove/cover.h).
struct BlockCover {
  std::size_t parts = 0;
  std::function<Schedule()> make;

  explicit operator bool() const { return static_cast<bool>(make); }
};
// The cover's count for `count` elements cut into `parts` parts of `nranks` blocks: every block as
// long as the longest (part 0's block 0), i.e. `count` rounded up to a multiple of parts x nranks.
std::size_t cover_count(std::size_t count, std::size_t parts, std::size_t nranks);

// A participant's steps read in order through one cursor, whichever form the schedule has: the
// stored ones straight from their vector (no coroutine to resume per step), else those its
// StepSequence makes. `next()` moves to the next step and says whether there was one; `step()`
// is that step until the following `next()`.
class StepReader {
 public:
  explicit StepReader(const std::vector<Step>& stored) : stored_(&stored) {}
  explicit StepReader(StepSequence made) : made_(std::move(made)) {}

  bool next() {
    if (stored_ == nullptr) return made_.next();
    if (read_ == stored_->size()) return false;
    ++read_;
    return true;
  }
  const Step& step() const { return stored_ != nullptr ? (*stored_)[read_ - 1] : made_.step(); }
  // The next steps at once, as many as are at hand (every stored one left, or the rest of a
  // batch made), `step()` then the last of them; empty at the end. Valid until the next call.
  std::span<const Step> next_batch() {
    if (stored_ == nullptr) return made_.next_batch();
    const std::span<const Step> rest = std::span<const Step>(*stored_).subspan(read_);
    read_ = stored_->size();
    return rest;
  }

 private:
  const std::vector<Step>* stored_ = nullptr;
  std::size_t read_ = 0;  // of the stored steps
  StepSequence made_;
};

struct Schedule {
  std::string algorithm;                  // `ring`, `tree`, ...
  Case shape;                             // collective, count, nranks, root, in_place (dtype, op, values unused)
  std::vector<Participant> participants;  // ranks 0..nranks-1 first, then switches
  // Set: the schedule is made on demand. Every participant's steps come from make_steps(p), each
  // call a fresh sequence from its first step, and participants[p].steps stay empty (who the
  // participants are, their scratch and waits are still here). Unset: the steps are stored.
  MakeSteps make_steps;
  BlockCover
      cover;  // set where the blocks differ in length and a cover exists (ring all-reduce, pairwise all-to-all-v)

  bool on_demand() const { return static_cast<bool>(make_steps); }
  // Participant p's steps in order, made on demand or read from the stored ones: the one way to
  // read a schedule of either form.
  StepReader steps_of(int participant) const;

  int nranks() const { return shape.nranks; }
  int nparticipants() const { return static_cast<int>(participants.size()); }
  std::size_t buffer_size(int participant, BufferKind) const;

  // Appends a step to participant p and returns it for further setting.
  Step& add(int participant, Step step);
  // Shorthands used by the generators: a send from p to q matched by a receive at q.
  void send_recv(int from, Range source, int to, Range destination, int channel = 0);
  void send_recv_reduce(int from, Range source, int to, Range local, Range destination, int channel = 0);
  void copy(int participant, Range from, Range to, int channel = 0);
  void reduce(int participant, Range from, Range to, int channel = 0);
};

// NCCL's in-place layout (reference/collective.h, in_place_layout) in the schedule's terms:
// which buffer lies inside the other, and where.
struct Alias {
  BufferKind inside;   // the buffer that lies inside the other one
  std::size_t offset;  // where, in elements
};
Alias in_place_alias(const Case& shape, int rank);

// Checks the schedule is well formed: every participant and peer exists, every range lies
// inside its buffer (switches have only scratch), no rank writes its input out of place,
// every send has a matching receive of the same count and vice versa, and `after` names
// earlier steps of existing ones. The error names the participant, step and field. `slack` lets ranges run
// that many elements past the end of a buffer (into an executor's guard zone, where a
// broken schedule's overrun is caught afterwards instead of refused up front).
//
// A schedule made on demand is checked participant by participant, its steps made once: all of
// the above but whether sends and receives match, which its executor checks as it matches them.
Status validate(const Schedule&, std::size_t slack = 0);
// Part of validate(): as many participants as ranks at least, ranks before switches.
Status validate_participants(const Schedule&);
// A participant's buffer sizes in elements, worked out once for a loop over its steps (an
// all-to-all-v's are sums over a row or column of its counts).
struct BufferSizes {
  std::size_t input = 0, output = 0, scratch = 0;

  std::size_t of(BufferKind kind) const {
    return kind == BufferKind::Input ? input : kind == BufferKind::Output ? output : scratch;
  }
};
BufferSizes buffer_sizes(const Schedule&, int participant);
// One step on its own: its peer, the steps it waits for, its ranges (part of validate()); `sizes`
// the participant's buffer_sizes(), or worked out here where not given.
Status validate_step(const Schedule&, int participant, int index, const Step& step, const BufferSizes& sizes,
                     std::size_t slack = 0);
Status validate_step(const Schedule&, int participant, int index, const Step& step, std::size_t slack = 0);
// The same for a batch of consecutive steps, the first of them step `first_index`: the first error,
// or Ok once for all (a loop over steps made by the billion pays no call and no Status per step).
Status validate_steps(const Schedule&, int participant, int first_index, std::span<const Step> steps,
                      const BufferSizes& sizes, std::size_t slack = 0);

// Step `index` of a participant (none past its last): made again from the top when the
// schedule is made on demand, for an error's words.
std::optional<Step> step_at(const Schedule&, int participant, int index);

// The same schedule with every participant's steps stored: a schedule made on demand is made
// once, participant by participant; a stored one is returned as it is.
Schedule stored(Schedule schedule);

std::string describe(const Schedule&, int participant, int step);  // "rank 3 step 7 (send to 4)"
std::string participant_name(const Schedule&, int participant);    // "rank 3", or "switch 0" past the ranks

// The rank whose process runs a participant when every rank is a process of its own (`@proc`,
// `@cuda:mode=processes`): rank p itself; switch s = p - nranks on rank s % nranks.
inline int host_rank(int participant, int nranks) {
  return participant < nranks ? participant : (participant - nranks) % nranks;
}

// How big a schedule will be, estimated from its shape before it is built (impls/algorithms:
// estimate_schedule): an upper bound within a small factor, to refuse what memory cannot hold.
struct ScheduleSize {
  std::uint64_t participants = 0;      // ranks and switches
  std::uint64_t steps = 0;             // over every participant
  std::uint64_t scratch_elements = 0;  // over every participant
  // Distinct (sender, receiver, channel) of its sends, at most: what an engine keeps per stream
  // link (0: not estimated).
  std::uint64_t stream_links = 0;
  // How many runs of contributions a reduced element may hold in a proof (impls/prove/provenance.h):
  // 1 where every partial sum is one run (the ring's ranks in ring order, recursive halving's on a
  // power of two with a stride), else an allowance of 3 (measured: rhd folding extra ranks in holds
  // about 2 on average at 1000 ranks).
  std::uint64_t runs_per_reduced_element = 3;
  // The uniform count of the cover the schedule offers (Schedule::cover), 0 where it offers none.
  std::uint64_t cover_count = 0;
};

// The bytes a schedule of that size holds: its participants, and its steps unless they are made on
// demand (Schedule::make_steps: none held), which the estimate's line then says.
MemoryEstimate schedule_memory(const ScheduleSize&, bool made_on_demand = false);

}  // namespace collcheck
