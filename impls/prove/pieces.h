// The line a v-collective's buffers lie on, cut into pieces, for the proof in pieces (pieces.cc
// says why it proves the schedule); private to impls/prove/.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "impls/schedule/schedule.h"

namespace collcheck::provenance {

// An allgatherv's or reducescatterv's `line`: its `count` elements in block order, on which every
// participant's buffer is a window (allgatherv: rank r's input its block, every output the whole
// line; reducescatterv: every input the whole line, rank r's output its block; scratch from the
// line's start). Cut where any range of any step starts or ends and where every block starts, each
// stretch between two cuts is a piece; a range's place is where it starts on the line, in pieces.
class PieceLine {
 public:
  PieceLine(const Case& shape, std::uint64_t length);

  std::uint64_t length() const { return length_; }
  // Where participant p's buffer starts on the line, and how long an input or output is, in elements.
  std::uint64_t window(int participant, BufferKind buffer) const;
  std::uint64_t window_length(int participant, BufferKind buffer) const;
  // Cuts the line before `element` (at its end: nothing to cut).
  void cut(std::uint64_t element) {
    if (element < length_) cuts_[element / 64] |= std::uint64_t{1} << (element % 64);
  }
  // After the last cut: counts the pieces before every word, for pieces_before().
  void close();
  // The pieces wholly before `element` (a cut, or the line's end); pieces_before(length()) is
  // how many there are.
  std::uint64_t pieces_before(std::uint64_t element) const;
  // A range of participant p in elements, in pieces (its ends being cuts).
  Range in_pieces(int participant, Range range) const;
  // Where a range of participant p, given in pieces, starts on the line, in pieces: a message's two
  // ends must agree on it (the proof in pieces checks that each message stays in its place).
  std::uint64_t place(int participant, const Range& in_pieces) const {
    return pieces_before(window(participant, in_pieces.buffer)) + in_pieces.offset;
  }

 private:
  Collective collective_;
  int nranks_;
  std::uint64_t length_;
  std::vector<std::size_t> starts_;         // every block's start, and the line's end
  std::vector<std::uint64_t> cuts_;         // a bit per element: a piece starts there
  std::vector<std::uint64_t> before_word_;  // the pieces that start before each word of cuts_
};

}  // namespace collcheck::provenance
