// Proofs in pieces: a v-collective's schedule that moves every element only to its own place on
// the collective's line, proven on one element per piece of that line.
//
// It works as follows. An allgatherv's or reducescatterv's buffers are windows on one `line` of
// its count elements in block order (pieces.h: rank r's allgatherv input is block r of the line,
// every output the whole line, and the reverse for reducescatterv; scratch starts at the line's
// start). The line is cut where every block starts and where any range of any step starts or
// ends, on the line; between two cuts lies a `piece`. Where every step keeps its elements in their
// place -- a copy's or reduction's `from` and `to` start at the same place on the line, and a
// message is received at the place its send read it from, which the proof checks as it matches
// them (`place`) -- every element of a piece meets, step for step, only the elements at the same
// offset of the same piece elsewhere: they all go through the same steps alike. What happens to
// element j of a piece is then what happens to the piece in the schedule `in_pieces`, in which each
// piece is one element (every count, size, offset and length counted in pieces), its contribution
// (r, i) standing for (r, the piece's first element + j).
//
// No piece crosses a block, so the requirement maps alike: the output element at piece u, offset
// j must hold what output element u of the collective in pieces must hold (a v-collective whose
// block b has as many elements as the line has pieces in block b), every index taken to its
// piece's start + j. Sends meet receives of the same place, hence the same elements; reads before
// writes, races and deadlocks are step for step the same, since ranges overlap in pieces exactly
// where they overlap in elements. So the proof in pieces proves the schedule with an element per
// piece: a ring's allgatherv with one chunk per block has n of them however long its blocks are
// (the units of units.cc do not help: spread counts such as c and c+1 share no unit).
//
// A step that moves elements elsewhere on the line (a copy to another place, a message received
// elsewhere) is not proven in pieces: in_pieces() gives nothing, or the proof stops at the message,
// and the full proof decides.
#include "impls/prove/pieces.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "impls/prove/mapped_schedule.h"
#include "impls/prove/proof.h"
#include "reference/counts.h"

namespace collcheck {

namespace provenance {
namespace {

// The bits set in a word, by adding them up in place (bit pairs, nibbles, bytes): inline, where
// std::popcount is a library call in a build for every x86-64 (no POPCNT instruction assumed).
std::uint64_t bits_set(std::uint64_t word) {
  word -= (word >> 1) & 0x5555555555555555ULL;
  word = (word & 0x3333333333333333ULL) + ((word >> 2) & 0x3333333333333333ULL);
  word = (word + (word >> 4)) & 0x0f0f0f0f0f0f0f0fULL;
  return (word * 0x0101010101010101ULL) >> 56;
}

}  // namespace

PieceLine::PieceLine(const Case& shape, std::uint64_t length)
    : collective_(shape.collective), nranks_(shape.nranks), length_(length), starts_(block_starts(shape)),
      cuts_(length / 64 + 1, 0) {
  for (std::size_t start : starts_) cut(start);
}

std::uint64_t PieceLine::window(int participant, BufferKind buffer) const {
  if (participant >= nranks_ || buffer == BufferKind::Scratch) return 0;
  const bool own_block = (collective_ == Collective::AllGatherV) == (buffer == BufferKind::Input);
  return own_block ? starts_[static_cast<std::size_t>(participant)] : 0;
}

std::uint64_t PieceLine::window_length(int participant, BufferKind buffer) const {
  if (participant >= nranks_) return 0;  // a switch has scratch alone
  const bool own_block = (collective_ == Collective::AllGatherV) == (buffer == BufferKind::Input);
  const auto rank = static_cast<std::size_t>(participant);
  return own_block ? starts_[rank + 1] - starts_[rank] : length_;
}

void PieceLine::close() {
  before_word_.assign(cuts_.size(), 0);
  std::uint64_t pieces = 0;
  for (std::size_t word = 0; word < cuts_.size(); ++word) {
    before_word_[word] = pieces;
    pieces += bits_set(cuts_[word]);
  }
}

std::uint64_t PieceLine::pieces_before(std::uint64_t element) const {
  const std::uint64_t below = cuts_[element / 64] & ((std::uint64_t{1} << (element % 64)) - 1);
  return before_word_[element / 64] + bits_set(below);
}

Range PieceLine::in_pieces(int participant, Range range) const {
  const std::uint64_t start = window(participant, range.buffer);
  const std::uint64_t first = pieces_before(start + range.offset);
  range.count = pieces_before(start + range.offset + range.count) - first;
  range.offset = first - pieces_before(start);
  return range;
}

}  // namespace provenance

namespace {

using provenance::PieceLine;

// The line's elements each take a bit and a count per 64 (a quarter of a byte each): past this
// the cuts would cost more than the proof saves, and the full proof is refused by its estimate.
constexpr std::uint64_t kLongestLine = std::uint64_t{1} << 34;

// Cuts the line at both ends of every range of the step; false where a range leaves its buffer (the
// full proof names it) or a copy or reduction moves its elements to another place.
bool cut_at(PieceLine& line, std::uint64_t scratch, int participant, const Step& step) {
  auto take = [&](const Range& range) {
    const std::uint64_t length =
        range.buffer == BufferKind::Scratch ? scratch : line.window_length(participant, range.buffer);
    if (range.offset + range.count > length) return false;
    const std::uint64_t start = line.window(participant, range.buffer) + range.offset;
    line.cut(start);
    line.cut(start + range.count);
    return true;
  };
  if (step.reads() && !take(step.from)) return false;
  if (step.writes() && !take(step.to)) return false;
  if (!step.reads() || !step.writes()) return true;
  return step.from.count == step.to.count && line.window(participant, step.from.buffer) + step.from.offset ==
                                                 line.window(participant, step.to.buffer) + step.to.offset;
}

}  // namespace

std::optional<InPieces> in_pieces(const Schedule& schedule) {
  const Case& shape = schedule.shape;
  const bool on_a_line = shape.collective == Collective::AllGatherV || shape.collective == Collective::ReduceScatterV;
  if (!on_a_line || shape.in_place || shape.count == 0 || shape.count > kLongestLine ||
      shape.counts.size() != static_cast<std::size_t>(shape.nranks)) {
    return std::nullopt;
  }
  auto line = std::make_shared<PieceLine>(shape, shape.count);
  for (int p = 0; p < schedule.nparticipants(); ++p) {
    const std::size_t scratch = schedule.participants[static_cast<std::size_t>(p)].scratch;
    if (scratch > line->length()) return std::nullopt;
    line->cut(scratch);
    StepReader reader = schedule.steps_of(p);
    for (std::span<const Step> steps = reader.next_batch(); !steps.empty(); steps = reader.next_batch()) {
      for (const Step& step : steps) {
        if (!cut_at(*line, scratch, p, step)) return std::nullopt;
      }
    }
  }
  line->close();
  const std::uint64_t pieces = line->pieces_before(line->length());
  if (pieces == line->length()) return std::nullopt;  // every element a piece: nothing gained

  Case shape_in_pieces = shape;
  shape_in_pieces.count = pieces;
  const std::vector<std::size_t> starts = block_starts(shape);
  for (std::size_t b = 0; b < shape_in_pieces.counts.size(); ++b) {
    shape_in_pieces.counts[b] = line->pieces_before(starts[b + 1]) - line->pieces_before(starts[b]);
  }
  std::shared_ptr<const PieceLine> cut = line;
  auto in_pieces_of = [cut](int participant, const Range& range) { return cut->in_pieces(participant, range); };
  return InPieces{provenance::mapped_schedule(schedule, std::move(shape_in_pieces), in_pieces_of), pieces, cut};
}

}  // namespace collcheck
