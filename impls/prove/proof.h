// The symbolic proof of a schedule: runs it on provenance instead of numbers, every element
// being the set of (rank, index) input contributions it holds, and checks every output.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "impls/schedule/schedule.h"

namespace collcheck {

namespace provenance {
class PieceLine;  // pieces.h
}

// What the proof found. On failure `message` names the first offending participant, step
// and element, and what was expected there.
struct Proof {
  bool ok = true;
  std::string message;
  std::size_t steps = 0;     // steps executed
  std::size_t messages = 0;  // sends matched
  bool by_symmetry = false;  // every rank's program is rank 0's turned: rank 0 ran, for all
  std::size_t unit = 1;      // proven in units (in_units): each element proven stood for this many
  std::uint64_t pieces = 0;  // proven in pieces (in_pieces): the collective's elements cut into this many
  bool undecided = false;    // in pieces, a message left its place on the line: only the full proof decides
};

// Proves, without numbers, that after the schedule runs (sends buffered, participants
// interleaved in a fixed order):
//   - every step's inputs are defined (nothing reads scratch or output it did not write);
//   - no reduction combines a contribution twice (each exactly once);
//   - every output element of every rank holds exactly the contributions the collective
//     defines (all-reduce: (r, i) for every rank r; all-gather: the one input it copies; ...);
//   - nothing writes an out-of-place input, and no participant is left waiting (deadlock).
// In-place schedules run with the input aliased into the output as NCCL lays it out. Where
// every rank's program is rank 0's turned, rank 0 alone runs (Proof::by_symmetry). A schedule
// made on demand is never stored where its participants have one stream each and no waits (the
// ring's): every rank's steps are made as the proof runs them, each checked as validate() would
// (its matching sends and receives by the proof itself).
Proof prove(const Schedule&);
// The proof on rank 0 alone where every rank's program is rank 0's turned by its rank (proof.cc
// says why that proves every rank), or, for a ring all-reduce whose blocks differ in length, its
// cover's rank 0 turned and cut to them (cover.cc says why); nothing where neither holds. Made on demand, the schedule
// is then never stored: rank 0's steps are, the others' are made once each and compared (on up to
// `threads` threads).
std::optional<Proof> prove_by_symmetry(const Schedule&, unsigned threads = 1);
// The proof of every rank, whether or not the schedule is symmetric (prove() without the rotation).
Proof prove_in_full(const Schedule&);

// Where the case's counts, every scratch size and every range of every step are whole multiples of
// one unit of more than one element, the same schedule in units: its counts, sizes, offsets and
// lengths divided by the unit, so that its proof proves this one with that many times fewer
// elements (units.cc says why). Nothing where the unit is 1 (or nothing moves). Every step is made
// once to find the unit (stopping where it reaches 1). A stored schedule gives a stored one; one
// made on demand gives one made on demand, which keeps a copy of this one and divides its steps as
// they are made. prove() tries it where no symmetry holds.
struct InUnits {
  Schedule schedule;
  std::uint64_t unit = 1;
};
std::optional<InUnits> in_units(const Schedule&);
// What the case's counts share (its count and a v-collective's every count): in_units' unit divides
// it. And the case in units of `unit`, its counts divided.
std::uint64_t counts_unit(const Case&);
Case case_in_units(Case shape, std::uint64_t unit);

// Where a v-collective's schedule (allgatherv, reducescatterv, alltoallv; out of place) keeps every element in
// its place on the collective's line of elements in block order (pieces.cc says what that is and why
// it proves the schedule), the same schedule with the line cut into pieces where any range starts or
// ends or a block starts, each piece one element: its counts, sizes, offsets and lengths in pieces.
// Nothing where a copy or reduction moves elements elsewhere on the line, or where every element is
// a piece of its own. Every step is made once to cut the line. Its proof is prove_in_pieces(), which
// also checks that every message is received where it was sent from; prove() tries it after in_units.
struct InPieces {
  Schedule schedule;
  std::uint64_t pieces = 0;  // the line's, which had `count` elements
  std::shared_ptr<const provenance::PieceLine> line;
};
std::optional<InPieces> in_pieces(const Schedule&);
Proof prove_in_pieces(const InPieces&);
// Whether in_pieces() may find pieces for a schedule of this case (a v-collective out of place,
// with fewer than 2^27 blocks), before the schedule is made.
bool on_a_line(const Case&);
// What the cut line of `shape` holds besides the proof in pieces, for `pieces` pieces.
MemoryEstimate pieces_line_memory(const Case& shape, std::uint64_t pieces);

// What proving a schedule of that size for `shape` will hold, the schedule included, estimated
// before it is built (ScheduleSize from impls/algorithms: estimate_schedule). Made on demand
// (the proof then holds no steps), or stored.
MemoryEstimate proof_memory(const Case& shape, const ScheduleSize&, bool on_demand = false);
// What the proof on rank 0 alone holds (prove_by_symmetry): rank 0's elements, and rank 0's
// steps with the others' made one at a time where the schedule is made on demand, every rank's
// where it is `stored`.
MemoryEstimate rank0_proof_memory(const Case& shape, const ScheduleSize&, bool stored = false);

}  // namespace collcheck
