// Symmetry of a schedule (symmetry.h) works as follows. The turning of each buffer is found on
// rank 1, trying "does not turn" and then parts of S/k elements for k = 1..64 (k channels' shares,
// each of n equal blocks), by rotation and then, where n is a power of two, by XOR; then every
// step of every rank is compared with rank 0's turned.
//
// The turns. Let g be a rotation (rank s becomes s+r mod n) or an XOR (s becomes s XOR r); both
// are groups acting on the ranks, and rank r is the image of rank 0 under exactly one member,
// rho_r. rho_r turns an offset of each buffer by the buffer's Turning (block b of every part
// becomes block b turned by r, element j of a block staying j), and a contribution (s, i) into
// (s turned by r, i turned as an input offset). find_symmetry checks, for every rank r and step
// k, that rank r's step k is rho_r of rank 0's step k: same kind, channel, stream and waits, the
// peer turned, every range turned. A range's image must be a range: one inside one block is, with
// its elements in order; by XOR so are 2^k whole blocks from a multiple of 2^k, whose blocks are
// then taken in another order (block b of the range read at place b XOR (r mod 2^k)), the same
// for every range of that many blocks of that length (Turning::order). A step that moves elements
// from one range to another therefore turns element by element only where both take the same
// order: checked for every local step here, and for every message as the proof matches its send
// with its receive (a message turns with its sender's order, proof.cc). Then every rho_r maps the
// schedule onto itself, element by element. The run is determinate: a stream's steps run in order, the k-th
// send from a to b on a channel is met by the k-th receive there whatever the interleaving, so
// what every message and element holds, and whether a step ever runs, depend on the schedule
// alone (each rank has one stream, or streams that keep apart, streams_apart: any other is
// proven in full, under the race check). Run the ranks in lockstep rounds (each round every rank runs every step that
// is ready): by induction over the rounds rank r holds rho_r of what rank 0 holds and has run the same steps, and the
// k-th message from rank p to rank 0 on channel c is rho_p of the k-th message from rank 0 to the rank that rho_p turns
// into 0 (-p by rotation, p by XOR) on c. That is how the interpreter runs rank 0 alone: a receive from p takes rank
// 0's own sends to that rank, turned by p, and is ready exactly when that send has run. So rank 0 reads an undefined
// element, combines a contribution twice or waits forever exactly when every rank does, and rank r's outputs are rho_r
// of rank 0's. The last link is not assumed but checked
// (outputs_turn): for every rank r and output element i, what the collective requires of rank r's element T_r(i) is
// rho_r of what it requires of rank 0's i; where it is not, rank r's outputs, rank 0's turned, are wrong, and the
// proof fails saying so. Where a check of the steps fails, every rank runs (the full proof).
#include "impls/prove/symmetry.h"

#include <algorithm>
#include <atomic>
#include <functional>
#include <limits>
#include <string>
#include <tuple>
#include <vector>

#include "impls/prove/expected.h"
#include "reference/counts.h"
#include "reference/shared_indices.h"

namespace collcheck::provenance {

namespace {

bool same_range(const Range& mine, const Range& rank0, const Turning& turning, std::uint32_t by, std::uint32_t n) {
  if (mine.count == 0 && rank0.count == 0) return mine.buffer == rank0.buffer;
  const std::optional<Range> turned = turning.range(rank0, by, n);
  return turned && *turned == mine;
}

// Whether `step` is `model` (rank 0's) turned by `by`, looking at the ranges of `only` (all
// buffers where it is empty).
bool turns_into(const Step& step, const Step& model, std::uint32_t by, std::uint32_t n, const Symmetry& symmetry,
                std::optional<BufferKind> only) {
  if (step.kind != model.kind || step.channel != model.channel || step.stream != model.stream) return false;
  if ((step.sends() || step.receives()) &&
      static_cast<std::uint32_t>(step.peer) !=
          turned_rank(symmetry.turn, static_cast<std::uint32_t>(model.peer), by, n)) {
    return false;
  }
  for (const auto& [range, model_range] : {std::pair{&step.from, &model.from}, std::pair{&step.to, &model.to}}) {
    if (only && range->buffer != *only) continue;
    if (!same_range(*range, *model_range, symmetry.of(range->buffer), by, n)) return false;
  }
  return true;
}

// Whether participant r's steps (stored, or made on demand) are `rank0` turned by r.
bool turns_into(const Schedule& s, int r, std::span<const Step> rank0, const Symmetry& symmetry,
                std::optional<BufferKind> only) {
  const auto n = static_cast<std::uint32_t>(s.nranks());
  const auto by = static_cast<std::uint32_t>(r);
  const Participant& mine = s.participants[static_cast<std::size_t>(r)];
  if (mine.waits != s.participants.front().waits || mine.scratch != s.participants.front().scratch) return false;
  if (!s.on_demand()) {
    if (mine.steps.size() != rank0.size()) return false;
    for (std::size_t k = 0; k < rank0.size(); ++k) {
      if (!turns_into(mine.steps[k], rank0[k], by, n, symmetry, only)) return false;
    }
    return true;
  }
  std::size_t k = 0;
  for (StepReader steps = s.steps_of(r); steps.next(); ++k) {
    if (k == rank0.size() || !turns_into(steps.step(), rank0[k], by, n, symmetry, only)) return false;
  }
  return k == rank0.size();
}

// Rank 0's step with its ranges taken apart once for a symmetry (which part, block and element of
// the block each starts at), so that turning it by r for every rank costs no division.
struct PreparedRange {
  Range range;
  bool turns = false;      // the buffer turns and the range is not empty
  bool straddles = false;  // no turned image (Turning::range)
  std::uint64_t part_start = 0, within_block = 0, block = 0;
  std::uint32_t block_index = 0;
  std::uint32_t aligned = ~std::uint32_t{0};  // by XOR, a range of 2^k whole blocks: ~(2^k - 1)

  PreparedRange(const Range& model, const Turning& turning, std::uint32_t nranks) : range(model) {
    if (turning.part == 0 || model.count == 0) return;
    turns = true;
    const std::uint64_t within = model.offset % turning.part;
    straddles = !turning.range(model, 0, nranks);
    part_start = model.offset - within;
    block_index = static_cast<std::uint32_t>(within / turning.block % nranks);
    within_block = within % turning.block;
    block = turning.block;
    if (model.count > block) aligned = ~static_cast<std::uint32_t>(model.count / block - 1);
  }

  // Whether `mine` is this range turned by `by` (0 < by < nranks), the turn a template parameter so
  // that the rotation's comparison, the ring's hot loop, has no test of it.
  template <Turn kTurn>
  bool turns_into(const Range& mine, std::uint32_t by, std::uint32_t nranks) const {
    if (mine.count == 0 && range.count == 0) return mine.buffer == range.buffer;
    if (!turns) return mine == range;
    if (straddles || mine.buffer != range.buffer || mine.count != range.count) return false;
    std::uint32_t turned = turned_rank(kTurn, block_index, by, nranks);
    if constexpr (kTurn == Turn::Xor) turned &= aligned;
    return mine.offset == part_start + turned * block + within_block;
  }
};

struct PreparedStep {
  const Step* model;
  PreparedRange from, to;

  PreparedStep(const Step& step, const Symmetry& symmetry, std::uint32_t nranks)
      : model(&step), from(step.from, symmetry.of(step.from.buffer), nranks),
        to(step.to, symmetry.of(step.to.buffer), nranks) {}

  template <Turn kTurn>
  bool turns_into(const Step& step, std::uint32_t by, std::uint32_t n) const {
    if (step.kind != model->kind || step.channel != model->channel || step.stream != model->stream) return false;
    if ((step.sends() || step.receives()) &&
        static_cast<std::uint32_t>(step.peer) != turned_rank(kTurn, static_cast<std::uint32_t>(model->peer), by, n)) {
      return false;
    }
    return from.turns_into<kTurn>(step.from, by, n) && to.turns_into<kTurn>(step.to, by, n);
  }
};

// One rank's steps as they are read side by side with other ranks': the batch at hand not yet
// compared.
struct RankReader {
  StepReader steps;
  std::span<const Step> pending;

  // Whether its next steps are rank 0's [begin, end) turned by `by`.
  template <Turn kTurn>
  bool turn(const std::vector<PreparedStep>& rank0, std::size_t begin, std::size_t end, std::uint32_t by,
            std::uint32_t n) {
    for (std::size_t k = begin; k < end;) {
      if (pending.empty()) pending = steps.next_batch();
      if (pending.empty()) return false;  // fewer steps than rank 0
      const std::size_t take = std::min(pending.size(), end - k);
      for (std::size_t j = 0; j < take; ++j) {
        if (!rank0[k + j].turns_into<kTurn>(pending[j], by, n)) return false;
      }
      k += take;
      pending = pending.subspan(take);
    }
    return true;
  }
};

// Whether ranks [first, last) (stored, or made on demand) are rank 0's prepared steps turned, each
// by its rank. The ranks are read side by side, a stretch of rank 0's steps at a time, so that the
// stretch comes from the cache for every rank after the first: rank 0's prepared steps at 16,384
// ranks are tens of MB, and read whole rank after rank they came from memory each time.
template <Turn kTurn>
bool ranks_turn(const Schedule& s, std::size_t first, std::size_t last, const std::vector<PreparedStep>& rank0,
                const std::atomic<bool>& turned) {
  constexpr std::size_t kStretch = 2048;  // steps: some 300 KB of rank 0's, with the steps they point to
  const auto n = static_cast<std::uint32_t>(s.nranks());
  const Participant& zero = s.participants.front();
  std::vector<RankReader> readers;
  readers.reserve(last - first);
  for (std::size_t r = first; r < last; ++r) {
    const Participant& mine = s.participants[r];
    if (mine.waits != zero.waits || mine.scratch != zero.scratch) return false;
    readers.push_back(RankReader{s.steps_of(static_cast<int>(r)), {}});
  }
  for (std::size_t begin = 0; begin < rank0.size() && turned.load(); begin += kStretch) {
    const std::size_t end = std::min(begin + kStretch, rank0.size());
    for (std::size_t i = 0; i < readers.size(); ++i) {
      if (!readers[i].turn<kTurn>(rank0, begin, end, static_cast<std::uint32_t>(first + i), n)) return false;
    }
  }
  // More steps than rank 0 on any rank is a difference too.
  return std::all_of(readers.begin(), readers.end(),
                     [](RankReader& reader) { return reader.pending.empty() && reader.steps.next_batch().empty(); });
}

// Whether ranks 1..n-1 are rank 0's prepared steps turned, compared on `threads` threads in batches
// of ranks (share_indices); the first batch found not turned stops them all.
bool every_rank_turns(const Schedule& s, Turn turn, const std::vector<PreparedStep>& prepared, unsigned threads) {
  constexpr std::size_t kRanksPerBatch = 16;
  const auto others = static_cast<std::size_t>(s.nranks() - 1);
  std::atomic<bool> turned{true};
  share_indices((others + kRanksPerBatch - 1) / kRanksPerBatch, threads, [&](std::size_t batch, std::size_t) {
    const std::size_t first = 1 + batch * kRanksPerBatch, last = std::min(first + kRanksPerBatch, others + 1);
    if (!turned.load()) return false;
    const bool alike = turn == Turn::Rotation ? ranks_turn<Turn::Rotation>(s, first, last, prepared, turned)
                                              : ranks_turn<Turn::Xor>(s, first, last, prepared, turned);
    if (!alike) turned = false;
    return turned.load();
  });
  return turned;
}

// What find_symmetry requires before it compares steps.
bool could_be_symmetric(const Schedule& s) {
  const int n = s.nranks();
  if (n < 2 || s.nparticipants() != n || !rank_buffers_alike(s.shape)) return false;
  for (int r = 0; r < n; ++r) {
    if (s.participants[static_cast<std::size_t>(r)].is_switch) return false;
    if (s.buffer_size(r, BufferKind::Scratch) != s.buffer_size(0, BufferKind::Scratch)) return false;
  }
  return true;
}

}  // namespace

bool rank_buffers_alike(const Case& shape) {
  const RankElements elements = rank_elements(shape);
  const auto alike = [](const std::vector<std::size_t>& lengths) {
    return std::adjacent_find(lengths.begin(), lengths.end(), std::not_equal_to<>()) == lengths.end();
  };
  return alike(elements.inputs) && alike(elements.outputs);
}

std::optional<Symmetry> find_symmetry(const Schedule& s) {
  if (s.participants.empty()) return std::nullopt;
  return find_symmetry(s, s.participants.front().steps);
}

namespace {

// In place one buffer lies inside the other, at a place of its own on each rank (an all-gather's
// input is block r of its output; an all-reduce's input is its output): rank r's element T_r(i) of
// the inside buffer must then lie where rank 0's element i does, turned as the outer buffer turns,
// so that turning rank 0's storage gives rank r's. Checked a stretch at a time.
bool aliases_turn(const Schedule& s, const Symmetry& symmetry) {
  if (!s.shape.in_place) return true;
  const Alias zero = in_place_alias(s.shape, 0);
  const BufferKind outer = zero.inside == BufferKind::Input ? BufferKind::Output : BufferKind::Input;
  const Turning inside = symmetry.of(zero.inside);
  const Turning around = symmetry.of(outer);
  const auto n = static_cast<std::uint32_t>(s.nranks());
  const std::uint64_t size = s.buffer_size(0, zero.inside);
  bool same_place = true;  // every rank's at rank 0's place: the two must turn alike
  for (int r = 1; r < s.nranks() && same_place; ++r) same_place = in_place_alias(s.shape, r).offset == zero.offset;
  if (same_place) return inside == around;
  for (std::uint32_t by = 1; by < n; ++by) {
    const std::uint64_t place = in_place_alias(s.shape, static_cast<int>(by)).offset;
    for (std::uint64_t i = 0, stretch = 1; i < size; i += stretch) {
      if (place + inside.offset(i, by, n) != around.offset(zero.offset + i, by, n)) return false;
      stretch = std::min({size - i, inside.stretch(i), around.stretch(zero.offset + i)});
    }
  }
  return true;
}

// The turnings under which rank 1 is rank 0 turned by `turn`, or nothing.
std::optional<Symmetry> turnings_on_rank1(const Schedule& s, std::span<const Step> rank0, Turn turn) {
  const auto n = static_cast<std::uint64_t>(s.nranks());
  Symmetry symmetry{turn, {}};
  for (BufferKind kind : {BufferKind::Input, BufferKind::Output, BufferKind::Scratch}) {
    const std::uint64_t size = s.buffer_size(0, kind);
    bool found = false;
    for (std::uint64_t parts = 0; parts <= 64 && !found; ++parts) {  // 0: the buffer does not turn
      if (parts > 0 && (size % parts != 0 || size / parts % n != 0 || size == 0)) continue;
      symmetry.cut(kind) = parts == 0 ? BufferCut{} : BufferCut{size / parts, size / parts / n};
      found = turns_into(s, 1, rank0, symmetry, kind);
    }
    if (!found) return std::nullopt;
  }
  if (!aliases_turn(s, symmetry)) return std::nullopt;
  // By XOR a step that moves elements from one range to another must take them in one order at
  // both (a message's two ends are compared as the proof matches them).
  for (const Step& step : rank0) {
    const bool local =
        step.kind == StepKind::Copy || step.kind == StepKind::Reduce || step.kind == StepKind::RecvReduce;
    if (local && symmetry.of(step.from.buffer).order(step.from) != symmetry.of(step.to.buffer).order(step.to)) {
      return std::nullopt;
    }
  }
  return symmetry;
}

}  // namespace

std::optional<Symmetry> find_symmetry(const Schedule& s, std::span<const Step> rank0, unsigned threads) {
  if (!could_be_symmetric(s)) return std::nullopt;
  const auto n = static_cast<std::uint32_t>(s.nranks());
  const bool power_of_two = (n & (n - 1)) == 0;
  for (Turn turn : {Turn::Rotation, Turn::Xor}) {
    if (turn == Turn::Xor && !power_of_two) break;
    const std::optional<Symmetry> symmetry = turnings_on_rank1(s, rank0, turn);
    if (!symmetry) continue;
    std::vector<PreparedStep> prepared;
    prepared.reserve(rank0.size());
    for (const Step& step : rank0) prepared.emplace_back(step, *symmetry, n);
    if (every_rank_turns(s, symmetry->turn, prepared, threads)) return symmetry;
  }
  return std::nullopt;
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

std::optional<std::string> outputs_turn(const Schedule& s, const Symmetry& symmetry) {
  // An all-reduce requires of every rank's element i every rank's input i, once: rank r's element
  // T(i) needs input T(i), and rank 0's element i's need turned is input T_in(i), the same where the
  // input and the output turn alike. That equality is what the check below would find element by
  // element, n x count times.
  if (s.shape.collective == Collective::AllReduce &&
      symmetry.of(BufferKind::Input) == symmetry.of(BufferKind::Output)) {
    return std::nullopt;
  }
  // An all-to-all requires of rank r's element j of output block b element j of rank b's input block
  // r. Where a rotation turns both buffers' blocks of count elements, rank 0's element j of block b
  // needs rank b's input block 0, turned: rank b+r's block r, which is what rank r's block b+r needs
  // (n x n blocks otherwise, each a stretch of its own when the proof is in units of a block).
  const BufferCut blocks_of_count{static_cast<std::uint64_t>(s.nranks()) * s.shape.count, s.shape.count};
  const auto in_blocks_of_count = [&](BufferKind kind) {
    const Turning turning = symmetry.of(kind);
    return turning.part == blocks_of_count.part && turning.block == blocks_of_count.block;
  };
  if (s.shape.collective == Collective::AllToAll && !s.shape.in_place && symmetry.turn == Turn::Rotation &&
      in_blocks_of_count(BufferKind::Input) && in_blocks_of_count(BufferKind::Output)) {
    return std::nullopt;
  }
  const auto n = static_cast<std::uint32_t>(s.nranks());
  const Turning output = symmetry.of(BufferKind::Output);
  const VectorBlocks blocks0 = vector_blocks(s.shape, 0);
  const std::size_t size = s.buffer_size(0, BufferKind::Output);
  VectorBlocks blocks = blocks0;
  for (std::uint32_t by = 1; by < n; ++by) {
    blocks = vector_blocks(s.shape, static_cast<int>(by), &blocks);
    for (std::size_t i = 0, stretch = 1; i < size; i += stretch) {
      const std::size_t turned = output.offset(i, by, n);
      const Run rank0 = wanted(s.shape, 0, i, blocks0);
      stretch = std::min({wanted_stretch(s.shape, i, size, blocks0), wanted_stretch(s.shape, turned, size, blocks),
                          output.stretch(i), symmetry.of(BufferKind::Input).stretch(rank0.index)});
      if (symmetry.turns_into(rank0, wanted(s.shape, static_cast<int>(by), turned, blocks), by, n)) continue;
      return "rank " + std::to_string(by) + "'s program is rank 0's turned, but " +
             std::string(name(s.shape.collective)) + " does not require its output element " + std::to_string(turned) +
             " to hold rank 0's element " + std::to_string(i) + " turned";
    }
  }
  return std::nullopt;
}

}  // namespace collcheck::provenance
