// Proofs in pieces: a v-collective's schedule that moves every element only to its own place on
// the collective's line, proven on one element per piece of that line.
//
// It works as follows. A v-collective's buffers lie on one `line` of its count elements in block
// order (pieces.h: rank r's allgatherv input is block r of the line, every output the whole line,
// and the reverse for reducescatterv; an alltoallv's blocks are its pairs row by row, rank s's input
// row s and rank d's output the blocks (s, d) of every row in turn; scratch starts at the line's
// start). The line is cut where every block starts and where any range of any step starts or
// ends, on the line (a range of an alltoallv's output that runs into the next block is no stretch
// of the line: not proven in pieces); between two cuts lies a `piece`. Where every step keeps its elements in their
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
// piece: a ring's allgatherv with one chunk per block has n of them however long its blocks are,
// pairwise alltoallv n^2 (the units of units.cc do not help: spread counts such as c and c+1 share
// no unit).
//
// A step that moves elements elsewhere on the line (a copy to another place, a message received
// elsewhere) is not proven in pieces: in_pieces() gives nothing, or the proof stops at the message,
// and the full proof decides.
#include "impls/prove/pieces.h"

#include <algorithm>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "impls/prove/mapped_schedule.h"
#include "impls/prove/proof.h"
#include "reference/counts.h"
#include "reference/memory.h"

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

// An alltoallv's outputs on n ranks: where the block from each source starts in each destination's
// output, at destination * n + source, the sums down each column of the blocks' `length(block)`
// (block source * n + destination, as the case's counts are laid out).
template <typename Length>
std::vector<std::uint64_t> output_block_starts(std::size_t n, Length length) {
  std::vector<std::uint64_t> starts(n * n);
  for (std::size_t destination = 0; destination < n; ++destination) {
    std::uint64_t start = 0;
    for (std::size_t source = 0; source < n; ++source) {
      starts[destination * n + source] = start;
      start += length(source * n + destination);
    }
  }
  return starts;
}

}  // namespace

PieceLine::PieceLine(const Case& shape, bool bit_per_element)
    : collective_(shape.collective), nranks_(static_cast<std::size_t>(shape.nranks)), starts_(block_starts(shape)),
      length_(starts_.back()), dense_(bit_per_element && dense_line(length_, starts_.size() - 1)) {
  if (dense()) cuts_.assign(length_ / 64 + 1, 0);
  for (std::uint64_t start : starts_) static_cast<void>(cut(start));  // in_pieces() sees there is room
  if (collective_ != Collective::AllToAllV) return;
  output_starts_ = output_block_starts(nranks_, [&](std::size_t block) { return shape.counts[block]; });
}

std::uint64_t PieceLine::window(int participant, BufferKind buffer) const {
  const auto rank = static_cast<std::size_t>(participant);
  if (rank >= nranks_ || buffer == BufferKind::Scratch) return 0;
  if (collective_ == Collective::AllToAllV) return starts_[rank * nranks_];  // its input: its row
  const bool own_block = (collective_ == Collective::AllGatherV) == (buffer == BufferKind::Input);
  return own_block ? starts_[rank] : 0;
}

std::uint64_t PieceLine::window_length(int participant, BufferKind buffer) const {
  const auto rank = static_cast<std::size_t>(participant);
  if (rank >= nranks_) return 0;  // a switch has scratch alone
  if (collective_ == Collective::AllToAllV) return starts_[(rank + 1) * nranks_] - starts_[rank * nranks_];
  const bool own_block = (collective_ == Collective::AllGatherV) == (buffer == BufferKind::Input);
  return own_block ? starts_[rank + 1] - starts_[rank] : length_;
}

std::size_t PieceLine::source_at(int destination, std::uint64_t offset,
                                 const std::vector<std::uint64_t>& starts) const {
  const auto row = starts.begin() + static_cast<std::ptrdiff_t>(static_cast<std::size_t>(destination) * nranks_);
  // The last source whose block starts at or before `offset` (empty blocks start where the next does).
  const auto after = std::upper_bound(row, row + static_cast<std::ptrdiff_t>(nranks_), offset);
  return after == row ? 0 : static_cast<std::size_t>(after - row - 1);
}

std::optional<std::uint64_t> PieceLine::on_line(int participant, const Range& range, std::uint64_t scratch) const {
  const std::uint64_t end = range.offset + range.count;
  if (range.buffer == BufferKind::Scratch)
    return end <= scratch ? std::optional(std::uint64_t{range.offset}) : std::nullopt;
  if (static_cast<std::size_t>(participant) >= nranks_) return std::nullopt;
  if (!laid_apart(range.buffer)) {
    if (end > window_length(participant, range.buffer)) return std::nullopt;
    return window(participant, range.buffer) + range.offset;
  }
  const std::size_t source = source_at(participant, range.offset, output_starts_);
  const std::size_t block = source * nranks_ + static_cast<std::size_t>(participant);
  const std::uint64_t block_start = output_starts_[static_cast<std::size_t>(participant) * nranks_ + source];
  if (end > block_start + (starts_[block + 1] - starts_[block])) return std::nullopt;
  return starts_[block] + (range.offset - block_start);
}

bool PieceLine::compact() {
  std::sort(sparse_.begin(), sparse_.end());
  sparse_.erase(std::unique(sparse_.begin(), sparse_.end()), sparse_.end());
  compact_at_ = std::max(compact_at_, 2 * sparse_.size());
  return sparse_.size() <= kMostCuts;
}

void PieceLine::close() {
  if (!dense()) {
    compact();
    while ((length_ >> bucket_shift_) > sparse_.size()) ++bucket_shift_;
    const std::uint64_t buckets = (length_ >> bucket_shift_) + 2;
    bucket_first_.assign(buckets, 0);
    std::size_t cut = 0;
    for (std::uint64_t bucket = 0; bucket < buckets; ++bucket) {
      while (cut < sparse_.size() && (sparse_[cut] >> bucket_shift_) < bucket) ++cut;
      bucket_first_[bucket] = static_cast<std::uint32_t>(cut);
    }
  }
  before_word_.assign(cuts_.size(), 0);
  std::uint64_t pieces = 0;
  for (std::size_t word = 0; word < cuts_.size(); ++word) {
    before_word_[word] = pieces;
    pieces += bits_set(cuts_[word]);
  }
  if (collective_ != Collective::AllToAllV) return;
  output_pieces_ = output_block_starts(nranks_, [&](std::size_t block) { return block_pieces(block); });
}

std::uint64_t PieceLine::pieces_before(std::uint64_t element) const {
  if (!dense()) {
    const std::uint64_t bucket = element >> bucket_shift_;
    const auto first = sparse_.begin() + bucket_first_[bucket];
    const auto end = sparse_.begin() + bucket_first_[bucket + 1];
    return static_cast<std::uint64_t>(std::lower_bound(first, end, element) - sparse_.begin());
  }
  const std::uint64_t below = cuts_[element / 64] & ((std::uint64_t{1} << (element % 64)) - 1);
  return before_word_[element / 64] + bits_set(below);
}

Range PieceLine::in_pieces(int participant, Range range) const {
  const bool apart = laid_apart(range.buffer) && static_cast<std::size_t>(participant) < nranks_;
  std::uint64_t start = 0;      // the range's start on the line
  std::uint64_t buffer_at = 0;  // in pieces: where its buffer, or its block of the buffer, starts in it
  std::uint64_t line_at = 0;    // in pieces: where that buffer or block starts on the line
  if (apart) {
    const std::size_t source = source_at(participant, range.offset, output_starts_);
    const std::size_t at = static_cast<std::size_t>(participant) * nranks_ + source;
    const std::uint64_t block = starts_[source * nranks_ + static_cast<std::size_t>(participant)];
    start = block + (range.offset - output_starts_[at]);
    buffer_at = output_pieces_[at];
    line_at = pieces_before(block);
  } else {
    const std::uint64_t window_start = window(participant, range.buffer);
    start = window_start + range.offset;
    line_at = pieces_before(window_start);
  }
  const std::uint64_t first = pieces_before(start);
  range.count = pieces_before(start + range.count) - first;
  range.offset = buffer_at + (first - line_at);
  return range;
}

std::uint64_t PieceLine::place(int participant, const Range& in_pieces) const {
  if (laid_apart(in_pieces.buffer) && static_cast<std::size_t>(participant) < nranks_) {
    const std::size_t source = source_at(participant, in_pieces.offset, output_pieces_);
    const std::size_t at = static_cast<std::size_t>(participant) * nranks_ + source;
    return pieces_before(starts_[source * nranks_ + static_cast<std::size_t>(participant)]) + in_pieces.offset -
           output_pieces_[at];
  }
  return pieces_before(window(participant, in_pieces.buffer)) + in_pieces.offset;
}

}  // namespace provenance

namespace {

using provenance::PieceLine;

// Cuts the line at both ends of every range of the step; false where a range leaves its buffer (the
// full proof names it) or is not one stretch of the line, or a copy or reduction moves its elements
// to another place.
bool cut_at(PieceLine& line, std::uint64_t scratch, int participant, const Step& step) {
  std::optional<std::uint64_t> from, to;
  auto take = [&](const Range& range, std::optional<std::uint64_t>& start) {
    start = line.on_line(participant, range, scratch);
    if (!start) return false;
    return line.cut(*start) && line.cut(*start + range.count);
  };
  if (step.reads() && !take(step.from, from)) return false;
  if (step.writes() && !take(step.to, to)) return false;
  if (!step.reads() || !step.writes()) return true;
  return step.from.count == step.to.count && *from == *to;
}

}  // namespace

std::optional<InPieces> in_pieces(const Schedule& schedule) { return provenance::in_pieces(schedule, true); }

bool on_a_line(const Case& shape) {
  return per_rank_counts(shape.collective) && !shape.in_place && shape.count > 0 &&
         shape.counts.size() == counts_needed(shape.collective, shape.nranks) &&
         shape.counts.size() < PieceLine::kMostCuts;
}

std::optional<InPieces> provenance::in_pieces(const Schedule& schedule, bool bit_per_element) {
  const Case& shape = schedule.shape;
  if (!on_a_line(shape)) return std::nullopt;
  auto line = std::make_shared<PieceLine>(shape, bit_per_element);
  for (int p = 0; p < schedule.nparticipants(); ++p) {
    const std::size_t scratch = schedule.participants[static_cast<std::size_t>(p)].scratch;
    if (scratch > line->length() || !line->cut(scratch)) return std::nullopt;
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
  for (std::size_t b = 0; b < line->blocks(); ++b) shape_in_pieces.counts[b] = line->block_pieces(b);
  std::shared_ptr<const PieceLine> cut = line;
  auto in_pieces_of = [cut](int participant, const Range& range) { return cut->in_pieces(participant, range); };
  return InPieces{provenance::mapped_schedule(schedule, std::move(shape_in_pieces), in_pieces_of), pieces, cut};
}

MemoryEstimate pieces_line_memory(const Case& shape, std::uint64_t pieces) {
  MemoryEstimate estimate;
  if (PieceLine::dense_line(shape.count, shape.counts.size())) {
    estimate.add("the line's cuts", shape.count / 4 + 64, std::to_string(shape.count) + " elements x 2 bits");
  } else {  // the cuts themselves, up to twice as many before each compaction, and their buckets
    estimate.add("the line's cuts", saturating_product(pieces, 2 * sizeof(std::uint64_t) + sizeof(std::uint32_t)),
                 std::to_string(pieces) + " pieces x 20 B");
  }
  if (shape.collective == Collective::AllToAllV) {
    estimate.add("the outputs' blocks", saturating_product(shape.counts.size(), 2 * sizeof(std::uint64_t)),
                 std::to_string(shape.counts.size()) + " blocks x 16 B");
  }
  return estimate;
}

}  // namespace collcheck
