// The CPU oracle: what every rank's output of a case must be, with a per-element error bound
// for floats that is sound for any reduction order, and the comparison that judges a run.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "reference/case.h"
#include "reference/inputs.h"

namespace collcheck {

// Outcomes other than "within the bound" that an element may also have, because some
// reduction order produces them (see docs/oracle.md).
enum Accept : std::uint8_t {
  AcceptNaN = 1,               // some order overflows into inf - inf, or 0 * inf
  AcceptPositiveOverflow = 2,  // +inf (e4m3: +largest finite or NaN)
  AcceptNegativeOverflow = 4,
  AcceptAlternative = 8,  // min/max with a NaN input: NaN, or the min/max of the others
  AcceptAnything = 16,    // a product whose partial products leave the normal range
};

// One rank's expected output.
struct Expected {
  DType dtype = DType::Float32;
  std::size_t count = 0;        // elements; 0 where the rank has no output (reduce)
  std::vector<std::byte> data;  // expected elements, packed as the backend writes them
  // Empty: every element must match bit for bit (NaN matches any NaN). Otherwise an
  // element passes when |got - expected| <= bound[i], or when it is one of accept[i].
  std::vector<double> bound;
  std::vector<std::uint8_t> accept;
  std::vector<double> alternative;  // for AcceptAlternative
  std::size_t unchecked = 0;        // elements with AcceptAnything

  bool bitwise() const { return bound.empty(); }
  std::uint64_t bits(std::size_t element) const;  // defined below (load_bits, dtype.h)
};

struct Mismatch {
  int rank = 0;
  std::size_t element = 0;
  std::uint64_t expected_bits = 0;
  std::uint64_t got_bits = 0;
  double expected = 0;
  double got = 0;
  double ulps = 0;   // |got - expected| in ulps of expected (integers: the difference)
  double bound = 0;  // 0 for bitwise checks
};

struct Verdict {
  bool ok = true;
  std::size_t checked = 0;      // elements compared
  std::size_t mismatched = 0;   // elements outside their bound
  std::size_t unchecked = 0;    // elements that accepted anything (AcceptAnything)
  double worst_ulps = 0;        // largest |got - expected| in ulps among checked elements
  std::vector<Mismatch> first;  // the first few mismatches, in element order
  std::string error;            // set when `got` has the wrong size

  std::string describe(DType) const;  // multi-line, for reports
};

// Expected outputs for every rank of one case, computed on demand and shared between ranks
// whose outputs are identical (all-reduce, all-gather, broadcast).
class Oracle {
 public:
  explicit Oracle(const Case&);
  ~Oracle();
  Oracle(const Oracle&) = delete;
  Oracle& operator=(const Oracle&) = delete;

  const Case& which() const { return case_; }
  const InputGenerator& inputs() const { return inputs_; }
  const Expected& expected(int rank);
  // Every rank's output (outputs[rank]) against its expected output, as compare() judges it.
  // Where every rank's expected output is one exact float sum, the ranks are checked together,
  // a block of expected elements at a time while it is in cache, the whole never held; where a
  // block differs, rank by rank through expected().
  std::vector<Verdict> compare_all(std::span<const std::span<const std::byte>> outputs, std::size_t max_reported = 8);

 private:
  bool all_match_in_blocks(std::span<const std::span<const std::byte>> outputs) const;

  Case case_;
  InputGenerator inputs_;
  std::vector<std::unique_ptr<Expected>> per_rank_;
  std::unique_ptr<Expected> shared_;
};

// A fresh expected output for one rank (the Oracle class caches these).
Expected expected(const Case&, int rank);
Expected expected(const Inputs&, int rank);

// Compares rank's output `got` (count elements of the dtype, packed as the backend wrote
// them) against `expected`. At most `max_reported` mismatches are kept in Verdict::first.
// Non-root ranks of a reduce have no output: they pass an empty `got`.
Verdict compare(const Expected&, int rank, std::span<const std::byte> got, std::size_t max_reported = 8);
Verdict compare(const Case&, int rank, std::span<const std::byte> got);

inline std::uint64_t Expected::bits(std::size_t element) const { return load_bits(dtype, data, element); }

// "1.5", "-inf", "nan", "0x3c00 (1)": an element for a person.
std::string format_element(DType, std::uint64_t bits);

}  // namespace collcheck
