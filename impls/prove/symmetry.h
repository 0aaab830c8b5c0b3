// The symmetry of a schedule: whether every rank's program is rank 0's turned by its rank, so
// that proving rank 0 proves them all (proof.cc and symmetry.cc say why that is sound).
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "impls/prove/provenance.h"
#include "impls/schedule/schedule.h"

namespace collcheck::provenance {

// How rank 0's ranks and blocks become rank r's: by rotation, rank s becoming s+r (mod n: the
// ring, pairwise and Bruck), or, where n is a power of two, by XOR, rank s becoming s XOR r
// (recursive doubling, whose rank r meets r XOR d in the round of distance d).
enum class Turn : std::uint8_t { Rotation, Xor };

// Rank s turned by `by` (s, by < nranks).
inline std::uint32_t turned_rank(Turn turn, std::uint32_t s, std::uint32_t by, std::uint32_t nranks) {
  if (turn == Turn::Xor) return s ^ by;
  const std::uint32_t sum = s + by;
  return sum >= nranks ? sum - nranks : sum;
}

// How one buffer is cut for a symmetry: not at all (`part` 0: its offsets do not turn), or into
// parts of `part` elements (a channel's share), each cut into n equal blocks.
struct BufferCut {
  std::uint64_t part = 0;
  std::uint64_t block = 0;  // part / n

  friend bool operator==(const BufferCut&, const BufferCut&) = default;
};

// How the offsets of one buffer turn from rank 0 to rank r, its cut under the symmetry's turn
// (Symmetry::of makes one): block b of every part becomes block b turned by r (turned_rank) of the
// same part, element j staying element j.
struct Turning : BufferCut {
  Turn turn = Turn::Rotation;

  std::uint64_t offset(std::uint64_t offset, std::uint32_t by, std::uint32_t nranks) const;
  // How many offsets from `offset` on turn alike (to the end of its block; all where none turns).
  std::uint64_t stretch(std::uint64_t offset) const;
  // The range turned, or nothing where it has no single image. A range inside one block turns
  // with its elements in order. By XOR, whole blocks aligned on their number (2^k blocks from a
  // multiple of 2^k) turn into whole blocks so aligned, as a set: the blocks within are taken in
  // another order (source_of).
  std::optional<Range> range(const Range&, std::uint32_t by, std::uint32_t nranks) const;
  // For the elements of `range` (a range range() turns) read in order, and their image read in
  // order: the place among the first of what the image's element `j` is the turn of.
  std::uint64_t source_of(std::uint64_t j, const Range& range, std::uint32_t by) const;
  // What decides that order: 0 where the elements keep theirs (one block, or no XOR), else the
  // block's length (the range's length then gives the blocks). A message whose two ends differ
  // in it is not turned alike at both, and rank 0 alone does not stand for every rank.
  std::uint64_t order(const Range& range) const {
    return turn == Turn::Xor && part != 0 && range.count > block ? block : 0;
  }

  friend bool operator==(const Turning&, const Turning&) = default;
};

// A symmetric schedule's turn and the cut of each buffer kind (Input, Output, Scratch).
struct Symmetry {
  Turn turn = Turn::Rotation;
  std::array<BufferCut, 3> cuts;

  BufferCut& cut(BufferKind kind) { return cuts[static_cast<std::size_t>(kind)]; }
  Turning of(BufferKind kind) const { return Turning{cuts[static_cast<std::size_t>(kind)], turn}; }
  // The rank whose message to rank 0 is rank 0's own message to `peer`, turned by that rank: -peer
  // by rotation, peer itself by XOR.
  std::uint32_t sender_to_rank0(std::uint32_t peer, std::uint32_t nranks) const {
    if (turn == Turn::Xor || peer == 0) return peer;
    return nranks - peer;
  }
  // Contributions turned, appended to `into`: rank s becomes s turned by `by`, an input index i
  // the input turned. A run stays one run by rotation; by XOR it may become several.
  void contributions(const Run&, std::uint32_t by, std::uint32_t nranks, std::vector<Run>& into) const;
  // Whether `run` turned by `by` is exactly the one run `want`.
  bool turns_into(const Run& run, const Run& want, std::uint32_t by, std::uint32_t nranks) const;
  // An element's contributions turned, in place.
  void turn_element(Element&, std::uint32_t by, std::uint32_t nranks) const;
  // Rank 0's message read from `from`, turned in place into the one rank `by` sends: each
  // element turned, and by XOR the blocks of a message of several taken in rank `by`'s order.
  void turn_message(std::vector<Element>& message, const Range& from, std::uint32_t by, std::uint32_t nranks) const;

 private:
  bool stays_one_run(const Run& run) const { return turn == Turn::Rotation || run.count == 1; }
  Run turned_run(const Run& run, std::uint32_t by, std::uint32_t nranks) const {
    return make_run(of(BufferKind::Input).offset(run.index, by, nranks), turned_rank(turn, run.first, by, nranks),
                    run.count, nranks, static_cast<std::uint32_t>(run.stride));
  }
};

// Whether every rank's input and output are as long as rank 0's, as a proof on rank 0 alone
// requires: a v-collective's uneven counts, or a reduce's root, rule it out (known from the case,
// before any schedule is made).
bool rank_buffers_alike(const Case&);

// The symmetry of the schedule, or nothing: a rotation is tried first, then XOR where n is a
// power of two. It is found on rank 1 and then checked against every step of every rank: same
// kinds, channels, streams and waits, the peer turned by r, every range turned by r. It also
// requires what the proof of rank 0 alone relies on: ranks only (no switch), equal buffer sizes,
// and in place only where the inside buffer's place turns with the buffer around it.
// (That the collective's required outputs turn the same way is checked by the proof, which knows them.)
std::optional<Symmetry> find_symmetry(const Schedule&);
// The same for a schedule whose steps are made on demand: rank 0's steps, stored, are `rank0`,
// and every other rank's are made once, one at a time, and compared, on up to `threads` threads
// (each rank's steps made by its own sequence: the generators share nothing they change).
std::optional<Symmetry> find_symmetry(const Schedule&, std::span<const Step> rank0, unsigned threads = 1);
// Whether a participant's streams keep apart: no element that one of them writes is read or
// written by another (the input and output aliased in place), so that no race between them is
// possible (for rank 0 of a symmetric schedule, on any rank, turned). One stream keeps apart
// trivially. `steps` are the participant's (rank 0's where it is not given).
bool streams_apart(const Schedule&, std::span<const Step> steps, int participant = 0);

// Rank 0's outputs stand for every rank's only where the collective's requirement turns alike:
// rank r's element T_r(i) must need what rank 0's element i needs, turned by r. Nothing where it
// does, else what does not. Checked a stretch at a time: where the turnings and the requirement
// each move element by element, the first element of a stretch stands for the rest. An
// all-reduce whose input and output turn alike needs no check: its requirement at element i is
// every rank's input i.
std::optional<std::string> outputs_turn(const Schedule&, const Symmetry&);

}  // namespace collcheck::provenance
