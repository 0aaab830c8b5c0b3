// Estimates of the memory a run needs, part by part (buffers, schedule, events, proof), and
// the sizes of a case's buffers that every estimate starts from; said in words for refusals.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "reference/case.h"

namespace collcheck {

// a * b, or the largest value where the product does not fit: estimates of absurd requests
// stay absurd instead of wrapping round to small.
std::uint64_t saturating_product(std::uint64_t a, std::uint64_t b);
std::uint64_t saturating_sum(std::uint64_t a, std::uint64_t b);

// "512 B", "3.0 KiB", "72.0 GiB": powers of 1024, one decimal.
std::string format_bytes(std::uint64_t bytes);

// One part of an estimate: what it is ("buffers"), its bytes, and how they were counted
// ("2 ranks x (64.0 GiB in + 64.0 GiB out)"; may be empty).
struct MemoryPart {
  std::string name;
  std::uint64_t bytes = 0;
  std::string detail;
};

// The memory one run needs, as parts; parts of the same name add up.
struct MemoryEstimate {
  std::vector<MemoryPart> parts;

  void add(std::string_view name, std::uint64_t bytes, std::string detail = "");
  void add(const MemoryEstimate& other);
  std::uint64_t total() const;
  std::uint64_t part(std::string_view name) const;  // 0 where there is none
  // "buffers 64.0 GiB: 2 ranks x (32.0 GiB in + 0 B out); schedule 352 B": the parts in order.
  std::string describe() const;
};

// One set of the case's buffers on every rank: input and output (in place: the larger one
// alone), each with `guard` elements of guard zone on both sides and the case's offset.
MemoryEstimate case_buffers(const Case&, std::size_t guard_elements);

// The oracle's expected outputs: one shared where every rank's output is the same, else one per
// rank; with a per-element bound and accepted outcomes for real and special values.
MemoryEstimate oracle_memory(const Case&);

}  // namespace collcheck
