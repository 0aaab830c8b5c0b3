// All-to-all by Bruck's algorithm: ceil(log2 n) rounds, many blocks each, through a rotated copy
// in scratch.
#include "impls/algorithms/generators.h"

#include <algorithm>
#include <vector>

#include "impls/algorithms/generator_support.h"

namespace collcheck {

// Block b of a rank's input is what it sends to rank b; block b of its output is what it
// received from rank b.
//
// Bruck's algorithm works as follows. First a local `rotation`: rank r puts its block for rank
// r+j at index j of a temporary array in scratch, so index j means "j ranks further on".
// Then in the round of `distance` d (1, 2, 4, ... below n) every index j with bit d set moves d
// ranks on: rank r packs those blocks into one message to r+d, and unpacks the message from
// r-d into the same indices. After all rounds an index j has travelled exactly j ranks, so
// rank r's index j holds the block rank r-j meant for it; the final rotation copies it to
// output block r-j. Each round moves about half the data in one message: ceil(log2 n)
// messages instead of n-1, for any n. A round that moves one index sends it without packing.
//   In place the rotation reads the whole input into scratch before anything is written; the
// own block (index 0) never moves and stays where it is.
//
// The data is cut into pieces -- each channel owning a slice of every block, cut into chunks of
// at most knobs.chunk elements -- and the rounds run whole per piece, each channel on its own
// stream.

namespace {

using generators::at;
using generators::block_of;
using generators::check;
using generators::modulo;
using generators::Piece;
using generators::recv;
using generators::send;

void copy_whole(Schedule& schedule, const Case& shape) {
  const std::size_t size = input_elements(shape);
  if (!shape.in_place) {
    generators::copy(schedule, 0, at(BufferKind::Input, 0, size), at(BufferKind::Output, 0, size), 0);
  }
}

}  // namespace

Schedule bruck_alltoall(const Case& shape, const Knobs& knobs) {
  Schedule schedule = generators::start(shape, "bruck");
  const int n = shape.nranks;
  const std::size_t count = shape.count;
  if (n == 1) {
    copy_whole(schedule, shape);
    return schedule;
  }
  // The indices each round moves.
  std::vector<std::vector<int>> moved;
  std::size_t most = 0;  // the most indices one round moves
  for (int distance = 1; distance < n; distance *= 2) {
    std::vector<int> indices;
    for (int j = 1; j < n; ++j) {
      if ((j & distance) != 0) indices.push_back(j);
    }
    check(!indices.empty(), "every round moves some index");
    most = std::max(most, indices.size());
    moved.push_back(std::move(indices));
  }
  check(static_cast<int>(moved.size()) == generators::ceil_log2(n), "ceil(log2 n) rounds");

  // Scratch: the rotated array (n blocks), then per channel a packing and an unpacking area,
  // each `most` pieces of that channel's largest piece.
  const std::size_t rotated_size = static_cast<std::size_t>(n) * count;
  std::vector<std::size_t> staging(static_cast<std::size_t>(knobs.channels));  // where channel c's areas start
  std::vector<std::size_t> largest(static_cast<std::size_t>(knobs.channels));  // channel c's largest piece
  std::size_t end = rotated_size;
  for (int channel = 0; channel < knobs.channels; ++channel) {
    const auto c = static_cast<std::size_t>(channel);
    const std::size_t part = slice(count, static_cast<std::size_t>(knobs.channels), c).count;
    largest[c] = knobs.chunk == 0 ? part : std::min(knobs.chunk, part);
    staging[c] = end;
    end += 2 * most * largest[c];
  }
  for (Participant& participant : schedule.participants) participant.scratch = end;

  for (const Piece& piece : generators::pieces(count, knobs)) {
    const int channel = piece.channel;
    const auto c = static_cast<std::size_t>(channel);
    check(piece.count <= largest[c], "a piece fits its channel's staging areas");
    auto rotated = [&](int j) { return at(BufferKind::Scratch, block_of(j, count, piece)); };
    auto packed = [&](std::size_t i) { return at(BufferKind::Scratch, staging[c] + i * piece.count, piece.count); };
    auto unpacked = [&](std::size_t i) {
      return at(BufferKind::Scratch, staging[c] + most * largest[c] + i * piece.count, piece.count);
    };
    for (int r = 0; r < n; ++r) {
      // Rotation: index j holds the block for rank r+j; index 0 goes straight to the output.
      if (!shape.in_place) {
        generators::copy(schedule, r, at(BufferKind::Input, block_of(r, count, piece)),
                         at(BufferKind::Output, block_of(r, count, piece)), channel);
      }
      for (int j = 1; j < n; ++j) {
        generators::copy(schedule, r, at(BufferKind::Input, block_of(modulo(r + j, n), count, piece)), rotated(j),
                         channel);
      }
      for (std::size_t round = 0; round < moved.size(); ++round) {
        const int distance = 1 << round;
        const std::vector<int>& indices = moved[round];
        const int to = modulo(r + distance, n);
        const int from = modulo(r - distance, n);
        if (indices.size() == 1) {
          send(schedule, r, to, rotated(indices[0]), channel);
          recv(schedule, r, from, rotated(indices[0]), channel);
          continue;
        }
        for (std::size_t i = 0; i < indices.size(); ++i) {
          generators::copy(schedule, r, rotated(indices[i]), packed(i), channel);
        }
        const std::size_t message = indices.size() * piece.count;
        send(schedule, r, to, at(BufferKind::Scratch, staging[c], message), channel);
        recv(schedule, r, from, at(BufferKind::Scratch, staging[c] + most * largest[c], message), channel);
        for (std::size_t i = 0; i < indices.size(); ++i) {
          generators::copy(schedule, r, unpacked(i), rotated(indices[i]), channel);
        }
      }
      // Inverse rotation: index j came from rank r-j.
      for (int j = 1; j < n; ++j) {
        generators::copy(schedule, r, rotated(j), at(BufferKind::Output, block_of(modulo(r - j, n), count, piece)),
                         channel);
      }
    }
  }
  return schedule;
}

}  // namespace collcheck
