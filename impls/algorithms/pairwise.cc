// All-to-all (and all-to-all-v) by pairwise exchange: n-1 steps, each rank sending one block and
// receiving one per step, no two ranks sending to the same rank.
#include "impls/algorithms/generators.h"

#include <algorithm>
#include <memory>

#include "impls/algorithms/generator_support.h"
#include "reference/counts.h"

namespace collcheck {

// Block b of a rank's input is what it sends to rank b; block b of its output is what it
// received from rank b.
//
// Pairwise exchange works as follows. In step s (1..n-1) rank r sends its block for rank
// `to` = r+s and receives from rank `from` = r-s (mod n) into output block `from`; its own
// block is a local copy. Every step every rank sends one block and receives one, no two ranks
// sending to the same rank.
//   In place the output is the input, and output block r-s, received in step s, is still to be
// sent in step n-s when n-s > s. Such a block is received into scratch and copied into place
// right after step n-s has sent the input under it.
//
// The data is cut into pieces -- each channel owning a slice of every block, cut into chunks of
// at most knobs.chunk elements -- and the exchange runs whole per piece, each channel on its own
// stream.
//
// All-to-all-v exchanges the same way, block b of rank r's input holding counts[r*n+b] elements
// and block b of its output counts[b*n+r], packed in rank order; each block is cut into pieces
// of its own, and both ends of a message cut the same count. Out of place only. The plan holds the
// counts in 32 bits by row and by column where they fit (`narrow_counts`), so that rank r reads its
// column as one stretch. Where each block is one piece, all-to-all on the longest pair's count is
// its cover (Schedule::cover), through which the prover proves it on rank 0.
//
// All-to-all and all-to-all-v are each written once, as one rank's steps in order (`alltoall_steps`,
// `alltoallv_steps`, made on demand, so that a proof by rotation at 16,384 ranks holds none of the
// n x 2(n-1) steps, and one in pieces none of all-to-all-v's); the stored schedule is those
// sequences made to the end.

namespace {

using generators::at;
using generators::block_of;
using generators::copy_step;
using generators::modulo;
using generators::Piece;
using generators::recv_step;
using generators::send_step;

struct PairwisePlan {
  Case shape;  // all-to-all-v's without its counts where `counts` holds them
  Knobs knobs;
  // All-to-all-v's counts in 32 bits by row and by column (narrow_counts), where they fit: what
  // rank r receives is its column, read as one stretch; else from the case's counts, a row apart.
  NarrowCounts counts;

  // The count of the block rank r sends to rank `to`.
  std::size_t sent(int r, int to) const {
    if (counts.rows.empty()) return pair_count(shape, r, to);
    return counts.rows[pair(r, to)];
  }
  // The count of the block rank r receives from rank `from`.
  std::size_t received(int from, int r) const {
    if (counts.columns.empty()) return pair_count(shape, from, r);
    return counts.columns[pair(r, from)];
  }
  std::size_t pair(int first, int second) const {
    return static_cast<std::size_t>(first) * static_cast<std::size_t>(shape.nranks) + static_cast<std::size_t>(second);
  }
};

// All-to-all-v's plan: the case's fields without its counts where they fit in 32 bits (held by row
// and by column instead: 1 GiB less than a copy of them at 16,384 ranks), else the case itself.
PairwisePlan alltoallv_plan(const Case& shape, const Knobs& knobs) {
  NarrowCounts counts = narrow_counts(shape);
  if (counts.rows.empty()) return PairwisePlan{shape, knobs, {}};
  Case without_counts = uniform_case(shape, shape.count);
  without_counts.collective = shape.collective;
  return PairwisePlan{std::move(without_counts), knobs, std::move(counts)};
}

// All-to-all for rank r, piece by piece, step by step (a StepSequence made on demand; the stored
// schedule is every rank's made to the end). Out of place its own block is copied first.
StepSequence alltoall_steps(std::shared_ptr<const PairwisePlan> plan, int r) {
  const Case& shape = plan->shape;
  const int n = shape.nranks;
  const std::size_t count = shape.count;
  generators::StepBatch batch;
  for (const Piece& piece : generators::pieces(count, plan->knobs)) {
    const int channel = piece.channel;
    const Range own_input = at(BufferKind::Input, block_of(r, count, piece));
    const Range own_output = at(BufferKind::Output, block_of(r, count, piece));
    if (batch.room() < 1) co_yield batch.take();
    if (!shape.in_place) batch.add_copy(own_input, own_output, channel);
    for (int s = 1; s < n; ++s) {
      if (batch.room() < 3) co_yield batch.take();  // a send, a copy and a receive at most
      const int to = modulo(r + s, n);
      const int from = modulo(r - s, n);
      batch.add(send_step(to, at(BufferKind::Input, block_of(to, count, piece)), channel));
      // In place: block `to` arrived in step n-s, before its input was sent; put it in place now.
      if (shape.in_place && n - s < s) {
        batch.add(copy_step(at(BufferKind::Scratch, block_of(to, count, piece)),
                            at(BufferKind::Output, block_of(to, count, piece)), channel));
      }
      const bool early = shape.in_place && s < n - s;
      batch.add(
          recv_step(from, at(early ? BufferKind::Scratch : BufferKind::Output, block_of(from, count, piece)), channel));
    }
  }
  if (!batch.empty()) co_yield batch.take();
}

// All-to-all-v for rank r, step by step, every piece of a step's block in turn. Where rank r's
// blocks start (`sent_at` in its input, `received_at` in its output) is carried from step to step,
// so that a rank reads its row and column of the counts once and holds no table of them: its input
// block for `to` = r+s starts where the one for r+s-1 ended (0 past rank n-1), and its output block
// from `from` = r-s where the one from r-s+1 starts less its count (the column's total less the
// last block's, past rank 0).
// Where rank r's own input block starts (its row of counts up to r), where its own output block
// starts (its column up to r), and how long its output is (the whole column).
struct OwnBlocks {
  std::size_t sent_at = 0, received_at = 0, column_total = 0;
};
OwnBlocks own_blocks(const PairwisePlan& plan, int r) {
  OwnBlocks own;
  for (int b = 0; b < plan.shape.nranks; ++b) {
    const std::size_t received = plan.received(b, r);
    if (b < r) {
      own.sent_at += plan.sent(r, b);
      own.received_at += received;
    }
    own.column_total += received;
  }
  return own;
}

StepSequence alltoallv_steps(std::shared_ptr<const PairwisePlan> plan, int r) {
  const Case& shape = plan->shape;
  const int n = shape.nranks;
  const auto [own_sent_at, own_received_at, column_total] = own_blocks(*plan, r);
  generators::StepBatch batch;
  auto block = [&](std::size_t start, std::size_t count) {
    std::vector<Piece> pieces = generators::pieces(count, plan->knobs);
    for (Piece& piece : pieces) piece.offset += start;
    return pieces;
  };
  const std::size_t own_count = plan->sent(r, r);
  for (const Piece& own : block(own_sent_at, own_count)) {
    if (batch.room() < 1) co_yield batch.take();
    const std::size_t within = own.offset - own_sent_at;
    batch.add_copy(at(BufferKind::Input, own.offset, own.count),
                   at(BufferKind::Output, own_received_at + within, own.count), own.channel);
  }
  std::size_t sent_at = own_sent_at + own_count;  // where the block for r+1 starts
  std::size_t received_at = own_received_at;      // where the block from r+1-s starts, at step s
  for (int s = 1; s < n; ++s) {
    const int to = modulo(r + s, n);
    const int from = modulo(r - s, n);
    if (to == 0) sent_at = 0;
    const std::size_t sent = plan->sent(r, to);
    for (const Piece& piece : block(sent_at, sent)) {
      if (batch.room() < 1) co_yield batch.take();
      batch.add(send_step(to, at(BufferKind::Input, piece.offset, piece.count), piece.channel));
    }
    sent_at += sent;
    const std::size_t received = plan->received(from, r);
    received_at = (from == n - 1 ? column_total : received_at) - received;
    for (const Piece& piece : block(received_at, received)) {
      if (batch.room() < 1) co_yield batch.take();
      batch.add(recv_step(from, at(BufferKind::Output, piece.offset, piece.count), piece.channel));
    }
  }
  if (!batch.empty()) co_yield batch.take();
}

}  // namespace

Schedule pairwise_alltoall_on_demand(const Case& shape, const Knobs& knobs) {
  auto plan = std::make_shared<const PairwisePlan>(PairwisePlan{shape, knobs, {}});
  Schedule schedule = generators::on_demand(shape, "pairwise", [plan](int r) { return alltoall_steps(plan, r); });
  if (shape.in_place && shape.nranks > 2) {
    for (Participant& participant : schedule.participants)
      participant.scratch = static_cast<std::size_t>(shape.nranks) * shape.count;
  }
  return schedule;
}

Schedule pairwise_alltoall(const Case& shape, const Knobs& knobs) {
  return stored(pairwise_alltoall_on_demand(shape, knobs));
}

Schedule pairwise_alltoallv_on_demand(const Case& shape, const Knobs& knobs) {
  generators::check(
      shape.counts.size() == static_cast<std::size_t>(shape.nranks) * static_cast<std::size_t>(shape.nranks),
      "alltoallv has a count per pair of ranks");
  auto plan = std::make_shared<const PairwisePlan>(alltoallv_plan(shape, knobs));
  Schedule schedule = generators::on_demand(shape, "pairwise", [plan](int r) { return alltoallv_steps(plan, r); });
  if (const std::size_t longest = pairwise_alltoallv_cover(shape, knobs)) {
    Case covering = uniform_case(shape, longest);
    schedule.cover = BlockCover{1, [covering, knobs] { return pairwise_alltoall_on_demand(covering, knobs); }};
  }
  return schedule;
}

// Blocks of unequal length: the cover is all-to-all on the longest pair's count, where each block
// is one piece (one channel, chunks no shorter than the longest block), so that each rank's steps
// come in the cover's order: its own block, then a send and a receive per step.
std::size_t pairwise_alltoallv_cover(const Case& shape, const Knobs& knobs) {
  const std::size_t longest = shape.counts.empty() ? 0 : *std::max_element(shape.counts.begin(), shape.counts.end());
  return knobs.channels == 1 && (knobs.chunk == 0 || knobs.chunk >= longest) ? longest : 0;
}

Schedule pairwise_alltoallv(const Case& shape, const Knobs& knobs) {
  return stored(pairwise_alltoallv_on_demand(shape, knobs));
}

}  // namespace collcheck
