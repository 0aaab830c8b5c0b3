// Recursive-doubling all-gather for any number of ranks: log2 rounds of pairwise exchanges
// among a power of two of them, the ranks beyond it folded in first and served last.
#include "impls/algorithms/generators.h"

#include <vector>

#include "impls/algorithms/generator_support.h"

namespace collcheck {

// Recursive doubling works as follows. Let p be the largest power of two at most n. In the
// round of `distance` d (1, 2, 4, ..., p/2) rank v < p exchanges everything it holds with its
// `partner` v XOR d. Before that round v holds the blocks of the d ranks whose numbers agree
// with v above bit log2(d) -- the aligned group [base, base + d), base = v rounded down to a
// multiple of d -- and after it the group of 2d, so after log2(p) rounds every block.
//
// Ranks beyond the power of two (the `extra` ones, p <= r < n) are folded in, the usual fix
// for other n: each first sends its block to its `partner` r - p, which then carries block
// p+v alongside block v, so a group [base, base + d) stands for blocks base.. and p+base..
// (those below n): at most two ranges per message. After the last round each partner sends
// the extra rank every block but its own. This costs two rounds more than log2(p) and moves
// the whole output once more over n-p links; we chose it over a Bruck-style dissemination
// (ceil(log2 n) rounds whose messages wrap around the block order) because it keeps the
// exchanges of recursive doubling exactly, as MPICH and Open MPI do for non-powers of two.
//
// The data is cut into pieces (each channel owning a slice of every block, each slice cut into
// chunks of at most knobs.chunk elements) and the whole exchange runs per piece, channel by
// channel on its own stream. When a piece is a whole block, a run of blocks is one message.
//
// In place, a rank's input is block r of its output, and no step receives into a rank's own
// block (an extra rank is sent every block but its own), so no input is overwritten.

namespace {

using generators::at;
using generators::block_ranges;
using generators::check;
using generators::Piece;
using generators::recv;
using generators::send;

// The blocks rank v < p holds before the round of distance d: its aligned `group`
// [base, base + d), and for a partner of an extra rank block p+b beside each b. A piece that is a
// whole block sends the group as one range (neighbours merge); where a piece is part of a block,
// each block goes as a message of its own, in v's own order (the j-th is block base + (j XOR (v
// mod d))), so that on a power of two every rank's program is rank 0's with every rank and block
// XOR its rank, which the prover uses (impls/prove/symmetry.h).
std::vector<int> group(int v, int distance, int p, int extra, bool whole_blocks) {
  const int base = v & ~(distance - 1);
  const int turn = whole_blocks ? 0 : v & (distance - 1);
  std::vector<int> blocks;
  blocks.reserve(2 * static_cast<std::size_t>(distance));
  for (int j = 0; j < distance; ++j) blocks.push_back(base + (j ^ turn));
  for (int j = 0; j < distance; ++j) {
    if (const int b = base + (j ^ turn); b < extra) blocks.push_back(p + b);
  }
  return blocks;
}

// Blocks 0..n-1 but `skipped`.
std::vector<int> all_but(int skipped, int n) {
  std::vector<int> blocks;
  for (int b = 0; b < n; ++b) {
    if (b != skipped) blocks.push_back(b);
  }
  return blocks;
}

// The rounds of recursive doubling for rank r < p on one piece: in each, everything it holds
// goes to its `partner`, and the partner's group comes back.
void recursive_doubling(Schedule& schedule, const Piece& piece, int r, int p, int extra) {
  const std::size_t count = schedule.shape.count;
  const bool whole_blocks = piece.count == count;
  for (int distance = 1; distance < p; distance *= 2) {
    const int partner = r ^ distance;
    for (Slice range : block_ranges(group(r, distance, p, extra, whole_blocks), count, piece)) {
      send(schedule, r, partner, at(BufferKind::Output, range), piece.channel);
    }
    for (Slice range : block_ranges(group(partner, distance, p, extra, whole_blocks), count, piece)) {
      recv(schedule, r, partner, at(BufferKind::Output, range), piece.channel);
    }
  }
}

// An extra rank r >= p: folds in (its block to its partner r - p), then receives every block
// but its own from the partner at the end.
void extra_rank(Schedule& schedule, const Piece& piece, int r, int p) {
  const std::size_t count = schedule.shape.count;
  const Range own_input = at(BufferKind::Input, piece.offset, piece.count);
  const Range own_output = at(BufferKind::Output, block_ranges({r}, count, piece).front());
  send(schedule, r, r - p, own_input, piece.channel);
  if (!schedule.shape.in_place) generators::copy(schedule, r, own_input, own_output, piece.channel);
  for (Slice range : block_ranges(all_but(r, schedule.shape.nranks), count, piece)) {
    recv(schedule, r, r - p, at(BufferKind::Output, range), piece.channel);
  }
}

}  // namespace

Schedule rd_allgather(const Case& shape, const Knobs& knobs) {
  Schedule schedule = generators::start(shape, "rd");
  const int n = shape.nranks;
  const int p = generators::floor_power_of_two(n);
  const int extra = n - p;
  check(extra < p, "fewer extra ranks than ranks in the power of two");
  const std::size_t count = shape.count;  // one block

  for (const Piece& piece : generators::pieces(count, knobs)) {
    const int channel = piece.channel;
    const Range own_input = at(BufferKind::Input, piece.offset, piece.count);
    for (int r = 0; r < n; ++r) {
      if (r >= p) {
        extra_rank(schedule, piece, r, p);
        continue;
      }
      const Range own_output = at(BufferKind::Output, block_ranges({r}, count, piece).front());
      if (!shape.in_place) generators::copy(schedule, r, own_input, own_output, channel);
      if (r < extra) {
        recv(schedule, r, p + r, at(BufferKind::Output, block_ranges({p + r}, count, piece).front()), channel);
      }
      recursive_doubling(schedule, piece, r, p, extra);
      if (r < extra) {
        for (Slice range : block_ranges(all_but(p + r, n), count, piece)) {
          send(schedule, r, p + r, at(BufferKind::Output, range), channel);
        }
      }
    }
  }
  return schedule;
}

}  // namespace collcheck
