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
// rank r's index j holds the block rank r-j meant for it; the `final rotation` copies it to
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
using generators::copy_alone;
using generators::modulo;
using generators::Piece;
using generators::recv;
using generators::send;

// The indices each round moves: in the round of distance d, every index j with bit d set.
std::vector<std::vector<int>> moved_indices(int n) {
  std::vector<std::vector<int>> moved;
  for (int distance = 1; distance < n; distance *= 2) {
    std::vector<int> indices;
    for (int j = 1; j < n; ++j) {
      if ((j & distance) != 0) indices.push_back(j);
    }
    check(!indices.empty(), "every round moves some index");
    moved.push_back(std::move(indices));
  }
  check(static_cast<int>(moved.size()) == generators::ceil_log2(n), "ceil(log2 n) rounds");
  return moved;
}

// Scratch: the rotated array (n blocks), then per channel a packing and an unpacking area,
// each `most` pieces of that channel's largest piece.
struct StagingAreas {
  std::size_t most;                  // the most indices one round moves
  std::vector<std::size_t> staging;  // where channel c's areas start
  std::vector<std::size_t> largest;  // channel c's largest piece
  std::size_t end;                   // the scratch a rank needs
};

StagingAreas staging_areas(const Case& shape, const Knobs& knobs, const std::vector<std::vector<int>>& moved) {
  StagingAreas areas{0, std::vector<std::size_t>(static_cast<std::size_t>(knobs.channels)),
                     std::vector<std::size_t>(static_cast<std::size_t>(knobs.channels)),
                     static_cast<std::size_t>(shape.nranks) * shape.count};
  for (const std::vector<int>& indices : moved) areas.most = std::max(areas.most, indices.size());
  for (int channel = 0; channel < knobs.channels; ++channel) {
    const auto c = static_cast<std::size_t>(channel);
    const std::size_t part = slice(shape.count, static_cast<std::size_t>(knobs.channels), c).count;
    areas.largest[c] = knobs.chunk == 0 ? part : std::min(knobs.chunk, part);
    areas.staging[c] = areas.end;
    areas.end += 2 * areas.most * areas.largest[c];
  }
  return areas;
}

// Where one piece lives in a rank's scratch: the rotated array's index j, and the i-th place of
// its channel's packing and unpacking areas.
struct PieceInScratch {
  Piece piece;
  std::size_t count;      // elements per block
  std::size_t packing;    // where the channel's packing area starts
  std::size_t unpacking;  // where the channel's unpacking area starts

  Range rotated(int j) const { return at(BufferKind::Scratch, block_of(j, count, piece)); }
  Range packed(std::size_t i) const { return at(BufferKind::Scratch, packing + i * piece.count, piece.count); }
  Range unpacked(std::size_t i) const { return at(BufferKind::Scratch, unpacking + i * piece.count, piece.count); }
};

// The rotation: rank r's index j holds its block for rank r+j; index 0 goes straight to the
// output.
void rotation(Schedule& schedule, const PieceInScratch& place, int r) {
  const int n = schedule.shape.nranks;
  const Piece& piece = place.piece;
  if (!schedule.shape.in_place) {
    generators::copy(schedule, r, at(BufferKind::Input, block_of(r, place.count, piece)),
                     at(BufferKind::Output, block_of(r, place.count, piece)), piece.channel);
  }
  for (int j = 1; j < n; ++j) {
    generators::copy(schedule, r, at(BufferKind::Input, block_of(modulo(r + j, n), place.count, piece)),
                     place.rotated(j), piece.channel);
  }
}

// The round of `distance` at rank r: its `indices` packed into one message to r+d, the message
// from r-d unpacked into the same indices (one index travels without packing).
void round_of_distance(Schedule& schedule, const PieceInScratch& place, int r, int distance,
                       const std::vector<int>& indices) {
  const int n = schedule.shape.nranks;
  const int channel = place.piece.channel;
  const int to = modulo(r + distance, n);
  const int from = modulo(r - distance, n);
  if (indices.size() == 1) {
    send(schedule, r, to, place.rotated(indices[0]), channel);
    recv(schedule, r, from, place.rotated(indices[0]), channel);
    return;
  }
  for (std::size_t i = 0; i < indices.size(); ++i) {
    generators::copy(schedule, r, place.rotated(indices[i]), place.packed(i), channel);
  }
  const std::size_t message = indices.size() * place.piece.count;
  send(schedule, r, to, at(BufferKind::Scratch, place.packing, message), channel);
  recv(schedule, r, from, at(BufferKind::Scratch, place.unpacking, message), channel);
  for (std::size_t i = 0; i < indices.size(); ++i) {
    generators::copy(schedule, r, place.unpacked(i), place.rotated(indices[i]), channel);
  }
}

// The final rotation: index j came from rank r-j.
void final_rotation(Schedule& schedule, const PieceInScratch& place, int r) {
  const int n = schedule.shape.nranks;
  for (int j = 1; j < n; ++j) {
    generators::copy(schedule, r, place.rotated(j),
                     at(BufferKind::Output, block_of(modulo(r - j, n), place.count, place.piece)), place.piece.channel);
  }
}

}  // namespace

Schedule bruck_alltoall(const Case& shape, const Knobs& knobs) {
  Schedule schedule = generators::start(shape, "bruck");
  const int n = shape.nranks;
  if (n == 1) {
    copy_alone(schedule, input_elements(shape));
    return schedule;
  }
  const std::vector<std::vector<int>> moved = moved_indices(n);
  const StagingAreas areas = staging_areas(shape, knobs, moved);
  for (Participant& participant : schedule.participants) participant.scratch = areas.end;

  for (const Piece& piece : generators::pieces(shape.count, knobs)) {
    const auto c = static_cast<std::size_t>(piece.channel);
    check(piece.count <= areas.largest[c], "a piece fits its channel's staging areas");
    const PieceInScratch place{piece, shape.count, areas.staging[c], areas.staging[c] + areas.most * areas.largest[c]};
    for (int r = 0; r < n; ++r) {
      rotation(schedule, place, r);
      for (std::size_t round = 0; round < moved.size(); ++round)
        round_of_distance(schedule, place, r, 1 << round, moved[round]);
      final_rotation(schedule, place, r);
    }
  }
  return schedule;
}

}  // namespace collcheck
