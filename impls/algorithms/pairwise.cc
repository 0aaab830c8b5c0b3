// All-to-all (and all-to-all-v) by pairwise exchange: n-1 steps, each rank sending one block and
// receiving one per step, no two ranks sending to the same rank.
#include "impls/algorithms/generators.h"

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
// of its own, and both ends of a message cut the same count. Out of place only.
//
// All-to-all is written once, as one rank's steps in order (`alltoall_steps`, made on demand, so
// that a proof by rotation at 16,384 ranks holds none of the n x 2(n-1) steps); the stored
// schedule is those sequences made to the end.

namespace {

using generators::at;
using generators::block_of;
using generators::copy_step;
using generators::modulo;
using generators::Piece;
using generators::recv;
using generators::recv_step;
using generators::send;
using generators::send_step;

struct PairwisePlan {
  Case shape;
  Knobs knobs;
};

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

}  // namespace

Schedule pairwise_alltoall_on_demand(const Case& shape, const Knobs& knobs) {
  auto plan = std::make_shared<const PairwisePlan>(PairwisePlan{shape, knobs});
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

Schedule pairwise_alltoallv(const Case& shape, const Knobs& knobs) {
  Schedule schedule = generators::start(shape, "pairwise");
  const int n = shape.nranks;
  generators::check(shape.counts.size() == static_cast<std::size_t>(n) * static_cast<std::size_t>(n),
                    "alltoallv has a count per pair of ranks");
  for (int r = 0; r < n; ++r) {
    // Where rank r's input block for rank b, and its output block from rank b, start.
    std::vector<std::size_t> sent_at(static_cast<std::size_t>(n)), received_at(static_cast<std::size_t>(n));
    std::size_t sent = 0, received = 0;
    for (int b = 0; b < n; ++b) {
      sent_at[static_cast<std::size_t>(b)] = sent;
      received_at[static_cast<std::size_t>(b)] = received;
      sent += pair_count(shape, r, b);
      received += pair_count(shape, b, r);
    }
    auto block = [&](const std::vector<std::size_t>& starts, int b, std::size_t count) {
      std::vector<Piece> pieces = generators::pieces(count, knobs);
      for (Piece& piece : pieces) piece.offset += starts[static_cast<std::size_t>(b)];
      return pieces;
    };
    for (const Piece& own : block(sent_at, r, pair_count(shape, r, r))) {
      const std::size_t within = own.offset - sent_at[static_cast<std::size_t>(r)];
      generators::copy(schedule, r, at(BufferKind::Input, own.offset, own.count),
                       at(BufferKind::Output, received_at[static_cast<std::size_t>(r)] + within, own.count),
                       own.channel);
    }
    for (int s = 1; s < n; ++s) {
      const int to = modulo(r + s, n);
      const int from = modulo(r - s, n);
      for (const Piece& piece : block(sent_at, to, pair_count(shape, r, to))) {
        send(schedule, r, to, at(BufferKind::Input, piece.offset, piece.count), piece.channel);
      }
      for (const Piece& piece : block(received_at, from, pair_count(shape, from, r))) {
        recv(schedule, r, from, at(BufferKind::Output, piece.offset, piece.count), piece.channel);
      }
    }
  }
  return schedule;
}

}  // namespace collcheck
