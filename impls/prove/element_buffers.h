// The prover's buffers: every participant's input, output and scratch as provenance elements,
// with the input aliased into the output (or the output into the input) in place as NCCL lays
// it out. Private to impls/prove/.
#pragma once

#include <cstddef>
#include <vector>

#include "impls/prove/provenance.h"
#include "impls/schedule/schedule.h"

namespace collcheck::provenance {

using Contents = std::vector<Element>;

class ElementBuffers {
 public:
  // The buffers of participants 0..participants-1 of the schedule; every rank's input holds its
  // own contributions, (i, rank) at index i; out of place the input is implicit, never stored.
  ElementBuffers(const Schedule&, int participants);

  // The stored elements behind `buffer` of participant p, after in-place aliasing: element i of
  // the buffer is storage(p, buffer)[i]. Out of place, an input has none (it is never stored).
  Element* storage(int p, BufferKind buffer);

  // Reads a range into `values` (reused, so that a step allocates only where an element has many
  // runs). False where an element was never written; `undefined` is then its offset.
  bool read(int p, const Range&, Contents& values, std::size_t& undefined);
  // Writes `values` (moved from) into the range; returns where the range's elements are stored.
  Element* write(int p, const Range&, Contents& values);

 private:
  const Schedule& schedule_;
  std::vector<Contents> output_, scratch_, input_;
};

}  // namespace collcheck::provenance
