// The line a v-collective's buffers lie on, cut into pieces, for the proof in pieces (pieces.cc
// says why it proves the schedule); private to impls/prove/.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "impls/prove/proof.h"
#include "impls/schedule/schedule.h"

namespace collcheck::provenance {

// A v-collective's `line`: its elements in block order, every block of the collective once
// (allgatherv and reducescatterv: rank r's block; alltoallv: the block from rank s to rank d, row by
// row). Every participant's buffer lies on it: as a window (allgatherv: rank r's input its block,
// every output the whole line; reducescatterv: every input the whole line, rank r's output its
// block; alltoallv: rank s's input its row; scratch from the line's start), or, an alltoallv's
// output, block by block (rank d's output holds the blocks (s, d) of every row s in turn). Cut where
// any range of any step starts or ends and where every block starts, each stretch between two cuts
// is a piece; a range's place is where it starts on the line, in pieces.
class PieceLine {
 public:
  static constexpr std::uint64_t kDenseLine = std::uint64_t{1} << 32;  // a bit and a count each: 1 GiB
  static constexpr std::size_t kMostCuts = std::size_t{1} << 27;       // 1 GiB of them

  // Whether a line of `length` elements and `blocks` blocks keeps a bit per element (a quarter of a
  // byte each, with the counts): up to kDenseLine elements, where that costs at most 64 MiB or 32 B
  // a block (every block starts a piece, so its cuts would cost about 20 B a block).
  static bool dense_line(std::uint64_t length, std::uint64_t blocks) {
    return length <= kDenseLine && length / 4 <= std::max<std::uint64_t>(std::uint64_t{64} << 20, 32 * blocks);
  }

  // For a case of at most kMostCuts blocks (every block starts a piece); a bit per element where
  // dense_line() says so (`bit_per_element`: tests ask for false to see the other form).
  explicit PieceLine(const Case& shape, bool bit_per_element = true);

  std::uint64_t length() const { return length_; }
  // Where a range of participant p starts on the line, in elements, where it is one stretch of it
  // inside its buffer (`scratch` elements long, for a range in scratch); nothing where it leaves its
  // buffer or, in an alltoallv's output, runs from one block into the next.
  std::optional<std::uint64_t> on_line(int participant, const Range& range, std::uint64_t scratch) const;
  // Cuts the line before `element` (at its end: nothing to cut). A dense line (dense_line()) keeps a
  // bit per element; another (an alltoallv's is n^2 blocks long) the cuts themselves, sorted and
  // made unique whenever they have doubled. False where such a line has more than kMostCuts cuts
  // (its pieces would cost more than the proof could save).
  bool cut(std::uint64_t element) {
    if (element >= length_) return true;
    if (dense()) {
      cuts_[element / 64] |= std::uint64_t{1} << (element % 64);
      return true;
    }
    sparse_.push_back(element);
    return sparse_.size() < compact_at_ || compact();
  }
  // After the last cut: counts the pieces before every word, for pieces_before(), and where each
  // block of an alltoallv's output starts in pieces.
  void close();
  // The pieces wholly before `element` (a cut, or the line's end); pieces_before(length()) is
  // how many there are.
  std::uint64_t pieces_before(std::uint64_t element) const;
  // Block b's pieces (b in the order of the case's counts).
  std::uint64_t block_pieces(std::size_t block) const {
    return pieces_before(starts_[block + 1]) - pieces_before(starts_[block]);
  }
  std::size_t blocks() const { return starts_.size() - 1; }
  // A range of participant p in elements (on the line: on_line() gave its start), in pieces.
  Range in_pieces(int participant, Range range) const;
  // Where a range of participant p, given in pieces, starts on the line, in pieces: a message's two
  // ends must agree on it (the proof in pieces checks that each message stays in its place).
  std::uint64_t place(int participant, const Range& in_pieces) const;

 private:
  // Where participant p's buffer starts on the line and how long it is, in elements, where it is a
  // window; an alltoallv's output is not (`laid_apart`).
  std::uint64_t window(int participant, BufferKind buffer) const;
  std::uint64_t window_length(int participant, BufferKind buffer) const;
  bool laid_apart(BufferKind buffer) const {
    return collective_ == Collective::AllToAllV && buffer == BufferKind::Output;
  }
  // An alltoallv's output: the source whose block holds `offset` of rank d's output, by where its
  // blocks start (`output_starts_`, in elements, or `output_pieces_`, in pieces).
  std::size_t source_at(int destination, std::uint64_t offset, const std::vector<std::uint64_t>& starts) const;

  bool dense() const { return dense_; }
  // Sorts the cuts of a line that is not dense and leaves each once; false past kMostCuts.
  bool compact();

  Collective collective_;
  std::size_t nranks_;
  std::vector<std::uint64_t> starts_;  // every block's start on the line, and the line's end
  std::uint64_t length_;
  bool dense_;
  std::vector<std::uint64_t> cuts_;                // a dense line's: a bit per element, set where a piece starts
  std::vector<std::uint64_t> before_word_;         // the pieces that start before each word of cuts_
  std::vector<std::uint64_t> sparse_;              // another line's: where pieces start (sorted once closed)
  std::size_t compact_at_ = std::size_t{1} << 20;  // sparse_'s size at which it is compacted next
  // Another line's, once closed: cut into buckets of 2^bucket_shift_ elements, about as many as it
  // has cuts, bucket k's cuts start at sparse_[bucket_first_[k]] (a search in a bucket, not in all).
  unsigned bucket_shift_ = 0;
  std::vector<std::uint32_t> bucket_first_;
  // An alltoallv's: where the block from source s starts in rank d's output, at d * n + s; in
  // elements, and (after close()) in pieces.
  std::vector<std::uint64_t> output_starts_, output_pieces_;
};

// in_pieces() (proof.h); `bit_per_element`: false keeps the line as its cuts, however short (tests).
std::optional<InPieces> in_pieces(const Schedule&, bool bit_per_element);

}  // namespace collcheck::provenance
