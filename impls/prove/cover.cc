// Proof by rotation through a cover (cover.h) works as follows.
//
// Two schedules have blocks of unequal length, so that rank r's program is not rank 0's turned (its
// blocks are other lengths, and a piece that is empty on one block is left out on both ends of its
// message) and symmetry.cc's rotation does not hold:
// - a ring all-reduce of `count` elements cuts each channel's part into n blocks whose lengths
//   differ by one where n does not divide the part (`RingBlocks`: block b of part p);
// - pairwise all-to-all-v sends block (s, d) of counts[s*n+d] elements from rank s to rank d
//   (`PairBlocks`: rank s's input holds its row of blocks, rank d's output its column).
// The `cover` is the same algorithm on the uniform count at which every block is the longest block
// here (the ring all-reduce on the count rounded up; pairwise all-to-all on the longest pair's
// count): its blocks are equal, and the schedule's elements are a part of the cover's, element j
// of block b of part p (of pair (s, d)) being element j of the cover's block b of part p (of pair
// (s, d)). Which element of the collective a range of the cover's rank 0 holds is its `Placed`.
//
// Let C be the schedule whose rank 0 is the cover's rank 0 and whose rank r is that turned by r
// (rho_r, symmetry.cc): C is rotation-symmetric by construction, so proving rank 0 alone proves it
// (proof.cc, symmetry.cc). cover_rank0 checks, for every rank r of the schedule S, that S's rank r
// is C's rank r cut to S's blocks: each step of C's rank r with each range cut to the elements that
// exist in S (the step left out where it keeps none), in the same order (cut_into). It also checks
// that every step of C keeps each element what it is: the ranges of one step hold the same stretch
// of one block (`CoverStep`: a ring's block at the same place in input and output; an all-to-all's
// pair, from its sender's input to its receiver's output), and so does every message, the k-th send
// to a peer on a channel against the k-th receive there (messages_keep_place, on rank 0, which
// covers every rank by rotation). Then:
// - an element of S moves exactly as in C, through the same steps, touching only elements of S:
//   each step and message of C maps element j of a block to element j of the same block, which
//   exists in S or not alike at both ends, so cutting never splits a step or a message unevenly,
//   and a message left out is left out by its sender and its receiver (its block is the same at
//   both);
// - S completes where C does: its steps are C's in the same order less matched pairs of empty
//   messages, and removing a send with its receive removes a wait, never adds one;
// - S's outputs are C's on S's elements, and the collective requires the same of an element in
//   both: an all-reduce every rank's input at that element, once; an all-to-all-v at element j of
//   rank d's block from s, element j of rank s's block for d, which is C's requirement at the same
//   element. So S is exact where C is. The requirements are why only these two collectives, of
//   ranks alone (no switches, no waits, no scratch), are taken.
// The cover comes from the generator, but nothing here trusts it: a wrong cover fails the checks
// (the full proof then runs), or proves what S does.
#include "impls/prove/cover.h"

#include <algorithm>
#include <atomic>
#include <map>
#include <utility>
#include <vector>

#include "reference/counts.h"
#include "reference/shared_indices.h"

namespace collcheck::provenance {
namespace {

std::uint64_t turned(std::uint64_t rank, std::uint64_t by, std::uint64_t nranks) {
  const std::uint64_t sum = rank + by;
  return sum >= nranks ? sum - nranks : sum;
}

// The element of the collective that a range of the cover's rank 0 holds: the elements [first, end)
// of a block of a part, named alike on every rank. Empty ranges are not placed.
struct Placed {
  bool placed = false;
  std::uint64_t source = 0;  // an all-to-all's: the rank whose input holds the block (a ring's: 0)
  std::uint64_t block = 0;   // a ring's: the block of its part; an all-to-all's: the rank whose output holds it
  std::uint64_t part = 0;    // a ring's: the part (an all-to-all's: 0)
  std::uint64_t first = 0;
  std::uint64_t end = 0;

  friend bool operator==(const Placed&, const Placed&) = default;
};

// A step of the cover turned and cut to the schedule's blocks: where a range of it lies, or `kept`
// false where it keeps no element.
struct Cut {
  bool kept = true;
  std::uint64_t offset = 0;
  std::uint64_t length = 0;
};

// Whether the schedule runs on ranks alone, with no waits or scratch, out of place or in place
// with the input the output.
bool ranks_alone(const Schedule& s) {
  if (s.nranks() < 2 || s.nparticipants() != s.nranks()) return false;
  for (int r = 0; r < s.nranks(); ++r) {
    const Participant& participant = s.participants[static_cast<std::size_t>(r)];
    if (participant.is_switch || !participant.waits.empty() || s.buffer_size(r, BufferKind::Scratch) != 0 ||
        (s.shape.in_place && in_place_alias(s.shape, r).offset != 0)) {
      return false;
    }
  }
  return true;
}

// A ring all-reduce's blocks (real) and the cover's: block b of part p. A part's n blocks are
// slice()'s, the first `larger` of them one element longer than `base`, so where a block lies is
// arithmetic on its part's three numbers (no table per block to miss in the cache at 16,384 ranks).
// Input and output lie alike, on every rank.
struct RingBlocks {
  struct Part {
    std::uint64_t offset = 0;
    std::uint64_t base = 0;
    std::uint64_t larger = 0;
  };
  std::size_t nranks = 0;
  std::size_t parts = 0;
  std::uint64_t longest = 0;
  std::vector<Part> of_part;
  std::size_t empty = 0;  // blocks without an element

  RingBlocks(std::uint64_t count, std::size_t parts_, std::size_t n) : nranks(n), parts(parts_) {
    for (std::size_t p = 0; p < parts; ++p) {
      const Slice part = slice(count, parts, p);
      of_part.push_back(Part{part.offset, part.count / n, part.count % n});
      if (part.count < n) empty += n - part.count;
    }
    longest = of_part.empty() ? 0 : of_part.front().base + (of_part.front().larger > 0 ? 1 : 0);  // part 0's block 0
  }

  // Every rank is compared with all of the cover's steps: where most blocks are empty (count 7 on
  // 4096 ranks) the schedule is far smaller than its cover and is proven in full faster.
  bool mostly_empty() const { return 2 * empty > parts * nranks; }
  bool covered_by(const Schedule& s, const Schedule& cover) const;
  BufferCut rotation() const { return BufferCut{nranks * longest, longest}; }

  std::optional<Placed> place(const Range& range) const {
    if (range.count == 0) return Placed{};
    if (range.buffer == BufferKind::Scratch || longest == 0) return std::nullopt;
    const std::uint64_t part_length = nranks * longest;
    const std::uint64_t within = range.offset % part_length;
    const Placed placed{
        true, 0, within / longest, range.offset / part_length, within % longest, within % longest + range.count};
    if (placed.part >= parts || placed.end > longest) return std::nullopt;
    return placed;
  }
  Placed turn(Placed placed, std::uint64_t by) const {
    placed.block = turned(placed.block, by, nranks);
    return placed;
  }

  // Rank `by`'s blocks: every rank's are alike.
  struct OfRank {
    static constexpr bool kBuffersAlike = true;
    const RingBlocks& blocks;
    std::uint64_t by;

    Cut cut(const Placed& where, BufferKind /*every buffer alike*/) const {
      const std::uint64_t block = turned(where.block, by, blocks.nranks);
      const Part& part = blocks.of_part[where.part];
      const std::uint64_t block_length = part.base + (block < part.larger ? 1 : 0);
      if (where.first >= block_length) return Cut{false, 0, 0};
      return Cut{true, part.offset + block * part.base + std::min(block, part.larger) + where.first,
                 std::min(where.end, block_length) - where.first};
    }
  };
  void of_ranks(std::size_t first, std::size_t end, std::vector<OfRank>& ranks) const {
    ranks.clear();
    for (std::size_t by = first; by < end; ++by) ranks.push_back(OfRank{*this, by});
  }
};

// An all-reduce of ranks alone whose input and output are `count` long.
bool plain_allreduce(const Schedule& s, std::uint64_t count) {
  if (s.shape.collective != Collective::AllReduce || !ranks_alone(s)) return false;
  for (int r = 0; r < s.nranks(); ++r) {
    if (s.buffer_size(r, BufferKind::Output) != count || s.buffer_size(r, BufferKind::Input) != count) return false;
  }
  return true;
}

bool RingBlocks::covered_by(const Schedule& s, const Schedule& cover) const {
  return cover.shape.count == cover_count(s.shape.count, parts, nranks) && cover.nranks() == s.nranks() &&
         cover.shape.in_place == s.shape.in_place && plain_allreduce(cover, cover.shape.count);
}

// An all-to-all-v's blocks: block (s, d) holds counts[s*n+d] elements, in rank s's input where its
// row's blocks before d end, in rank d's output where its column's blocks before s end. The
// cover's (an all-to-all of the longest pair's count) are all `longest` long: block d of rank s's
// input is pair (s, d), block s of rank d's output pair (s, d). Each block is one piece (one
// channel, chunks no shorter than the longest block: the generator offers a cover only then).
struct PairBlocks {
  const Case& shape;
  std::size_t nranks = 0;
  std::uint64_t longest = 0;
  std::size_t empty = 0;  // pairs without an element

  explicit PairBlocks(const Case& shape_) : shape(shape_), nranks(static_cast<std::size_t>(shape_.nranks)) {
    for (std::size_t count : shape.counts) {
      longest = std::max<std::uint64_t>(longest, count);
      empty += count == 0 ? 1 : 0;
    }
  }

  bool mostly_empty() const { return 2 * empty > shape.counts.size(); }
  bool covered_by(const Schedule& s, const Schedule& cover) const {
    return cover.shape.collective == Collective::AllToAll && cover.shape.count == longest &&
           cover.nranks() == s.nranks() && !cover.shape.in_place && ranks_alone(cover);
  }
  BufferCut rotation() const { return BufferCut{nranks * longest, longest}; }

  std::optional<Placed> place(const Range& range) const {
    if (range.count == 0) return Placed{};
    if (range.buffer == BufferKind::Scratch || longest == 0) return std::nullopt;
    const std::uint64_t block = range.offset / longest;
    const std::uint64_t first = range.offset % longest;
    if (block >= nranks || first + range.count > longest) return std::nullopt;
    const bool input = range.buffer == BufferKind::Input;  // rank 0's input holds pair (0, block)
    return Placed{true, input ? 0 : block, input ? block : 0, 0, first, first + range.count};
  }
  Placed turn(Placed placed, std::uint64_t by) const {
    placed.source = turned(placed.source, by, nranks);
    placed.block = turned(placed.block, by, nranks);
    return placed;
  }

  // Rank `by`'s blocks: where each block of its row starts in its input (`row`) and each block of
  // its column in its output (`column`), and one past the last.
  struct OfRank {
    static constexpr bool kBuffersAlike = false;  // input by the row, output by the column
    std::vector<std::uint64_t> row, column;
    std::uint64_t by = 0;
    std::size_t nranks = 0;

    Cut cut(const Placed& where, BufferKind buffer) const {
      const bool input = buffer == BufferKind::Input;
      const std::vector<std::uint64_t>& starts = input ? row : column;
      const std::uint64_t block = turned(input ? where.block : where.source, by, nranks);
      const std::uint64_t length = starts[block + 1] - starts[block];
      if (where.first >= length) return Cut{false, 0, 0};
      return Cut{true, starts[block] + where.first, std::min(where.end, length) - where.first};
    }
  };
  // Ranks first..end-1's blocks, their columns read together along the rows of counts (a column
  // alone is a count a row apart each: a cache miss each at thousands of ranks).
  // `ranks` keeps its tables from one call to the next (each 8(n+1) bytes: allocated once per thread).
  void of_ranks(std::size_t first, std::size_t end, std::vector<OfRank>& ranks) const {
    ranks.resize(end - first);
    for (std::size_t by = first; by < end; ++by) {
      OfRank& rank = ranks[by - first];
      rank.by = by;
      rank.nranks = nranks;
      rank.row.assign(nranks + 1, 0);
      rank.column.assign(nranks + 1, 0);
      for (std::size_t other = 0; other < nranks; ++other)
        rank.row[other + 1] = rank.row[other] + shape.counts[by * nranks + other];
    }
    for (std::size_t other = 0; other < nranks; ++other) {
      const std::size_t* counts = shape.counts.data() + other * nranks;
      for (OfRank& rank : ranks) rank.column[other + 1] = rank.column[other] + counts[rank.by];
    }
  }
};

// An all-to-all-v of ranks alone, out of place, with a count for every pair.
bool plain_alltoallv(const Schedule& s) {
  return s.shape.collective == Collective::AllToAllV && !s.shape.in_place && ranks_alone(s) &&
         s.shape.counts.size() == counts_needed(s.shape.collective, s.nranks());
}

// A step of the cover's rank 0 with what its ranges hold (both the same, or one empty), and the
// buffer of a range that holds it.
struct CoverStep {
  Step model;
  Placed where;
  BufferKind held_in = BufferKind::Input;
};

template <typename Blocks>
std::optional<CoverStep> cover_step(const Step& step, const Blocks& blocks) {
  const std::optional<Placed> from = blocks.place(step.from), to = blocks.place(step.to);
  if (!from || !to) return std::nullopt;
  if (from->placed && to->placed && !(*from == *to)) return std::nullopt;
  return from->placed ? CoverStep{step, *from, step.from.buffer} : CoverStep{step, *to, step.to.buffer};
}

// Whether `got` is the cover's step `model` turned by `by` (its peer too) and cut to `rank`'s blocks,
// `place` being the cut in the buffer it is held in (the other buffer's worked out where they differ).
template <typename OfRank>
bool is_cut(const Step& got, const CoverStep& cover, const Cut& place, const OfRank& rank, std::uint64_t by,
            std::uint64_t n) {
  const Step& model = cover.model;
  if (got.kind != model.kind || got.channel != model.channel || got.stream != model.stream) return false;
  if (model.sends() || model.receives()) {
    if (static_cast<std::uint64_t>(got.peer) != turned(static_cast<std::uint64_t>(model.peer), by, n)) return false;
  } else if (got.peer != model.peer) {
    return false;
  }
  const auto same = [&](const Range& range, const Range& modelled) {
    if (modelled.count == 0) return range == modelled;
    const Cut there =
        OfRank::kBuffersAlike || modelled.buffer == cover.held_in ? place : rank.cut(cover.where, modelled.buffer);
    return range.buffer == modelled.buffer && range.offset == there.offset && range.count == there.length;
  };
  return same(got.from, model.from) && same(got.to, model.to);
}

// Whether rank r's steps are the cover's turned by r and cut, counting them and their sends. Each
// step of the cover is cut, skipped where it keeps nothing, and compared with rank r's next step
// field by field, never built as a Step: this runs for every step of every rank.
template <typename OfRank>
bool cut_into(const Schedule& s, const std::vector<CoverStep>& cover, const OfRank& rank,
              std::atomic<std::size_t>& steps, std::atomic<std::size_t>& sends) {
  const std::uint64_t by = rank.by;
  StepReader mine = s.steps_of(static_cast<int>(by));
  std::size_t made = 0, sent = 0;
  for (const CoverStep& step : cover) {
    const Cut place = step.where.placed ? rank.cut(step.where, step.held_in) : Cut{};
    if (!place.kept) continue;
    if (!mine.next() || !is_cut(mine.step(), step, place, rank, by, static_cast<std::uint64_t>(s.nranks()))) {
      return false;
    }
    ++made;
    if (step.model.sends()) ++sent;
  }
  if (mine.next()) return false;
  steps += made;
  sends += sent;
  return true;
}

// Every message of the cover keeps what its elements are: rank 0's k-th receive from peer p on a
// channel takes rank p's k-th send to 0 there, which is rank 0's k-th send to -p turned by p.
template <typename Blocks>
bool messages_keep_place(const std::vector<CoverStep>& cover, const Blocks& blocks) {
  const std::uint64_t n = blocks.nranks;
  std::map<std::pair<std::uint64_t, int>, std::vector<const CoverStep*>> sends, receives;
  for (const CoverStep& step : cover) {
    const auto peer = static_cast<std::uint64_t>(step.model.peer);
    if (step.model.sends()) sends[{peer, step.model.channel}].push_back(&step);
    if (step.model.receives()) receives[{peer, step.model.channel}].push_back(&step);
  }
  for (const auto& [link, taken] : receives) {
    const std::uint64_t peer = link.first;
    const auto sent = sends.find({(n - peer) % n, link.second});
    if (sent == sends.end() || sent->second.size() != taken.size()) return false;
    for (std::size_t k = 0; k < taken.size(); ++k) {
      if (!(blocks.turn(sent->second[k]->where, peer) == taken[k]->where)) return false;
    }
  }
  return true;
}

template <typename Blocks>
std::optional<CoveredRank0> cover_through(const Schedule& s, const Blocks& blocks, unsigned threads) {
  if (blocks.mostly_empty()) return std::nullopt;
  CoveredRank0 covered{s.cover.make(), {}, 0, 0};
  Schedule& cover = covered.cover;
  if (!blocks.covered_by(s, cover)) return std::nullopt;
  std::vector<Step> rank0;
  std::vector<CoverStep> placed;
  const BufferSizes sizes = buffer_sizes(cover, 0);
  for (StepReader made = cover.steps_of(0); made.next();) {
    const std::optional<CoverStep> step = cover_step(made.step(), blocks);
    if (!step || !validate_step(cover, 0, static_cast<int>(rank0.size()), made.step(), sizes)) return std::nullopt;
    rank0.push_back(made.step());
    placed.push_back(*step);
  }
  if (!messages_keep_place(placed, blocks) || !streams_apart(cover, rank0)) return std::nullopt;
  std::atomic<std::size_t> steps{0}, sends{0};
  std::atomic<bool> cut{true};
  constexpr std::size_t kRanksAtOnce = 64;  // ranks whose blocks are worked out together
  const auto n = static_cast<std::size_t>(s.nranks());
  std::vector<std::vector<typename Blocks::OfRank>> per_thread(std::max(threads, 1U));
  share_indices((n + kRanksAtOnce - 1) / kRanksAtOnce, threads, [&](std::size_t group, std::size_t thread) {
    std::vector<typename Blocks::OfRank>& ranks = per_thread[thread];
    blocks.of_ranks(group * kRanksAtOnce, std::min(n, (group + 1) * kRanksAtOnce), ranks);
    for (const auto& rank : ranks) {
      if (cut.load() && !cut_into(s, placed, rank, steps, sends)) cut = false;
    }
    return cut.load();
  });
  if (!cut) return std::nullopt;
  cover.make_steps = {};
  cover.participants.front().steps = std::move(rank0);
  const BufferCut equal = blocks.rotation();
  covered.rotation.cuts = {equal, equal, BufferCut{}};
  covered.steps = steps;
  covered.messages = sends;
  return covered;
}

}  // namespace

std::optional<CoveredRank0> cover_rank0(const Schedule& s, unsigned threads) {
  if (!s.cover) return std::nullopt;
  if (plain_alltoallv(s)) return cover_through(s, PairBlocks(s.shape), threads);
  if (!plain_allreduce(s, s.shape.count)) return std::nullopt;
  return cover_through(s, RingBlocks(s.shape.count, s.cover.parts, static_cast<std::size_t>(s.nranks())), threads);
}

}  // namespace collcheck::provenance
