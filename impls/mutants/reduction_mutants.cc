// The mutants of the reduction op: a float16 accumulator (narrow-accumulation), std::max-style
// min and max that drop a NaN (nan-dropped, with direct_mutants.cc's per-rank order), a NaN
// dropped at a chunk's last element (edge-nan-dropped), and avg divided by the peer count
// (avg-wrong-divisor).
#include <algorithm>
#include <cmath>
#include <cstring>

#include "impls/link/reduce_op.h"
#include "impls/mutants/families.h"
#include "reference/float_format.h"

namespace collcheck::mutants {
namespace {

// std::max / std::min on the decoded values: a NaN survives only as the first operand.
double unordered_min_max(RedOp op, double a, double b) { return op == RedOp::Max ? (a < b ? b : a) : (b < a ? b : a); }

}  // namespace

// 6. narrow-accumulation. The reduction kernel keeps its running value in float16 whatever the
// dtype (a half-precision accumulator in a "mixed precision" kernel): every partial result is
// rounded to float16 before it is stored. float32, float64 and bfloat16 lose precision, and
// sums past 65504 overflow to infinity. Integers are untouched; float16 itself is exact.
void reduce_through_float16(DType dtype, RedOp op, const std::byte* a, const std::byte* b, std::byte* out,
                            std::size_t count) {
  if (!is_float(dtype)) return reduce_elements(dtype, op, a, b, out, count);
  combine_decoded(dtype, a, b, out, count,
                  [op](double x, double y) { return float16_to_double(float16_from_double(reduce_values(op, x, y))); });
}

// 9. nan-dropped (its reduction; the schedule is direct_mutants.cc's): min and max compare like
// std::max, which keeps a NaN only as the first operand.
void reduce_dropping_nan(DType dtype, RedOp op, const std::byte* a, const std::byte* b, std::byte* out,
                         std::size_t count) {
  if (!is_float(dtype) || (op != RedOp::Min && op != RedOp::Max)) return reduce_elements(dtype, op, a, b, out, count);
  combine_decoded(dtype, a, b, out, count, [op](double x, double y) { return unordered_min_max(op, x, y); });
}

// 19. edge-nan-dropped. The kernel's last element of every reduced chunk (a vector kernel's
// scalar tail) keeps the local value when the incoming one is NaN: wrong only where one NaN
// arrives at a chunk's last element, which special values place at every block edge.
void reduce_dropping_edge_nan(DType dtype, RedOp op, const std::byte* a, const std::byte* b, std::byte* out,
                              std::size_t count) {
  if (count == 0 || !is_float(dtype)) return reduce_elements(dtype, op, a, b, out, count);
  const std::size_t size = size_of(dtype), last = (count - 1) * size;
  std::uint64_t local = 0, incoming = 0;
  std::memcpy(&local, a + last, size);  // before the reduction: `out` may be `a` or `b`
  std::memcpy(&incoming, b + last, size);
  reduce_elements(dtype, op, a, b, out, count);
  if (std::isnan(decode(dtype, incoming))) std::memcpy(out + last, &local, size);
}

// 10. avg-wrong-divisor. Average divides the sum by the number of peers, nranks - 1, instead
// of by nranks (a rank alone, with no peer, falls back to halving).
void divide_by_peers(DType dtype, std::byte* data, std::size_t count, int nranks) {
  finish_average(dtype, data, count, nranks > 1 ? nranks - 1 : 2);
}

}  // namespace collcheck::mutants
