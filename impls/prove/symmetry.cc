// Rotation symmetry (symmetry.h): the turning of each buffer is found on rank 1, trying "does
// not turn" and then parts of S/k elements for k = 1..64 (k channels' shares, each of n equal
// blocks), and then every step of every rank is compared with rank 0's turned.
//
// Rotation symmetry. Let rho_r turn rank s into s+r (mod n), an offset of each buffer by the
// buffer's Turning (block b of every part becomes block b+r, element j of a block staying j),
// and a contribution (s, i) into (s+r, i turned as an input offset). find_rotation checks, for
// every rank r and step k, that rank r's step k is rho_r of rank 0's step k: same kind, channel,
// stream and waits, the peer turned, every range turned (a range inside one block, so that its
// image is one range with its elements in the same order). Then rho_1, and so every rho_r, maps
// the schedule onto itself. The run is determinate: a stream's steps run in order, the k-th
// send from a to b on a channel is met by the k-th receive there whatever the interleaving, so
// what every message and element holds, and whether a step ever runs, depend on the schedule
// alone (each rank has one stream, or streams that keep apart, streams_apart: any other is
// proven in full, under the race check). Run the ranks in lockstep rounds (each round every rank runs every step that
// is ready): by induction over the rounds rank r holds rho_r of what rank 0 holds and has run the same steps, and the
// k-th message from rank p to rank 0 on channel c is rho_p of the k-th message from rank 0 to rank -p on c. That is how
// the interpreter runs rank 0 alone: a receive from p takes rank 0's own sends to -p, turned by p, and is ready exactly
// when that send has run. So rank 0 reads an undefined element, combines a contribution twice or waits forever exactly
// when every rank does, and rank r's outputs are rho_r of rank 0's. The last link is not assumed but checked
// (outputs_turn): for every rank r and output element i, what the collective requires of rank r's element T_r(i) is
// rho_r of what it requires of rank 0's i; where it is not, rank r's outputs, rank 0's turned, are wrong, and the
// proof fails saying so. Where a check of the steps fails, every rank runs (the full proof).
#include "impls/prove/symmetry.h"

#include <algorithm>
#include <atomic>
#include <limits>
#include <string>
#include <tuple>
#include <vector>

#include "impls/prove/expected.h"
#include "reference/shared_indices.h"

namespace collcheck::provenance {

std::uint64_t Turning::offset(std::uint64_t offset, std::uint32_t by, std::uint32_t nranks) const {
  if (part == 0) return offset;
  const std::uint64_t base = offset / part * part, within = offset % part;
  return base + (within / block + by) % nranks * block + within % block;
}

std::uint64_t Turning::stretch(std::uint64_t offset) const {
  if (part == 0) return std::numeric_limits<std::uint64_t>::max();
  return block - offset % part % block;
}

std::optional<Range> Turning::range(const Range& range, std::uint32_t by, std::uint32_t nranks) const {
  Range turned = range;
  if (part == 0 || range.count == 0) return turned;  // an empty range's offset is never used
  const std::uint64_t within = range.offset % part;
  if (within / block != (within + range.count - 1) / block) return std::nullopt;
  turned.offset = offset(range.offset, by, nranks);
  return turned;
}

Run Rotation::contributions(const Run& run, std::uint32_t by, std::uint32_t nranks) const {
  return make_run(of(BufferKind::Input).offset(run.index, by, nranks),
                  static_cast<std::uint32_t>((std::uint64_t{run.first} + by) % nranks), run.count, nranks,
                  static_cast<std::uint32_t>(run.stride));
}

void Rotation::turn(Element& element, std::uint32_t by, std::uint32_t nranks) const {
  const std::span<const Run> runs = element.runs();
  if (runs.size() == 1) return element.assign_single(contributions(runs[0], by, nranks));
  std::vector<Run> turned;
  turned.reserve(runs.size());
  for (const Run& run : runs) turned.push_back(contributions(run, by, nranks));
  if (!turned.empty()) element.assign(std::move(turned));
}

namespace {

bool same_range(const Range& mine, const Range& rank0, const Turning& turning, std::uint32_t by, std::uint32_t n) {
  if (mine.count == 0 && rank0.count == 0) return mine.buffer == rank0.buffer;
  const std::optional<Range> turned = turning.range(rank0, by, n);
  return turned && *turned == mine;
}

// Whether `step` is `model` (rank 0's) turned by `by`, looking at the ranges of `only` (all
// buffers where it is empty).
bool turns_into(const Step& step, const Step& model, std::uint32_t by, std::uint32_t n, const Rotation& rotation,
                std::optional<BufferKind> only) {
  if (step.kind != model.kind || step.channel != model.channel || step.stream != model.stream) return false;
  if ((step.sends() || step.receives()) &&
      static_cast<std::uint32_t>(step.peer) != (static_cast<std::uint32_t>(model.peer) + by) % n) {
    return false;
  }
  for (const auto& [range, model_range] : {std::pair{&step.from, &model.from}, std::pair{&step.to, &model.to}}) {
    if (only && range->buffer != *only) continue;
    if (!same_range(*range, *model_range, rotation.of(range->buffer), by, n)) return false;
  }
  return true;
}

// Whether participant r's steps (stored, or made on demand) are `rank0` turned by r.
bool turns_into(const Schedule& s, int r, std::span<const Step> rank0, const Rotation& rotation,
                std::optional<BufferKind> only) {
  const auto n = static_cast<std::uint32_t>(s.nranks());
  const auto by = static_cast<std::uint32_t>(r);
  const Participant& mine = s.participants[static_cast<std::size_t>(r)];
  if (mine.waits != s.participants.front().waits || mine.scratch != s.participants.front().scratch) return false;
  if (!s.on_demand()) {
    if (mine.steps.size() != rank0.size()) return false;
    for (std::size_t k = 0; k < rank0.size(); ++k) {
      if (!turns_into(mine.steps[k], rank0[k], by, n, rotation, only)) return false;
    }
    return true;
  }
  std::size_t k = 0;
  for (StepReader steps = s.steps_of(r); steps.next(); ++k) {
    if (k == rank0.size() || !turns_into(steps.step(), rank0[k], by, n, rotation, only)) return false;
  }
  return k == rank0.size();
}

// Rank 0's step with its ranges taken apart once for a rotation (which part, block and element of
// the block each starts at), so that turning it by r for every rank costs no division.
struct PreparedRange {
  Range range;
  bool turns = false;      // the buffer turns and the range is not empty
  bool straddles = false;  // it crosses a block's end: no turned image
  std::uint64_t part_start = 0, within_block = 0, block = 0;
  std::uint32_t block_index = 0;

  PreparedRange(const Range& model, const Turning& turning, std::uint32_t nranks) : range(model) {
    if (turning.part == 0 || model.count == 0) return;
    turns = true;
    const std::uint64_t within = model.offset % turning.part;
    straddles = within / turning.block != (within + model.count - 1) / turning.block;
    part_start = model.offset - within;
    block_index = static_cast<std::uint32_t>(within / turning.block % nranks);
    within_block = within % turning.block;
    block = turning.block;
  }

  // Whether `mine` is this range turned by `by` (0 < by < nranks).
  bool turns_into(const Range& mine, std::uint32_t by, std::uint32_t nranks) const {
    if (mine.count == 0 && range.count == 0) return mine.buffer == range.buffer;
    if (!turns) return mine == range;
    if (straddles || mine.buffer != range.buffer || mine.count != range.count) return false;
    std::uint32_t turned = block_index + by;
    if (turned >= nranks) turned -= nranks;
    return mine.offset == part_start + turned * block + within_block;
  }
};

struct PreparedStep {
  const Step* model;
  PreparedRange from, to;

  PreparedStep(const Step& step, const Rotation& rotation, std::uint32_t nranks)
      : model(&step), from(step.from, rotation.of(step.from.buffer), nranks),
        to(step.to, rotation.of(step.to.buffer), nranks) {}

  bool turns_into(const Step& step, std::uint32_t by, std::uint32_t n) const {
    if (step.kind != model->kind || step.channel != model->channel || step.stream != model->stream) return false;
    if (step.sends() || step.receives()) {
      std::uint32_t peer = static_cast<std::uint32_t>(model->peer) + by;
      if (peer >= n) peer -= n;
      if (static_cast<std::uint32_t>(step.peer) != peer) return false;
    }
    return from.turns_into(step.from, by, n) && to.turns_into(step.to, by, n);
  }
};

// Whether participant r's steps (stored, or made on demand) are rank 0's prepared steps turned by r.
bool turns_into(const Schedule& s, int r, const std::vector<PreparedStep>& rank0) {
  const auto n = static_cast<std::uint32_t>(s.nranks());
  const auto by = static_cast<std::uint32_t>(r);
  const Participant& mine = s.participants[static_cast<std::size_t>(r)];
  if (mine.waits != s.participants.front().waits || mine.scratch != s.participants.front().scratch) return false;
  std::size_t k = 0;
  for (StepReader steps = s.steps_of(r); steps.next(); ++k) {
    if (k == rank0.size() || !rank0[k].turns_into(steps.step(), by, n)) return false;
  }
  return k == rank0.size();
}

// Whether ranks 1..n-1 are rank 0's prepared steps turned, compared on `threads` threads in batches
// of ranks (share_indices); the first rank found not turned stops them all.
bool every_rank_turns(const Schedule& s, const std::vector<PreparedStep>& prepared, unsigned threads) {
  constexpr std::size_t kRanksPerBatch = 16;
  const auto others = static_cast<std::size_t>(s.nranks() - 1);
  std::atomic<bool> turned{true};
  share_indices((others + kRanksPerBatch - 1) / kRanksPerBatch, threads, [&](std::size_t batch, std::size_t) {
    const std::size_t first = 1 + batch * kRanksPerBatch;
    for (std::size_t r = first; r < std::min(first + kRanksPerBatch, others + 1) && turned.load(); ++r) {
      if (!turns_into(s, static_cast<int>(r), prepared)) turned = false;
    }
    return turned.load();
  });
  return turned;
}

// What find_rotation requires before it compares steps.
bool could_be_symmetric(const Schedule& s) {
  const int n = s.nranks();
  if (n < 2 || s.nparticipants() != n) return false;
  for (int r = 0; r < n; ++r) {
    if (s.participants[static_cast<std::size_t>(r)].is_switch) return false;
    for (BufferKind kind : {BufferKind::Input, BufferKind::Output, BufferKind::Scratch}) {
      if (s.buffer_size(r, kind) != s.buffer_size(0, kind)) return false;
    }
    if (s.shape.in_place && in_place_alias(s.shape, r).offset != 0) return false;
  }
  return true;
}

}  // namespace

std::optional<Rotation> find_rotation(const Schedule& s) {
  if (s.participants.empty()) return std::nullopt;
  return find_rotation(s, s.participants.front().steps);
}

std::optional<Rotation> find_rotation(const Schedule& s, std::span<const Step> rank0, unsigned threads) {
  if (!could_be_symmetric(s)) return std::nullopt;
  const auto n = static_cast<std::uint64_t>(s.nranks());
  Rotation rotation;
  for (BufferKind kind : {BufferKind::Input, BufferKind::Output, BufferKind::Scratch}) {
    const std::uint64_t size = s.buffer_size(0, kind);
    bool found = false;
    for (std::uint64_t parts = 0; parts <= 64 && !found; ++parts) {  // 0: the buffer does not turn
      if (parts > 0 && (size % parts != 0 || size / parts % n != 0 || size == 0)) continue;
      Turning& turning = rotation.buffers[static_cast<std::size_t>(kind)];
      turning = parts == 0 ? Turning{} : Turning{size / parts, size / parts / n};
      found = turns_into(s, 1, rank0, rotation, kind);
    }
    if (!found) return std::nullopt;
  }
  // In place the input is the output: both must turn alike.
  if (s.shape.in_place && (rotation.of(BufferKind::Input).part != rotation.of(BufferKind::Output).part)) {
    return std::nullopt;
  }
  std::vector<PreparedStep> prepared;
  prepared.reserve(rank0.size());
  for (const Step& step : rank0) prepared.emplace_back(step, rotation, static_cast<std::uint32_t>(n));
  if (!every_rank_turns(s, prepared, threads)) return std::nullopt;
  return rotation;
}

namespace {

// An interval of elements one stream touches (or writes), in the storage after in-place aliasing.
struct Touch {
  BufferKind storage;
  std::uint64_t begin, end;
  int stream;
  bool writes;
};

// Where a range of rank 0 lies once the input is aliased into the output (or the output into
// the input) in place; out of place the input is never written, so its reads are left out.
std::optional<Touch> touch(const Schedule& s, int p, const Range& range, int stream, bool writes) {
  if (range.count == 0) return std::nullopt;
  Touch where{range.buffer, range.offset, range.offset + range.count, stream, writes};
  if (range.buffer == BufferKind::Scratch) return where;
  if (!s.shape.in_place) return range.buffer == BufferKind::Input ? std::nullopt : std::optional<Touch>(where);
  const Alias alias = in_place_alias(s.shape, p);
  if (range.buffer == alias.inside) {
    where.storage = alias.inside == BufferKind::Input ? BufferKind::Output : BufferKind::Input;
    where.begin += alias.offset;
    where.end += alias.offset;
  }
  return where;
}

// Each stream's touched and written intervals, merged (so that within one kind of one stream they
// are apart).
std::vector<Touch> merged_touches(const Schedule& s, int p, std::span<const Step> steps) {
  std::vector<Touch> all;
  for (const Step& step : steps) {
    if (step.reads()) {
      if (const std::optional<Touch> read = touch(s, p, step.from, step.stream, false)) all.push_back(*read);
    }
    if (!step.writes()) continue;
    if (const std::optional<Touch> written = touch(s, p, step.to, step.stream, true)) {
      all.push_back(*written);  // written, and touched as well
      all.push_back(Touch{written->storage, written->begin, written->end, written->stream, false});
    }
  }
  const auto key = [](const Touch& t) { return std::tuple(t.storage, t.stream, t.writes, t.begin); };
  std::sort(all.begin(), all.end(), [&](const Touch& a, const Touch& b) { return key(a) < key(b); });
  std::vector<Touch> merged;
  for (const Touch& t : all) {
    Touch* last = merged.empty() ? nullptr : &merged.back();
    if (last != nullptr && last->storage == t.storage && last->stream == t.stream && last->writes == t.writes &&
        t.begin <= last->end) {
      last->end = std::max(last->end, t.end);
    } else {
      merged.push_back(t);
    }
  }
  return merged;
}

}  // namespace

bool streams_apart(const Schedule& s, std::span<const Step> steps, int participant) {
  std::vector<Touch> touches = merged_touches(s, participant, steps);
  std::sort(touches.begin(), touches.end(),
            [](const Touch& a, const Touch& b) { return std::tie(a.storage, a.begin) < std::tie(b.storage, b.begin); });
  // Swept in order of start: the intervals still open are at most two per stream (its merged
  // touches and writes are each apart), and a new one meets each of them.
  std::vector<Touch> open;
  for (const Touch& t : touches) {
    std::erase_if(open, [&](const Touch& o) { return o.storage != t.storage || o.end <= t.begin; });
    for (const Touch& o : open) {
      if (o.stream != t.stream && (o.writes || t.writes)) return false;
    }
    open.push_back(t);
  }
  return true;
}

std::optional<std::string> outputs_turn(const Schedule& s, const Rotation& rotation) {
  // An all-reduce requires of every rank's element i every rank's input i, once: rank r's element
  // T(i) needs input T(i), and rank 0's element i's need turned is input T_in(i), the same where the
  // input and the output turn alike. That equality is what the check below would find element by
  // element, n x count times.
  if (s.shape.collective == Collective::AllReduce &&
      rotation.of(BufferKind::Input) == rotation.of(BufferKind::Output)) {
    return std::nullopt;
  }
  const auto n = static_cast<std::uint32_t>(s.nranks());
  const Turning& output = rotation.of(BufferKind::Output);
  const VectorBlocks blocks0 = vector_blocks(s.shape, 0);
  const std::size_t size = s.buffer_size(0, BufferKind::Output);
  for (std::uint32_t by = 1; by < n; ++by) {
    const VectorBlocks blocks = vector_blocks(s.shape, static_cast<int>(by));
    for (std::size_t i = 0, stretch = 1; i < size; i += stretch) {
      const std::size_t turned = output.offset(i, by, n);
      const Run rank0 = wanted(s.shape, 0, i, blocks0);
      stretch = std::min({wanted_stretch(s.shape, i, size, blocks0), wanted_stretch(s.shape, turned, size, blocks),
                          output.stretch(i), rotation.of(BufferKind::Input).stretch(rank0.index)});
      if (wanted(s.shape, static_cast<int>(by), turned, blocks) == rotation.contributions(rank0, by, n)) continue;
      return "rank " + std::to_string(by) + "'s program is rank 0's turned, but " +
             std::string(name(s.shape.collective)) + " does not require its output element " + std::to_string(turned) +
             " to hold rank 0's element " + std::to_string(i) + " turned";
    }
  }
  return std::nullopt;
}

}  // namespace collcheck::provenance
