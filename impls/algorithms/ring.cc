// The ring algorithms: all-reduce, all-gather and reduce-scatter (and their v forms) passing
// chunks around the ranks 0 -> 1 -> ... -> n-1 -> 0, each channel running its own ring over its own slice.
#include "impls/algorithms/generators.h"

#include <memory>
#include <span>
#include <utility>

#include "impls/algorithms/generator_support.h"
#include "reference/counts.h"

namespace collcheck {

// The ring works as follows. The ranks stand in a circle: rank r sends only to `next`
// (r+1 mod n) and receives only from `previous` (r-1 mod n). The data a channel owns is cut
// into n `blocks` (slice(): sizes differ by at most one, so any count works).
//
// Reduce-scatter phase, n-1 steps: at step s rank r sends block r-s and receives block
// r-s-1, which it reduces with its own input of that block. A block therefore travels once
// round the circle gathering one contribution per rank, and after the last step rank r holds
// the complete reduction of block r+1 (all-reduce) -- or, in the reduce-scatter collective,
// where every block is shifted one further, of block r, which is where NCCL wants it.
//
// All-gather phase, n-1 steps: at step s rank r sends block r+1-s (all-reduce; r-s in the
// all-gather collective) and receives block r-s (r-s-1) into its output. Every complete
// block goes round once more, landing on every rank.
//
// Pipelining: every block is cut into chunks of at most knobs.chunk elements, and `round` k
// moves the k-th chunk of every block through all the steps. A rank's steps are ordered round
// by round; sends are buffered, so a rank starts round k+1 while its neighbours finish round k.
// Chunks that are empty (count smaller than the pipeline) are skipped at both ends of the
// message, since sender and receiver compute the same chunk.
//
// In place, the input is the output (all-reduce), lies at block r of the output (all-gather),
// or the output lies at block r of the input (reduce-scatter). Every input element is read
// before its aliased output element is written: all-reduce writes block b with the reduction
// that reads input block b, all-gather never receives block r, reduce-scatter writes its output
// only with the final reduction that reads it.
//
// The v forms (allgatherv, reducescatterv) run the same steps with block b holding counts[b]
// elements at block_start(b): blocks differ in size, so each is cut into pieces of its own, and
// a rank's steps go step by step, every piece of the step's block in turn. Empty blocks send
// nothing. They run out of place only (the case refuses in place).
//
// Each collective is written once, as one rank's steps in order (a StepSequence made on demand,
// `*_steps` below); the stored schedule is those sequences made to the end, rank by rank.

namespace {

using generators::at;
using generators::block_of;
using generators::check;
using generators::copy_needed;
using generators::copy_step;
using generators::modulo;
using generators::recv_reduce_step;
using generators::recv_step;
using generators::send_step;

// What every rank's steps are made from, shared by all ranks' sequences.
struct RingPlan {
  Case shape;
  Knobs knobs;
  std::vector<std::size_t> starts;  // the v forms: block_starts(shape)
  // The v forms: every block's pieces, block b's from piece_starts[b] to piece_starts[b + 1], made
  // once for every rank where there are at most kPlannedPieces (else each rank makes them as it goes).
  std::vector<generators::Piece> pieces;
  std::vector<std::size_t> piece_starts;
};
constexpr std::size_t kPlannedPieces = std::size_t{1} << 20;
using SharedPlan = std::shared_ptr<const RingPlan>;
using RankSteps = StepSequence (*)(SharedPlan plan, int r);

// The pieces of block b of a v-collective, as offsets into the whole buffer.
std::vector<generators::Piece> block_pieces(const std::vector<std::size_t>& starts, int b, const Knobs& knobs) {
  const auto index = static_cast<std::size_t>(b);
  std::vector<generators::Piece> pieces = generators::pieces(starts[index + 1] - starts[index], knobs);
  for (generators::Piece& piece : pieces) piece.offset += starts[index];
  return pieces;
}

// Every block's pieces at once into the plan, where they are few enough.
void plan_pieces(RingPlan& plan) {
  plan.piece_starts.push_back(0);
  for (int b = 0; b + 1 < static_cast<int>(plan.starts.size()); ++b) {
    const std::vector<generators::Piece> pieces = block_pieces(plan.starts, b, plan.knobs);
    if (plan.pieces.size() + pieces.size() > kPlannedPieces) {
      plan.pieces.clear();
      plan.piece_starts.clear();
      return;
    }
    plan.pieces.insert(plan.pieces.end(), pieces.begin(), pieces.end());
    plan.piece_starts.push_back(plan.pieces.size());
  }
}

// Block b's pieces: the plan's, or made into `made` where the plan has none.
std::span<const generators::Piece> pieces_of(const RingPlan& plan, int b, std::vector<generators::Piece>& made) {
  if (plan.piece_starts.empty()) {
    made = block_pieces(plan.starts, b, plan.knobs);
    return made;
  }
  const auto index = static_cast<std::size_t>(b);
  return std::span<const generators::Piece>(plan.pieces)
      .subspan(plan.piece_starts[index], plan.piece_starts[index + 1] - plan.piece_starts[index]);
}

// All-reduce's chunks of one `round` of one channel: the channel's `part` cut into n blocks
// (slice(): the first `larger` blocks hold `base` + 1 elements, the rest `base`). Made once per
// round, so that a step costs no division: every block's chunk of the round is one of two.
struct RingChunks {
  Slice part;
  int nranks;
  std::size_t base, larger;
  Slice of_larger, of_smaller;  // the round's chunk of a block of base + 1, and of base elements

  RingChunks(Slice channel_part, int n, std::size_t chunk, std::size_t round)
      : part(channel_part), nranks(n), base(channel_part.count / static_cast<std::size_t>(n)),
        larger(channel_part.count % static_cast<std::size_t>(n)),
        of_larger(generators::chunk_of(base + 1, chunk, round)), of_smaller(generators::chunk_of(base, chunk, round)) {}

  // This round's chunk of block b (b in -n..2n-1: taken mod n), as offsets into the whole buffer.
  Slice of_block(int b) const {
    if (b < 0) b += nranks;
    if (b >= nranks) b -= nranks;
    const auto index = static_cast<std::size_t>(b);
    const bool is_larger = index < larger;
    const std::size_t start = index * base + (is_larger ? index : larger);
    const Slice piece = is_larger ? of_larger : of_smaller;
    return Slice{part.offset + start + piece.offset, piece.count};
  }
};

// The rounds of a channel owning `part`: its block 0 is the largest, so it has the most chunks.
std::size_t rounds_of(Slice part, int n, std::size_t chunk) {
  return generators::chunk_count(slice(part.count, static_cast<std::size_t>(n), 0).count, chunk);
}

// A single rank copies its whole input of `count` elements into its output, out of place.
StepSequence alone_steps(const Case& shape, std::size_t count) {
  const Range input = at(BufferKind::Input, 0, count);
  const Range output = at(BufferKind::Output, 0, count);
  if (!shape.in_place && copy_needed(input, output)) co_yield copy_step(input, output, 0);
}

// One turn of a round of all-reduce for rank r: the chunk it sends to `next` and the one it takes
// from `previous` (either may be empty). Turns 0..n-2 are the reduce-scatter phase (block r-s goes
// to `next`, block r-s-1 comes from `previous` and is reduced with the rank's input), turns
// n-1..2n-3 the all-gather phase, which starts from the complete block r+1.
struct RingTurn {
  Slice sent, received;
  bool gathering = false;
};

RingTurn allreduce_turn(const RingChunks& chunks, int r, int turn) {
  const int n = chunks.nranks;
  const bool gathering = turn >= n - 1;
  const int s = gathering ? turn - (n - 1) : turn;
  return RingTurn{chunks.of_block(gathering ? r + 1 - s : r - s), chunks.of_block(gathering ? r - s : r - s - 1),
                  gathering};
}

// The turn's receive: into the output, reduced with the rank's input while the blocks gather
// their contributions.
Step ring_receive(const RingTurn& made, int previous, int channel) {
  if (made.gathering) return recv_step(previous, at(BufferKind::Output, made.received), channel);
  return recv_reduce_step(previous, at(BufferKind::Input, made.received), at(BufferKind::Output, made.received),
                          channel);
}

// Where a turn's steps go: the peers, the channel, and whether the send is the rank's own input.
struct TurnSteps {
  int next, previous, channel;
  bool first;
};

// Adds the turn's send and receive (those whose chunk holds elements) to `batch`.
void add_turn(generators::StepBatch& batch, const RingTurn& turned, const TurnSteps& where) {
  if (turned.sent.count > 0)
    batch.add(
        send_step(where.next, at(where.first ? BufferKind::Input : BufferKind::Output, turned.sent), where.channel));
  if (turned.received.count > 0) batch.add(ring_receive(turned, where.previous, where.channel));
}

// All-reduce for rank r, channel by channel, round by round, turn by turn: one coroutine for all
// of it (a round's own, resumed through this one, cost a fifth of a simulation's time at 2048
// ranks). Turn 0 sends the rank's own input; later turns forward the partial or the block just
// taken. Steps go out a StepBatch at a time (the prover makes a billion at 16,384 ranks).
StepSequence allreduce_steps(SharedPlan plan, int r) {
  const Case& shape = plan->shape;
  const Knobs& knobs = plan->knobs;
  const int n = shape.nranks;
  if (n == 1) {
    for (StepSequence alone = alone_steps(shape, shape.count); alone.next();) co_yield alone.step();
    co_return;
  }
  const int next = r + 1 == n ? 0 : r + 1;
  const int previous = r == 0 ? n - 1 : r - 1;
  generators::StepBatch batch;
  for (int channel = 0; channel < knobs.channels; ++channel) {
    const Slice part = slice(shape.count, static_cast<std::size_t>(knobs.channels), static_cast<std::size_t>(channel));
    const std::size_t rounds = rounds_of(part, n, knobs.chunk);
    for (std::size_t round = 0; round < rounds; ++round) {
      const RingChunks chunks{part, n, knobs.chunk, round};
      for (int turn = 0; turn < 2 * (n - 1); ++turn) {
        add_turn(batch, allreduce_turn(chunks, r, turn), {next, previous, channel, turn == 0});
        if (batch.room() < 2) co_yield batch.take();
      }
    }
  }
  if (!batch.empty()) co_yield batch.take();
}

StepSequence allgather_steps(SharedPlan plan, int r) {
  const Case& shape = plan->shape;
  const int n = shape.nranks;
  const std::size_t count = shape.count;  // one block: what each rank contributes
  const int next = modulo(r + 1, n);
  const int previous = modulo(r - 1, n);
  generators::StepBatch batch;
  for (const generators::Piece& piece : generators::pieces(count, plan->knobs)) {
    const Range own_input = at(BufferKind::Input, piece.offset, piece.count);
    // Step 0 sends the rank's own input; its local copy follows, off the ring's path.
    if (batch.room() < 2) co_yield batch.take();
    if (n > 1) batch.add(send_step(next, own_input, piece.channel));
    const Range own_output = at(BufferKind::Output, block_of(r, count, piece));
    if (!shape.in_place) batch.add_copy(own_input, own_output, piece.channel);
    for (int s = 0; s < n - 1; ++s) {
      if (batch.room() < 2) co_yield batch.take();
      // Later steps forward the block received in the step before.
      if (s > 0)
        batch.add(send_step(next, at(BufferKind::Output, block_of(modulo(r - s, n), count, piece)), piece.channel));
      const int received = modulo(r - s - 1, n);
      check(received != r, "all-gather never receives the rank's own block");
      batch.add(recv_step(previous, at(BufferKind::Output, block_of(received, count, piece)), piece.channel));
    }
  }
  if (!batch.empty()) co_yield batch.take();
}

StepSequence reducescatter_steps(SharedPlan plan, int r) {
  const Case& shape = plan->shape;
  const int n = shape.nranks;
  const std::size_t count = shape.count;  // one block: what each rank ends with
  if (n == 1) {
    for (StepSequence alone = alone_steps(shape, count); alone.next();) co_yield alone.step();
    co_return;
  }
  const int next = modulo(r + 1, n);
  const int previous = modulo(r - 1, n);
  generators::StepBatch batch;
  for (const generators::Piece& piece : generators::pieces(count, plan->knobs)) {
    for (int s = 0; s < n - 1; ++s) {
      if (batch.room() < 2) co_yield batch.take();
      const Slice sent = block_of(modulo(r - s - 1, n), count, piece);
      batch.add(send_step(next, at(s == 0 ? BufferKind::Input : BufferKind::Scratch, sent), piece.channel));
      const int received = modulo(r - s - 2, n);
      const bool last = s == n - 2;
      check(last == (received == r), "the last step completes the rank's own block, and only it");
      const Range into = last ? at(BufferKind::Output, piece.offset, piece.count)
                              : at(BufferKind::Scratch, block_of(received, count, piece));
      batch.add(
          recv_reduce_step(previous, at(BufferKind::Input, block_of(received, count, piece)), into, piece.channel));
    }
  }
  if (!batch.empty()) co_yield batch.take();
}

StepSequence allgatherv_steps(SharedPlan plan, int r) {
  const int n = plan->shape.nranks;
  const std::vector<std::size_t>& starts = plan->starts;
  const int next = modulo(r + 1, n);
  const int previous = modulo(r - 1, n);
  std::vector<generators::Piece> made;  // a block's pieces, where the plan has none
  generators::StepBatch batch;
  // Step 0 sends the rank's own input; its local copy goes to block r of the output.
  for (const generators::Piece& own : pieces_of(*plan, r, made)) {
    if (batch.room() < 2) co_yield batch.take();
    const Range own_input = at(BufferKind::Input, own.offset - starts[static_cast<std::size_t>(r)], own.count);
    if (n > 1) batch.add(send_step(next, own_input, own.channel));
    batch.add_copy(own_input, at(BufferKind::Output, own.offset, own.count), own.channel);
  }
  for (int s = 0; s < n - 1; ++s) {
    // Later steps forward the block received in the step before.
    if (s > 0) {
      for (const generators::Piece& piece : pieces_of(*plan, modulo(r - s, n), made)) {
        if (batch.room() < 1) co_yield batch.take();
        batch.add(send_step(next, at(BufferKind::Output, piece.offset, piece.count), piece.channel));
      }
    }
    const int received = modulo(r - s - 1, n);
    check(received != r, "all-gather never receives the rank's own block");
    for (const generators::Piece& piece : pieces_of(*plan, received, made)) {
      if (batch.room() < 1) co_yield batch.take();
      batch.add(recv_step(previous, at(BufferKind::Output, piece.offset, piece.count), piece.channel));
    }
  }
  if (!batch.empty()) co_yield batch.take();
}

StepSequence reducescatterv_steps(SharedPlan plan, int r) {
  const int n = plan->shape.nranks;
  const std::vector<std::size_t>& starts = plan->starts;
  if (n == 1) {
    for (StepSequence alone = alone_steps(plan->shape, starts[1]); alone.next();) co_yield alone.step();
    co_return;
  }
  const int next = modulo(r + 1, n);
  const int previous = modulo(r - 1, n);
  const std::size_t own_start = starts[static_cast<std::size_t>(r)];
  std::vector<generators::Piece> made;  // a block's pieces, where the plan has none
  generators::StepBatch batch;
  for (int s = 0; s < n - 1; ++s) {
    for (const generators::Piece& piece : pieces_of(*plan, modulo(r - s - 1, n), made)) {
      if (batch.room() < 1) co_yield batch.take();
      batch.add(send_step(next, at(s == 0 ? BufferKind::Input : BufferKind::Scratch, piece.offset, piece.count),
                          piece.channel));
    }
    const int received = modulo(r - s - 2, n);
    const bool last = s == n - 2;
    check(last == (received == r), "the last step completes the rank's own block, and only it");
    for (const generators::Piece& piece : pieces_of(*plan, received, made)) {
      if (batch.room() < 1) co_yield batch.take();
      const Range into = last ? at(BufferKind::Output, piece.offset - own_start, piece.count)
                              : at(BufferKind::Scratch, piece.offset, piece.count);
      batch.add(recv_reduce_step(previous, at(BufferKind::Input, piece.offset, piece.count), into, piece.channel));
    }
  }
  if (!batch.empty()) co_yield batch.take();
}

// The schedule whose rank r's steps are rank_steps(plan, r), made on demand; `scratch` elements each.
Schedule ring_on_demand(const Case& shape, const Knobs& knobs, RankSteps rank_steps, std::size_t scratch = 0) {
  std::vector<std::size_t> starts;
  if (per_rank_counts(shape.collective)) {
    starts = block_starts(shape);
    check(starts.size() == static_cast<std::size_t>(shape.nranks) + 1, "a v-collective has a count per rank");
  }
  auto planned = std::make_shared<RingPlan>(RingPlan{shape, knobs, std::move(starts), {}, {}});
  if (!planned->starts.empty()) plan_pieces(*planned);
  std::shared_ptr<const RingPlan> plan = std::move(planned);
  Schedule schedule = generators::on_demand(shape, "ring", [plan, rank_steps](int r) { return rank_steps(plan, r); });
  for (Participant& participant : schedule.participants) participant.scratch = scratch;
  return schedule;
}

// Partial reductions of the blocks a rank forwards live in scratch, at the block's place.
std::size_t forwarded_partials(int n, std::size_t elements) { return n > 2 ? elements : 0; }

}  // namespace

Schedule ring_allreduce_on_demand(const Case& shape, const Knobs& knobs) {
  Schedule schedule = ring_on_demand(shape, knobs, allreduce_steps);
  if (const std::size_t count = ring_allreduce_cover(shape, knobs)) {
    Case covering = shape;
    covering.count = count;
    const auto parts = static_cast<std::size_t>(knobs.channels);
    schedule.cover = BlockCover{parts, [covering, knobs] { return ring_on_demand(covering, knobs, allreduce_steps); }};
  }
  return schedule;
}

// Blocks of unequal length: the cover is the ring on every block as long as the longest (block 0 of
// part 0), so that the prover can still use the rotation.
std::size_t ring_allreduce_cover(const Case& shape, const Knobs& knobs) {
  const auto n = static_cast<std::size_t>(shape.nranks);
  const auto parts = static_cast<std::size_t>(std::max(knobs.channels, 1));
  if (n <= 1 || shape.count == 0 || shape.count % (parts * n) == 0) return 0;
  return cover_count(shape.count, parts, n);
}
Schedule ring_allgather_on_demand(const Case& shape, const Knobs& knobs) {
  return ring_on_demand(shape, knobs, allgather_steps);
}
Schedule ring_reducescatter_on_demand(const Case& shape, const Knobs& knobs) {
  return ring_on_demand(shape, knobs, reducescatter_steps,
                        forwarded_partials(shape.nranks, static_cast<std::size_t>(shape.nranks) * shape.count));
}
Schedule ring_allgatherv_on_demand(const Case& shape, const Knobs& knobs) {
  return ring_on_demand(shape, knobs, allgatherv_steps);
}
Schedule ring_reducescatterv_on_demand(const Case& shape, const Knobs& knobs) {
  return ring_on_demand(shape, knobs, reducescatterv_steps, forwarded_partials(shape.nranks, shape.count));
}

Schedule ring_allreduce(const Case& shape, const Knobs& knobs) {
  return stored(ring_allreduce_on_demand(shape, knobs));
}
Schedule ring_allgather(const Case& shape, const Knobs& knobs) {
  return stored(ring_allgather_on_demand(shape, knobs));
}
Schedule ring_reducescatter(const Case& shape, const Knobs& knobs) {
  return stored(ring_reducescatter_on_demand(shape, knobs));
}
Schedule ring_allgatherv(const Case& shape, const Knobs& knobs) {
  return stored(ring_allgatherv_on_demand(shape, knobs));
}
Schedule ring_reducescatterv(const Case& shape, const Knobs& knobs) {
  return stored(ring_reducescatterv_on_demand(shape, knobs));
}

}  // namespace collcheck
