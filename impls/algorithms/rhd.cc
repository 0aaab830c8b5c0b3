// Rabenseifner's all-reduce (recursive halving, then recursive doubling) and the recursive-
// halving reduce-scatter, for any number of ranks by folding the ranks above a power of two.
#include "impls/algorithms/generators.h"

#include <vector>

#include "impls/algorithms/generator_support.h"

namespace collcheck {

// Recursive halving and doubling works as follows. Let p be the largest power of two at most
// n; the `extra` ranks p <= r < n are first folded in: each sends its whole input to its
// `partner` r - p, which reduces it into its own, and drops out until the end.
//
// The data of the p remaining ranks is cut into p `blocks`, and rank v's responsibility starts
// as all of them, the interval [lo, hi) = [0, p). In the halving round of `distance` d (p/2,
// p/4, ..., 1) v and its partner v XOR d split the interval in halves: the one whose bit d is
// clear keeps the lower half, the other the upper; each sends the half it gives up and reduces
// the half it keeps with what arrives. After log2(p) rounds v holds the complete reduction of
// block v: a reduce-scatter that moved (p-1)/p of the data instead of log2(p) times all of it.
//
// All-reduce then runs the halving backwards, recursive doubling: in the round of distance d
// (1, 2, ..., p/2) v sends its complete blocks [base, base + d) (base = v rounded down to a
// multiple of d) to v XOR d and receives the partner's, so all p blocks end everywhere; last,
// each partner sends the whole result to its extra rank.
//
// Reduce-scatter has no doubling; instead its block layout is fixed (rank r ends with block r
// of n), so the p responsibilities are `groups`: group v is block v and, for a partner of an
// extra rank, block p+v too. Halving splits intervals of groups, so a message carries at most
// two runs of blocks. In the last round the kept group's block v is reduced straight into the
// output, and each partner finally sends block p+v to its extra rank. Partial reductions live in
// scratch at their blocks' places (out of place a rank may not write its input, and its output
// holds one block).
//
// The data is cut into pieces (each channel owning a slice -- of the vector for all-reduce, of
// every block for reduce-scatter -- cut into chunks of at most knobs.chunk elements) and the
// whole algorithm runs per piece, each channel on its own stream.
//
// In place, the halves a rank gives up are never written by it, and the rest is written only
// by reductions that read the same elements of the input; the extra ranks send their input
// before they receive their result.

namespace {

using generators::at;
using generators::block_ranges;
using generators::check;
using generators::copy_alone;
using generators::Piece;
using generators::recv;
using generators::recv_reduce;
using generators::send;

struct Interval {
  int lo;
  int hi;
};

// One halving round for rank v holding `held`: the half it keeps and the half it gives up.
struct Halves {
  Interval keep;
  Interval give;
};

Halves halve(Interval held, int v, int distance) {
  check(held.hi - held.lo == 2 * distance, "a halving round splits an interval of twice its distance");
  const int mid = held.lo + distance;
  const Interval lower{held.lo, mid};
  const Interval upper{mid, held.hi};
  return (v & distance) != 0 ? Halves{upper, lower} : Halves{lower, upper};
}

// All-reduce's blocks: the elements of one piece cut into `nblocks` (p) blocks.
struct PieceBlocks {
  Piece piece;
  int nblocks;

  // The elements of blocks [lo, hi) of the piece: one contiguous range.
  Slice of(Interval interval) const {
    const auto parts = static_cast<std::size_t>(nblocks);
    const std::size_t begin = slice(piece.count, parts, static_cast<std::size_t>(interval.lo)).offset;
    const std::size_t end =
        interval.hi < nblocks ? slice(piece.count, parts, static_cast<std::size_t>(interval.hi)).offset : piece.count;
    return Slice{piece.offset + begin, end - begin};
  }
};

// All-reduce's recursive halving at rank r < p, its partial reduction starting in `partial`:
// it ends holding the complete reduction of block r, in its output.
void recursive_halving(Schedule& schedule, const PieceBlocks& blocks, int r, BufferKind partial) {
  const int channel = blocks.piece.channel;
  Interval held{0, blocks.nblocks};
  for (int distance = blocks.nblocks / 2; distance >= 1; distance /= 2) {
    const int partner = r ^ distance;
    const Halves halves = halve(held, r, distance);
    const Slice give = blocks.of(halves.give);
    const Slice keep = blocks.of(halves.keep);
    if (give.count > 0) send(schedule, r, partner, at(partial, give), channel);
    if (keep.count > 0) recv_reduce(schedule, r, partner, at(partial, keep), at(BufferKind::Output, keep), channel);
    partial = BufferKind::Output;
    held = halves.keep;
  }
  check(held.lo == r && held.hi == r + 1, "halving leaves rank v with block v");
}

// All-reduce's recursive doubling at rank r < p: its complete blocks [base, base + d) go to its
// partner, whose come back, until all p blocks are everywhere.
void recursive_doubling(Schedule& schedule, const PieceBlocks& blocks, int r) {
  const int channel = blocks.piece.channel;
  for (int distance = 1; distance < blocks.nblocks; distance *= 2) {
    const int partner = r ^ distance;
    const Slice mine = blocks.of({r & ~(distance - 1), (r & ~(distance - 1)) + distance});
    const Slice theirs = blocks.of({partner & ~(distance - 1), (partner & ~(distance - 1)) + distance});
    if (mine.count > 0) send(schedule, r, partner, at(BufferKind::Output, mine), channel);
    if (theirs.count > 0) recv(schedule, r, partner, at(BufferKind::Output, theirs), channel);
  }
}

// Reduce-scatter's `groups`: group v is block v and, for a partner of an extra rank, block p+v.
struct Groups {
  int nblocks;  // p
  int extra;

  // The blocks of groups [lo, hi): blocks lo..hi-1, then p+lo.. for those below n.
  std::vector<int> blocks(Interval interval) const {
    std::vector<int> out;
    for (int v = interval.lo; v < interval.hi; ++v) out.push_back(v);
    for (int v = interval.lo; v < interval.hi && v < extra; ++v) out.push_back(nblocks + v);
    return out;
  }
};

// Reduce-scatter's recursive halving of one piece at rank r < p over intervals of groups, its
// partial reductions starting in `partial`; the last round reduces block r into the output.
void recursive_halving(Schedule& schedule, const Groups& groups, const Piece& piece, std::size_t count, int r,
                       BufferKind partial) {
  const int channel = piece.channel;
  const Range own_output = at(BufferKind::Output, piece.offset, piece.count);
  const Slice own_block = block_ranges({r}, count, piece).front();
  Interval held{0, groups.nblocks};
  for (int distance = groups.nblocks / 2; distance >= 1; distance /= 2) {
    const int partner = r ^ distance;
    const Halves halves = halve(held, r, distance);
    for (Slice range : block_ranges(groups.blocks(halves.give), count, piece)) {
      send(schedule, r, partner, at(partial, range), channel);
    }
    for (Slice range : block_ranges(groups.blocks(halves.keep), count, piece)) {
      // The last round completes the rank's own block: straight into the output.
      const bool own = distance == 1 && range.offset == own_block.offset;
      check(!own || range.count == own_block.count, "the own block travels alone in the last round");
      recv_reduce(schedule, r, partner, at(partial, range), own ? own_output : at(BufferKind::Scratch, range), channel);
    }
    partial = BufferKind::Scratch;
    held = halves.keep;
  }
  check(held.lo == r && held.hi == r + 1, "halving leaves rank v with group v");
}

}  // namespace

Schedule rhd_allreduce(const Case& shape, const Knobs& knobs) {
  Schedule schedule = generators::start(shape, "rhd");
  const int n = shape.nranks;
  if (n == 1) {
    copy_alone(schedule, shape.count);
    return schedule;
  }
  const int p = generators::floor_power_of_two(n);
  const int extra = n - p;
  for (const Piece& piece : generators::pieces(shape.count, knobs)) {
    const int channel = piece.channel;
    const Range whole_input = at(BufferKind::Input, piece.offset, piece.count);
    const Range whole_output = at(BufferKind::Output, piece.offset, piece.count);
    const PieceBlocks blocks{piece, p};
    for (int r = 0; r < n; ++r) {
      if (r >= p) {
        send(schedule, r, r - p, whole_input, channel);
        recv(schedule, r, r - p, whole_output, channel);
        continue;
      }
      // Where this rank's partial reduction is: its input until it first reduces.
      BufferKind partial = BufferKind::Input;
      if (r < extra) {
        recv_reduce(schedule, r, p + r, whole_input, whole_output, channel);
        partial = BufferKind::Output;
      }
      recursive_halving(schedule, blocks, r, partial);
      recursive_doubling(schedule, blocks, r);
      if (r < extra) send(schedule, r, p + r, whole_output, channel);
    }
  }
  return schedule;
}

Schedule rhd_reducescatter(const Case& shape, const Knobs& knobs) {
  Schedule schedule = generators::start(shape, "rhd");
  const int n = shape.nranks;
  const std::size_t count = shape.count;  // one block
  if (n == 1) {
    copy_alone(schedule, count);
    return schedule;
  }
  const int p = generators::floor_power_of_two(n);
  const int extra = n - p;
  for (int r = 0; r < p; ++r) {
    schedule.participants[static_cast<std::size_t>(r)].scratch = static_cast<std::size_t>(n) * count;
  }

  const Groups groups{p, extra};
  const std::vector<int> every_block = groups.blocks({0, p});
  check(static_cast<int>(every_block.size()) == n, "the groups hold every block once");

  for (const Piece& piece : generators::pieces(count, knobs)) {
    const int channel = piece.channel;
    for (int r = 0; r < n; ++r) {
      if (r >= p) {
        for (Slice range : block_ranges(every_block, count, piece)) {
          send(schedule, r, r - p, at(BufferKind::Input, range), channel);
        }
        recv(schedule, r, r - p, at(BufferKind::Output, piece.offset, piece.count), channel);
        continue;
      }
      BufferKind partial = BufferKind::Input;
      if (r < extra) {
        for (Slice range : block_ranges(every_block, count, piece)) {
          recv_reduce(schedule, r, p + r, at(BufferKind::Input, range), at(BufferKind::Scratch, range), channel);
        }
        partial = BufferKind::Scratch;
      }
      recursive_halving(schedule, groups, piece, count, r, partial);
      if (r < extra) {
        send(schedule, r, p + r, at(BufferKind::Scratch, block_ranges({p + r}, count, piece).front()), channel);
      }
    }
  }
  return schedule;
}

}  // namespace collcheck
