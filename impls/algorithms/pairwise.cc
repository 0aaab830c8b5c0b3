// All-to-all by pairwise exchange: n-1 steps, each rank sending one block and receiving one per
// step, no two ranks sending to the same rank.
#include "impls/algorithms/generators.h"

#include "impls/algorithms/generator_support.h"

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

namespace {

using generators::at;
using generators::block_of;
using generators::modulo;
using generators::Piece;
using generators::recv;
using generators::send;

}  // namespace

Schedule pairwise_alltoall(const Case& shape, const Knobs& knobs) {
  Schedule schedule = generators::start(shape, "pairwise");
  const int n = shape.nranks;
  const std::size_t count = shape.count;
  if (shape.in_place && n > 2) {
    for (Participant& participant : schedule.participants) participant.scratch = static_cast<std::size_t>(n) * count;
  }
  for (const Piece& piece : generators::pieces(count, knobs)) {
    const int channel = piece.channel;
    for (int r = 0; r < n; ++r) {
      if (!shape.in_place) {
        generators::copy(schedule, r, at(BufferKind::Input, block_of(r, count, piece)),
                         at(BufferKind::Output, block_of(r, count, piece)), channel);
      }
      for (int s = 1; s < n; ++s) {
        const int to = modulo(r + s, n);
        const int from = modulo(r - s, n);
        send(schedule, r, to, at(BufferKind::Input, block_of(to, count, piece)), channel);
        // In place: block `to` arrived in step n-s, before its input was sent; put it in place now.
        if (shape.in_place && n - s < s) {
          generators::copy(schedule, r, at(BufferKind::Scratch, block_of(to, count, piece)),
                           at(BufferKind::Output, block_of(to, count, piece)), channel);
        }
        const bool early = shape.in_place && s < n - s;
        recv(schedule, r, from, at(early ? BufferKind::Scratch : BufferKind::Output, block_of(from, count, piece)),
             channel);
      }
    }
  }
  return schedule;
}

}  // namespace collcheck
