// One collective call to check: what it is, its size and layout, and how its inputs are made.
// Its text form (`allreduce/f32/sum/n=1000/ranks=7/...`) is what `collcheck replay` takes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "reference/collective.h"
#include "reference/dtype.h"
#include "reference/result.h"

namespace collcheck {

// How inputs are made (see inputs.h and docs/oracle.md).
//   exact:   every partial result is exact in any order, so outputs check bit for bit;
//   real:    random reals over a fixed dynamic range, checked against a sound error bound;
//   special: real values with NaN, ±inf, -0, subnormals and ±largest finite mixed in.
enum class ValueKind { Exact, Real, Special };

std::string_view name(ValueKind);
Result<ValueKind> parse_value_kind(std::string_view text);

// Limits that validate() enforces.
inline constexpr int kMaxRanks = 16384;
inline constexpr std::size_t kMaxCount = std::size_t{1} << 36;           // per rank, elements
inline constexpr std::size_t kMaxBufferElements = std::size_t{1} << 36;  // one rank's buffer
inline constexpr std::size_t kMaxOffset = 4096;                          // elements

struct Case {
  Collective collective = Collective::AllReduce;
  DType dtype = DType::Float32;
  RedOp op = RedOp::Sum;  // ignored by collectives that do not reduce
  std::size_t count = 0;  // NCCL's count, see collective.h; a v-collective's: the sum of counts
  // The v-collectives only (counts.h): a count per rank (allgatherv: elements rank r contributes;
  // reducescatterv: elements rank r receives) or, for alltoallv, per ordered pair of ranks,
  // row-major (counts[s * nranks + d] elements go from rank s to rank d). Empty otherwise.
  std::vector<std::size_t> counts;
  int nranks = 1;
  int root = 0;  // broadcast and reduce; must still be a valid rank elsewhere
  bool in_place = false;
  std::size_t offset = 0;  // elements by which every buffer is moved off its alignment
  // Every buffer of no elements is passed as a null pointer, as NCCL allows and as
  // `std::vector<T>().data()` gives (backends that take pointers: the vendors'); else a valid
  // pointer to no elements.
  bool empty_as_null = false;
  ValueKind values = ValueKind::Exact;
  std::uint64_t seed = 0;

  friend bool operator==(const Case&, const Case&) = default;
};

// Checks every field against its allowed range; the error names the field as the text
// form spells it (`ranks`, `root`, `n`, `counts`, `offset`) and says what is allowed. The
// v-collectives need counts (as many as counts_needed()), whose sum is `n`, and run out of place.
Status validate(const Case&);

// `allreduce/f32/sum/n=1000/ranks=7/root=0/inplace/offset=3/values=exact/seed=42`: every
// field, always in this order; `outofplace` where the call is not in place; `/emptynull` after
// the offset only where empty buffers are null pointers; `/counts=3,0,5` after `n` only for the
// v-collectives (`allgatherv/f32/sum/n=8/counts=3,0,5/ranks=3/...`).
std::string to_string(const Case&);

// Parses the text form back. The collective, dtype and op come first, in that order; the
// rest are `key=value` or the flags `inplace` / `outofplace` / `emptynull`, in any order. `n` and `ranks`
// are required (for a v-collective, `counts` and `ranks`: `n` may be left out, and is their sum);
// the others default to root=0, outofplace, offset=0, values=exact, seed=0. The result is validated.
Result<Case> parse_case(std::string_view text);

// Elements in rank's input and output buffers (a reduce's non-root ranks: no output). An
// allgatherv's output and a reducescatterv's input hold `count`, the counts' sum (validate() holds
// them to it), so that a prover asking per step pays nothing per rank.
std::size_t input_elements(const Case&, int rank);
std::size_t output_elements(const Case&, int rank);
// The largest over the ranks: every rank's buffer size for the uniform collectives (a reduce's
// output: the root's).
std::size_t input_elements(const Case&);
std::size_t output_elements(const Case&);

}  // namespace collcheck
