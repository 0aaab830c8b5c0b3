// The chain algorithms: broadcast down and reduce up a pipelined line of ranks that starts
// (broadcast) or ends (reduce) at the root.
#include "impls/algorithms/generators.h"

#include "impls/algorithms/generator_support.h"

namespace collcheck {

// The chain works as follows. The ranks stand in a line ordered by their `position`, their
// distance from the root going up the ranks (wrapping at n). The data is cut into chunks
// of at most knobs.chunk elements (each channel owning a slice of it, on its own stream).
//
// Broadcast: the root sits at position 0 and sends every chunk of its input to position 1;
// each rank after it receives a chunk into its output and, unless it is the last, forwards
// that chunk to the next position at once. While chunk k moves down the line, chunk k+1
// follows one hop behind: the pipeline.
//
// Reduce: the line runs the other way round, so it ends at the root: position 0 is the rank
// after the root, position n-1 the root. The first rank sends its input chunk; each rank after
// it receives the partial reduction of the positions before it, adds its own input chunk, and
// forwards the result (non-root ranks have no output, so the partial lives in scratch); the
// root's reduction lands in its output.
//
// In place the input is the output; each rank reads an input chunk before (or while, as the
// same element) it writes that chunk of the output, and non-root ranks never write it.

namespace {

using generators::check;
using generators::input;
using generators::output;
using generators::Piece;
using generators::recv;
using generators::recv_reduce;
using generators::scratch;
using generators::send;

}  // namespace

Schedule chain_broadcast(const Case& shape, const Knobs& knobs) {
  Schedule schedule = generators::start(shape, "chain");
  const int n = shape.nranks;
  auto rank_at = [&](int position) { return generators::absolute(position, shape.root, n); };
  for (const Piece& piece : generators::pieces(shape.count, knobs)) {
    // The root starts the chunk down the line before its own local copy.
    if (n > 1) send(schedule, shape.root, rank_at(1), input(piece), piece.channel);
    if (!shape.in_place) generators::copy(schedule, shape.root, input(piece), output(piece), piece.channel);
    for (int position = 1; position < n; ++position) {
      const int rank = rank_at(position);
      recv(schedule, rank, rank_at(position - 1), output(piece), piece.channel);
      if (position + 1 < n) send(schedule, rank, rank_at(position + 1), output(piece), piece.channel);
    }
  }
  return schedule;
}

Schedule chain_reduce(const Case& shape, const Knobs& knobs) {
  Schedule schedule = generators::start(shape, "chain");
  const int n = shape.nranks;
  // Position n-1 is the root, position 0 the rank after it.
  auto rank_at = [&](int position) { return generators::absolute(position + 1, shape.root, n); };
  check(rank_at(n - 1) == shape.root, "the reduce chain ends at the root");
  // Ranks in the middle of the line hold a partial reduction.
  for (int position = 1; position + 1 < n; ++position) {
    schedule.participants[static_cast<std::size_t>(rank_at(position))].scratch = shape.count;
  }
  for (const Piece& piece : generators::pieces(shape.count, knobs)) {
    if (n == 1) {
      if (!shape.in_place) generators::copy(schedule, shape.root, input(piece), output(piece), piece.channel);
      continue;
    }
    send(schedule, rank_at(0), rank_at(1), input(piece), piece.channel);
    for (int position = 1; position < n; ++position) {
      const int rank = rank_at(position);
      const bool root = position == n - 1;
      const Range partial = root ? output(piece) : scratch(piece);
      recv_reduce(schedule, rank, rank_at(position - 1), input(piece), partial, piece.channel);
      if (!root) send(schedule, rank, rank_at(position + 1), partial, piece.channel);
    }
  }
  return schedule;
}

}  // namespace collcheck
