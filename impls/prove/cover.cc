// Proof by rotation through a cover (cover.h) works as follows.
//
// A ring all-reduce of `count` elements cuts each channel's part into n blocks whose lengths differ
// by one where n does not divide the part, so rank r's program is not rank 0's turned (its blocks
// are other lengths, and a chunk that is empty on one block is left out on both ends of its
// message) and symmetry.cc's rotation does not hold. Its `cover` is the same algorithm on the
// count at which every block is `longest` elements, the longest block here: its `blocks` are
// equal, and the schedule's elements are a part of the cover's, element j of block b of part p
// being element j of the cover's block b of part p (`Blocks`).
//
// Let C be the schedule whose rank 0 is the cover's rank 0 and whose rank r is that turned by r
// (rho_r, symmetry.cc): C is rotation-symmetric by construction, so proving rank 0 alone proves it
// (proof.cc, symmetry.cc). cover_rank0 checks, for every rank r of the schedule S, that S's rank r
// is C's rank r cut to S's blocks: each step of C's rank r with each range cut to the elements that
// exist in S (the step left out where it keeps none), in the same order (cut_into). It also checks
// that every step of C keeps each element where it is: the ranges of one step lie in one block and
// at the same place in it (`CoverStep`), and so does every message, the k-th send to a peer on a
// channel against the k-th receive there (messages_keep_place, on rank 0, which covers every rank
// by rotation). Then:
// - an element of S moves exactly as in C, through the same steps, touching only elements of S:
//   each step and message of C maps element (p, b, j) to (p, b, j), which exists in S or not alike
//   at both ends, so cutting never splits a step or a message unevenly, and a message left out is
//   left out by its sender and its receiver (its block is the same at both);
// - S completes where C does: its steps are C's in the same order less matched pairs of empty
//   messages, and removing a send with its receive removes a wait, never adds one;
// - S's outputs are C's on S's elements, and an all-reduce requires the same of element (p, b, j)
//   in both (every rank's input at that element, once), so S is exact where C is. The requirement
//   is why only an all-reduce of ranks (no switches, no waits, no scratch) is taken.
// The cover comes from the generator, but nothing here trusts it: a wrong cover fails the checks
// (the full proof then runs), or proves what S does.
#include "impls/prove/cover.h"

#include <algorithm>
#include <atomic>
#include <map>
#include <utility>
#include <vector>

#include "reference/shared_indices.h"

namespace collcheck::provenance {
namespace {

// The schedule's blocks (real) and the cover's: block b of part p. A part's n blocks are slice()'s,
// the first `larger` of them one element longer than `base`, so where a block lies is arithmetic
// on its part's three numbers (no table per block to miss in the cache at 16,384 ranks).
struct Blocks {
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

  Blocks(std::uint64_t count, std::size_t parts_, std::size_t n) : nranks(n), parts(parts_) {
    for (std::size_t p = 0; p < parts; ++p) {
      const Slice part = slice(count, parts, p);
      of_part.push_back(Part{part.offset, part.count / n, part.count % n});
      if (part.count < n) empty += n - part.count;
    }
    longest = of_part.empty() ? 0 : of_part.front().base + (of_part.front().larger > 0 ? 1 : 0);  // part 0's block 0
  }

  std::uint64_t length(std::size_t part, std::uint64_t block) const {
    const Part& of = of_part[part];
    return of.base + (block < of.larger ? 1 : 0);
  }
  std::uint64_t start(std::size_t part, std::uint64_t block) const {
    const Part& of = of_part[part];
    return of.offset + block * of.base + std::min(block, of.larger);
  }
};

// A range of the cover's rank 0 placed in its blocks: the elements [first, end) of block `block`
// of part `part`. Empty ranges are not placed.
struct Placed {
  bool placed = false;
  std::uint64_t part = 0;
  std::uint64_t block = 0;
  std::uint64_t first = 0;
  std::uint64_t end = 0;

  friend bool operator==(const Placed&, const Placed&) = default;
};

std::optional<Placed> place(const Range& range, const Blocks& blocks) {
  if (range.count == 0) return Placed{};
  if (range.buffer == BufferKind::Scratch || blocks.longest == 0) return std::nullopt;
  const std::uint64_t part_length = blocks.nranks * blocks.longest;
  const std::uint64_t within = range.offset % part_length;
  const Placed placed{true, range.offset / part_length, within / blocks.longest, within % blocks.longest,
                      within % blocks.longest + range.count};
  if (placed.part >= blocks.parts || placed.end > blocks.longest) return std::nullopt;
  return placed;
}

// A step of the cover's rank 0 with the one place its ranges have (both at one place, or one empty).
struct CoverStep {
  Step model;
  Placed where;
};

std::optional<CoverStep> cover_step(const Step& step, const Blocks& blocks) {
  const std::optional<Placed> from = place(step.from, blocks), to = place(step.to, blocks);
  if (!from || !to) return std::nullopt;
  if (from->placed && to->placed && !(*from == *to)) return std::nullopt;
  return CoverStep{step, from->placed ? *from : *to};
}

// The cover's step at `where` turned by `by` and cut to the schedule's blocks: where its ranges
// lie, or `kept` false where it keeps no element.
struct Cut {
  bool kept = true;
  std::uint64_t offset = 0;
  std::uint64_t length = 0;
};

Cut cut(const Placed& where, std::uint64_t by, const Blocks& blocks) {
  if (!where.placed) return Cut{};
  const std::uint64_t turned = where.block + by;
  const std::uint64_t block = turned >= blocks.nranks ? turned - blocks.nranks : turned;
  const Blocks::Part& part = blocks.of_part[where.part];
  const std::uint64_t block_length = part.base + (block < part.larger ? 1 : 0);
  if (where.first >= block_length) return Cut{false, 0, 0};
  return Cut{true, part.offset + block * part.base + std::min(block, part.larger) + where.first,
             std::min(where.end, block_length) - where.first};
}

// Whether `got` is the cover's step `model` turned by `by` (its peer too) and cut to `place`.
bool is_cut(const Step& got, const Step& model, const Cut& place, std::uint64_t by, std::uint64_t n) {
  if (got.kind != model.kind || got.channel != model.channel || got.stream != model.stream) return false;
  if (model.sends() || model.receives()) {
    const std::uint64_t peer = static_cast<std::uint64_t>(model.peer) + by;
    if (static_cast<std::uint64_t>(got.peer) != (peer >= n ? peer - n : peer)) return false;
  } else if (got.peer != model.peer) {
    return false;
  }
  const auto same = [&place](const Range& range, const Range& modelled) {
    if (modelled.count == 0) return range == modelled;
    return range.buffer == modelled.buffer && range.offset == place.offset && range.count == place.length;
  };
  return same(got.from, model.from) && same(got.to, model.to);
}

// Whether rank r's steps are the cover's turned by r and cut, counting them and their sends. Each
// step of the cover is cut, skipped where it keeps nothing, and compared with rank r's next step
// field by field, never built as a Step: this runs for every step of every rank, so cut() and
// is_cut() have this one caller each (the compiler puts them inline).
bool cut_into(const Schedule& s, int r, const std::vector<CoverStep>& cover, const Blocks& blocks,
              std::atomic<std::size_t>& steps, std::atomic<std::size_t>& sends) {
  const auto by = static_cast<std::uint64_t>(r);
  StepReader mine = s.steps_of(r);
  std::size_t made = 0, sent = 0;
  for (const CoverStep& step : cover) {
    const Cut place = cut(step.where, by, blocks);
    if (!place.kept) continue;
    if (!mine.next() || !is_cut(mine.step(), step.model, place, by, blocks.nranks)) return false;
    ++made;
    if (step.model.sends()) ++sent;
  }
  if (mine.next()) return false;
  steps += made;
  sends += sent;
  return true;
}

// Every message of the cover keeps its elements' places: rank 0's k-th receive from peer p on a
// channel takes rank p's k-th send to 0 there, which is rank 0's k-th send to -p turned by p.
bool messages_keep_place(const std::vector<CoverStep>& cover, std::uint64_t n) {
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
      Placed turned = sent->second[k]->where;
      turned.block = (turned.block + peer) % n;
      if (!(turned == taken[k]->where)) return false;
    }
  }
  return true;
}

// What the argument above needs of a schedule (or cover) of `count` elements: an all-reduce of n
// ranks, no switches, waits or scratch, the input the output in place.
bool plain_allreduce(const Schedule& s, std::uint64_t count) {
  if (s.shape.collective != Collective::AllReduce || s.nranks() < 2 || s.nparticipants() != s.nranks()) return false;
  for (int r = 0; r < s.nranks(); ++r) {
    const Participant& participant = s.participants[static_cast<std::size_t>(r)];
    if (participant.is_switch || !participant.waits.empty() || s.buffer_size(r, BufferKind::Scratch) != 0 ||
        s.buffer_size(r, BufferKind::Output) != count || s.buffer_size(r, BufferKind::Input) != count ||
        (s.shape.in_place && in_place_alias(s.shape, r).offset != 0)) {
      return false;
    }
  }
  return true;
}

}  // namespace

std::optional<CoveredRank0> cover_rank0(const Schedule& s, unsigned threads) {
  if (!s.cover || !plain_allreduce(s, s.shape.count)) return std::nullopt;
  const Blocks blocks(s.shape.count, s.cover.parts, static_cast<std::size_t>(s.nranks()));
  // Every rank is compared with all of the cover's steps: where most blocks are empty (count 7 on
  // 4096 ranks) the schedule is far smaller than its cover and is proven in full faster.
  if (2 * blocks.empty > blocks.parts * blocks.nranks) {
    return std::nullopt;
  }
  CoveredRank0 covered{s.cover.make(), {}, 0, 0};
  Schedule& cover = covered.cover;
  if (cover.shape.count != cover_count(s.shape.count, blocks.parts, blocks.nranks) || cover.nranks() != s.nranks() ||
      cover.shape.in_place != s.shape.in_place || !plain_allreduce(cover, cover.shape.count)) {
    return std::nullopt;
  }
  std::vector<Step> rank0;
  std::vector<CoverStep> placed;
  const BufferSizes sizes = buffer_sizes(cover, 0);
  for (StepReader made = cover.steps_of(0); made.next();) {
    const std::optional<CoverStep> step = cover_step(made.step(), blocks);
    if (!step || !validate_step(cover, 0, static_cast<int>(rank0.size()), made.step(), sizes)) return std::nullopt;
    rank0.push_back(made.step());
    placed.push_back(*step);
  }
  if (!messages_keep_place(placed, static_cast<std::uint64_t>(s.nranks())) || !streams_apart(cover, rank0)) {
    return std::nullopt;
  }
  std::atomic<std::size_t> steps{0}, sends{0};
  std::atomic<bool> cut{true};
  share_indices(static_cast<std::size_t>(s.nranks()), threads, [&](std::size_t r, std::size_t) {
    if (cut.load() && !cut_into(s, static_cast<int>(r), placed, blocks, steps, sends)) cut = false;
    return cut.load();
  });
  if (!cut) return std::nullopt;
  cover.make_steps = {};
  cover.participants.front().steps = std::move(rank0);
  const BufferCut equal{blocks.nranks * blocks.longest, blocks.longest};
  covered.rotation.cuts = {equal, equal, BufferCut{}};
  covered.steps = steps;
  covered.messages = sends;
  return covered;
}

}  // namespace collcheck::provenance
