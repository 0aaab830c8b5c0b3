// Rotation symmetry of a schedule: whether every rank's program is rank 0's turned by its rank,
// so that proving rank 0 proves them all (proof.cc says why that is sound).
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>

#include "impls/prove/provenance.h"
#include "impls/schedule/schedule.h"

namespace collcheck::provenance {

// How the offsets of one buffer turn from rank 0 to rank r: not at all (`part` 0), or the buffer
// is cut into parts of `part` elements (a channel's share), each cut into n equal blocks, and
// block b of every part becomes block b+r (mod n) of the same part, element j staying element j.
struct Turning {
  std::uint64_t part = 0;
  std::uint64_t block = 0;  // part / n

  std::uint64_t offset(std::uint64_t offset, std::uint32_t by, std::uint32_t nranks) const;
  // How many offsets from `offset` on turn alike (to the end of its block; all where none turns).
  std::uint64_t stretch(std::uint64_t offset) const;
  // The range turned, or nothing where it straddles two blocks (then it has no single image).
  std::optional<Range> range(const Range&, std::uint32_t by, std::uint32_t nranks) const;

  friend bool operator==(const Turning&, const Turning&) = default;
};

// The turnings of a rotation-symmetric schedule, per buffer kind (Input, Output, Scratch).
struct Rotation {
  std::array<Turning, 3> buffers;

  const Turning& of(BufferKind kind) const { return buffers[static_cast<std::size_t>(kind)]; }
  // Contributions turned: rank s becomes s+by, an input index i the input turned by `by`.
  Run contributions(const Run&, std::uint32_t by, std::uint32_t nranks) const;
  // An element's contributions turned, in place.
  void turn(Element&, std::uint32_t by, std::uint32_t nranks) const;
};

// The rotation under which the schedule is symmetric, or nothing. It is found on rank 1 and
// then checked against every step of every rank: same kinds, channels, streams and waits, the
// peer turned by r, every range turned by r. It also requires what the proof of rank 0 alone
// relies on: ranks only (no switch), equal buffer sizes, and in place only
// where the input is the output. (That the collective's required outputs turn the same way is
// checked by the proof, which knows them.)
std::optional<Rotation> find_rotation(const Schedule&);
// The same for a schedule whose steps are made on demand: rank 0's steps, stored, are `rank0`,
// and every other rank's are made once, one at a time, and compared, on up to `threads` threads
// (each rank's steps made by its own sequence: the generators share nothing they change).
std::optional<Rotation> find_rotation(const Schedule&, std::span<const Step> rank0, unsigned threads = 1);
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
std::optional<std::string> outputs_turn(const Schedule&, const Rotation&);

}  // namespace collcheck::provenance
