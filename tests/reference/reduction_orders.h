// Test helper: reduces one element's inputs the way some implementation might — ranks in a
// random order, combined along a random binary tree, every step rounded to the dtype.
#pragma once

#include <cmath>
#include <cstdint>
#include <utility>
#include <vector>

#include "reference/float_format.h"
#include "reference/random.h"

namespace collcheck::testing {

// How a random implementation combines two partial results.
struct Combiner {
  DType dtype;
  RedOp op;
  bool min_max_propagates_nan;  // fmin-style (NaN wins) or IEEE minNum (NaN loses)

  double operator()(double a, double b) const {
    switch (op) {
      case RedOp::Prod: return round_to(dtype, a * b);
      case RedOp::Min:
      case RedOp::Max: {
        if (std::isnan(a) || std::isnan(b)) {
          if (min_max_propagates_nan) return std::nan("");
          return std::isnan(a) ? b : a;
        }
        return op == RedOp::Min ? std::fmin(a, b) : std::fmax(a, b);
      }
      default: return round_to(dtype, a + b);
    }
  }
};

// A splitmix64 stream, so a drawn seed fixes the whole order.
class Stream {
 public:
  explicit Stream(std::uint64_t seed) : state_(seed) {}
  std::uint64_t next() { return mix64(state_++); }
  std::size_t below_n(std::size_t n) { return static_cast<std::size_t>(below(next(), n)); }

 private:
  std::uint64_t state_;
};

inline void shuffle(std::vector<double>& values, Stream& stream) {
  for (std::size_t i = values.size(); i > 1; --i) std::swap(values[i - 1], values[stream.below_n(i)]);
}

// Combines values[first, last) along a random tree.
inline double tree_reduce(const std::vector<double>& values, std::size_t first, std::size_t last,
                          const Combiner& combine, Stream& stream) {
  if (last - first == 1) return values[first];
  const std::size_t split = first + 1 + stream.below_n(last - first - 1);
  const double left = tree_reduce(values, first, split, combine, stream);
  const double right = tree_reduce(values, split, last, combine, stream);
  return combine(left, right);
}

// Sum, prod, min, max in a random order and tree; avg either sums then divides by n, or
// multiplies every input by a rounded 1/n first (as NCCL does for floats), both rounded.
inline double random_order_reduce(std::vector<double> values, const Combiner& combine, Stream& stream) {
  shuffle(values, stream);
  const double n = static_cast<double>(values.size());
  if (combine.op != RedOp::Avg) return tree_reduce(values, 0, values.size(), combine, stream);
  const Combiner sum{combine.dtype, RedOp::Sum, false};
  if (stream.next() & 1) {
    return round_to(combine.dtype, tree_reduce(values, 0, values.size(), sum, stream) / n);
  }
  const double reciprocal = round_to(combine.dtype, 1 / n);
  for (double& v : values) v = round_to(combine.dtype, v * reciprocal);
  return tree_reduce(values, 0, values.size(), sum, stream);
}

}  // namespace collcheck::testing
