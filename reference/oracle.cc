// The expected output of every rank: data movement copies inputs; reductions fold every rank's
// input in exact integer arithmetic where the value kind allows, else in double with a bound.
#include "reference/oracle.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "reference/counts.h"
#include "reference/float_format.h"

namespace collcheck {
namespace {

// Higham's gamma_k = k u / (1 - k u): the relative error of k roundings of unit roundoff u.
double gamma(double k, double u) {
  const double ku = k * u;
  return ku < 1 ? ku / (1 - ku) : std::numeric_limits<double>::infinity();
}

constexpr double kDoubleRoundoff = 0x1.0p-53;
// Slack for the roundings of the bound's own arithmetic.
constexpr double kBoundSlack = 1 + 0x1.0p-30;

void store(Expected& out, std::size_t element, std::uint64_t bits) { store_bits(out.dtype, out.data, element, bits); }

// Where reduction output element j of `rank` reads its inputs.
std::size_t input_base(const Case& c, int rank) {
  if (c.collective == Collective::ReduceScatterV) return block_start(c, rank);
  return c.collective == Collective::ReduceScatter ? static_cast<std::size_t>(rank) * c.count : 0;
}

// Elements [first, first + count) of `source`'s input into out's elements from `at` on.
void copy_input(const Inputs& inputs, int source, std::size_t first, std::size_t count, Expected& out, std::size_t at) {
  const std::size_t size = size_of(out.dtype);
  inputs.fill(source, first, std::span(out.data).subspan(at * size, count * size));
}

// The v-collectives: blocks packed in rank order, of the sizes the counts say.
void expect_vector_movement(const Case& c, const Inputs& inputs, int rank, Expected& out) {
  std::size_t at = 0;
  for (int source = 0; source < c.nranks; ++source) {
    if (c.collective == Collective::AllGatherV) {  // block s is rank s's input
      const std::size_t count = c.counts[static_cast<std::size_t>(source)];
      copy_input(inputs, source, 0, count, out, at);
      at += count;
    } else {  // alltoallv: block s is what rank s sent to this rank, packed by destination
      const std::size_t count = pair_count(c, source, rank);
      copy_input(inputs, source, send_start(c, source, rank), count, out, at);
      at += count;
    }
  }
}

void expect_movement(const Case& c, const Inputs& inputs, int rank, Expected& out) {
  if (per_rank_counts(c.collective)) {
    expect_vector_movement(c, inputs, rank, out);
    return;
  }
  const std::size_t count = c.count;
  switch (c.collective) {
    case Collective::AllGather:  // block r is rank r's input
      for (int source = 0; source < c.nranks; ++source) {
        copy_input(inputs, source, 0, count, out, static_cast<std::size_t>(source) * count);
      }
      break;
    case Collective::AllToAll:  // block s is what rank s sent to this rank
      for (int source = 0; source < c.nranks; ++source) {
        copy_input(inputs, source, static_cast<std::size_t>(rank) * count, count, out,
                   static_cast<std::size_t>(source) * count);
      }
      break;
    default:  // broadcast: the root's input
      copy_input(inputs, c.root, 0, count, out, 0);
      break;
  }
}

// One output element of an integer reduction, `element(rank)` each rank's input bits. NCCL's
// semantics, bit for bit: sums and products wrap around; avg divides the wrapped sum, read as
// signed for signed types, by nranks, truncating toward zero.
template <typename Element>
std::uint64_t reduce_integers(const Case& c, Element element) {
  const std::size_t width = size_of(c.dtype) * 8;
  const std::uint64_t mask = width == 64 ? ~std::uint64_t{0} : (std::uint64_t{1} << width) - 1;
  const std::uint64_t sign = std::uint64_t{1} << (width - 1);
  const bool is_signed_type = is_signed(c.dtype);
  // Map to a key whose unsigned order is the type's order (flip the sign bit of signed types).
  auto key = [&](std::uint64_t bits) { return is_signed_type ? bits ^ sign : bits; };

  std::uint64_t accumulator = element(0);
  for (int rank = 1; rank < c.nranks; ++rank) {
    const std::uint64_t x = element(rank);
    switch (c.op) {
      case RedOp::Sum:
      case RedOp::Avg: accumulator = (accumulator + x) & mask; break;
      case RedOp::Prod: accumulator = (accumulator * x) & mask; break;
      case RedOp::Min:
        if (key(x) < key(accumulator)) accumulator = x;
        break;
      case RedOp::Max:
        if (key(x) > key(accumulator)) accumulator = x;
        break;
    }
  }
  if (c.op != RedOp::Avg) return accumulator;
  const auto divisor = static_cast<std::uint64_t>(c.nranks);
  if (!is_signed_type) return accumulator / divisor;
  const auto value = static_cast<std::int64_t>((accumulator ^ sign) - sign);  // sign-extend
  return static_cast<std::uint64_t>(value / static_cast<std::int64_t>(divisor)) & mask;
}

// One float reduction's constants, computed once rather than per element.
struct Reduction {
  explicit Reduction(const Case& which)
      : c(which), n(which.nranks), u(float_format(which.dtype).unit_roundoff()),
        largest(float_format(which.dtype).max_finite()), overflow(largest + ulp(which.dtype, largest) / 2),
        smallest(float_format(which.dtype).min_subnormal()) {
    std::frexp(largest, &top);                                    // largest < 2^top
    std::frexp(float_format(which.dtype).min_normal(), &bottom);  // min_normal = 2^(bottom - 1)
    const bool average = which.op == RedOp::Avg;
    // avg: NCCL multiplies each input by 1/n (rounded) before summing; others sum then
    // divide. Both stay within n+1 roundings; premultiplying can also underflow.
    sum_gamma = gamma(average ? n + 1 : n - 1, u) + gamma(n, kDoubleRoundoff);
    prod_gamma = gamma(n - 1, u) + gamma(n, kDoubleRoundoff);
    overflow_gamma = 1 + gamma(n, u);
    scale = average ? 1 / n : 1;
    underflow = average ? (n + 1) * smallest / 2 : 0;
  }
  // At least half an ulp of `value` in the dtype (u |value| is, for normal values), the
  // error of rounding the expected value itself; cheaper than ulp() in the hot loop.
  double half_ulp(double value) const { return u * std::fabs(value) + smallest / 2; }

  const Case& c;
  double n, u, largest, overflow, smallest;
  int top = 0, bottom = 0;
  double sum_gamma = 0, prod_gamma = 0, overflow_gamma = 0, scale = 1, underflow = 0;
};

// The inputs of every rank for one output element: rank r's value is at[r * stride].
struct Column {
  const double* at;
  std::size_t stride;
  double operator[](int rank) const { return at[static_cast<std::size_t>(rank) * stride]; }
};

// What is known about one output element of a float reduction.
struct Element {
  double value = 0;
  double bound = 0;
  std::uint8_t accept = 0;
  double alternative = 0;
};

// Sum and avg: the sum in double and Higham's bound |computed - exact| <= gamma_(n-1) *
// sum |x_i| in the dtype's unit roundoff, plus the oracle's own double rounding and the final
// rounding to the dtype. Additions never underflow (subnormal sums are exact); overflow is
// possible once sum |x_i| nears the largest finite value, and then ±inf and NaN are accepted.
// Exact inputs make every partial sum exact, in double too, so their bound is 0.
// The finite inputs' sum and sum of magnitudes in long double: for float64 inputs near the
// largest finite value, whose partial sums overflow double although the sum itself may not.
std::pair<long double, long double> wide_sums(const Reduction& r, Column inputs) {
  long double sum = 0, magnitude = 0;
  for (int rank = 0; rank < r.c.nranks; ++rank) {
    if (!std::isfinite(inputs[rank])) continue;
    sum += inputs[rank];
    magnitude += std::fabs(static_cast<long double>(inputs[rank]));
  }
  return {sum, magnitude};
}

Element sum_element(const Reduction& r, Column inputs) {
  double sum = 0, magnitude = 0;
  bool nan = false, positive_infinity = false, negative_infinity = false;
  for (int rank = 0; rank < r.c.nranks; ++rank) {
    const double x = inputs[rank];
    if (std::isnan(x)) nan = true;
    else if (std::isinf(x)) (x > 0 ? positive_infinity : negative_infinity) = true;
    else {
      sum += x;
      magnitude += std::fabs(x);
    }
  }
  Element e;
  if (magnitude * r.overflow_gamma * kBoundSlack >= r.overflow) {
    e.accept = AcceptNaN | AcceptPositiveOverflow | AcceptNegativeOverflow;
  }
  if (nan || (positive_infinity && negative_infinity)) {
    e.value = std::numeric_limits<double>::quiet_NaN();
    return e;
  }
  if (positive_infinity || negative_infinity) {
    e.value = positive_infinity ? std::numeric_limits<double>::infinity() : -std::numeric_limits<double>::infinity();
    return e;
  }
  if (r.c.op != RedOp::Avg && r.c.values == ValueKind::Exact) {
    e.value = sum;
    return e;
  }
  if (!std::isfinite(magnitude)) {
    const auto [wide_sum, wide_magnitude] = wide_sums(r, inputs);
    e.value = static_cast<double>(wide_sum * r.scale);
    e.bound = static_cast<double>(r.sum_gamma * wide_magnitude * r.scale) + r.underflow;
  } else {
    e.value = sum * r.scale;
    e.bound = r.sum_gamma * magnitude * r.scale + r.underflow;
  }
  e.bound = (e.bound + r.half_ulp(e.value)) * kBoundSlack;
  return e;
}

// Products: relative bound gamma_(n-1) |p| while every partial product stays in the normal
// range. Any partial product lies between the product of the factors below 1 and the product
// of those above 1 (in magnitude), so those two decide: past the top, ±inf and NaN are
// accepted; past the bottom, rounding in the subnormal range can lose every digit, and the
// element is not checked. Exact inputs are powers of two: the product is exact.
Element prod_element(const Reduction& r, Column inputs) {
  double fraction = 1;
  long exponent = 0, upper_log = 0, lower_log = 0;
  bool nan = false, zero = false, infinity = false, negative = false;
  for (int rank = 0; rank < r.c.nranks; ++rank) {
    const double x = inputs[rank];
    if (std::isnan(x)) {
      nan = true;
      continue;
    }
    negative ^= std::signbit(x);
    if (x == 0) {
      zero = true;
      continue;
    }
    if (std::isinf(x)) {
      infinity = true;
      continue;
    }
    int e;
    const double m = std::frexp(std::fabs(x), &e);  // |x| = m 2^e, m in [0.5, 1)
    if (e > 0) upper_log += e;                      // |x| < 2^e
    if (e <= 0) lower_log += e - 1;                 // |x| >= 2^(e-1)
    fraction *= m;
    int renormalize;
    fraction = std::frexp(fraction, &renormalize);
    exponent += e + renormalize;
  }
  Element e;
  const bool may_overflow = upper_log >= r.top - 1;
  const bool may_underflow = lower_log < r.bottom;
  if (may_overflow) e.accept |= AcceptNaN | AcceptPositiveOverflow | AcceptNegativeOverflow;
  if (may_underflow && !zero) e.accept |= AcceptAnything;
  const double sign = negative ? -1.0 : 1.0;
  if (nan || (zero && infinity)) {
    e.value = std::numeric_limits<double>::quiet_NaN();
  } else if (infinity) {
    e.value = sign * std::numeric_limits<double>::infinity();
  } else if (zero) {
    e.value = sign * 0.0;
  } else {
    const long clamped = std::clamp(exponent, -4000L, 4000L);
    e.value = sign * std::ldexp(fraction, static_cast<int>(clamped));
    if (r.c.values == ValueKind::Exact) return e;
    e.bound = r.prod_gamma * std::fabs(e.value);
    e.bound = (e.bound + r.half_ulp(e.value)) * kBoundSlack;
  }
  return e;
}

// Min and max are exact. With a NaN among the inputs, NCCL-style kernels may propagate it
// (fmin of a comparison) or drop it (IEEE minNum, __hmin): both are accepted.
Element minmax_element(const Reduction& r, Column inputs) {
  const bool minimum = r.c.op == RedOp::Min;
  bool nan = false, any = false;
  double best = 0;
  for (int rank = 0; rank < r.c.nranks; ++rank) {
    const double x = inputs[rank];
    if (std::isnan(x)) {
      nan = true;
      continue;
    }
    if (!any || (minimum ? x < best : x > best)) best = x;
    any = true;
  }
  Element e;
  e.value = best;
  if (nan) {
    e.value = std::numeric_limits<double>::quiet_NaN();
    if (any) {
      e.accept = AcceptAlternative;
      e.alternative = best;
    }
  }
  return e;
}

Element float_element(const Reduction& r, Column inputs) {
  switch (r.c.op) {
    case RedOp::Prod: return prod_element(r, inputs);
    case RedOp::Min:
    case RedOp::Max: return minmax_element(r, inputs);
    default: return sum_element(r, inputs);
  }
}

// Whether every element of a float reduction is known bit for bit.
bool bitwise_float_reduction(const Case& c) { return c.values == ValueKind::Exact && c.op != RedOp::Avg; }

// Inputs are gathered a block of elements at a time, every rank's block in one row, so that
// generating them runs in tight loops; about this many doubles per block.
constexpr std::size_t kBlockValues = 1 << 15;

// Elements per block for `nranks` rows: about kBlockValues values in all, and no more than the
// output has (a small case's rows stay small: zeroing a whole block's 256 KiB for a few elements
// was a tenth of a short check's time).
std::size_t block_length(std::size_t nranks, std::size_t count) {
  return std::max<std::size_t>(1, std::min(kBlockValues / nranks, count));
}

// Exact sums the inputs know without the general path (every rank contributing).
bool expect_exact_sums(const Case& c, const Inputs& inputs, std::size_t base, Expected& out) {
  return c.op == RedOp::Sum && c.values == ValueKind::Exact && inputs.exact_sums(base, out.data);
}

void expect_float_reduction(const Case& c, const Inputs& inputs, std::size_t base, Expected& out) {
  if (expect_exact_sums(c, inputs, base, out)) return;
  const Reduction reduction(c);
  const bool bitwise = bitwise_float_reduction(c);
  if (!bitwise) {
    out.bound.assign(out.count, 0);
    out.accept.assign(out.count, 0);
  }
  const auto nranks = static_cast<std::size_t>(c.nranks);
  const std::size_t block = block_length(nranks, out.count);
  std::vector<double> rows(nranks * block);
  for (std::size_t first = 0; first < out.count; first += block) {
    const std::size_t length = std::min(block, out.count - first);
    for (int rank = 0; rank < c.nranks; ++rank) {
      inputs.values(rank, base + first, std::span(rows).subspan(static_cast<std::size_t>(rank) * block, length));
    }
    for (std::size_t j = 0; j < length; ++j) {
      const Element e = float_element(reduction, Column{rows.data() + j, block});
      // Where overflow is accepted, the finite value to compare against saturates.
      const Saturation saturation = (e.accept & AcceptPositiveOverflow) ? Saturation::Finite : Saturation::None;
      store(out, first + j, encode(c.dtype, e.value, saturation));
      if (bitwise) continue;
      out.bound[first + j] = e.bound;
      out.accept[first + j] = e.accept;
      if (e.accept & AcceptAnything) ++out.unchecked;
      if (e.accept & AcceptAlternative) {
        if (out.alternative.empty()) out.alternative.assign(out.count, 0);
        out.alternative[first + j] = e.alternative;
      }
    }
  }
}

void expect_reduction(const Case& c, const Inputs& inputs, int rank, Expected& out) {
  const std::size_t base = input_base(c, rank);
  if (is_float(c.dtype)) {
    expect_float_reduction(c, inputs, base, out);
    return;
  }
  // A block at a time, every rank's inputs for it filled into a row first (a batch each).
  const auto nranks = static_cast<std::size_t>(c.nranks);
  const std::size_t size = size_of(c.dtype);
  const std::size_t block = block_length(nranks, out.count);
  std::vector<std::byte> rows(nranks * block * size);
  for (std::size_t first = 0; first < out.count; first += block) {
    const std::size_t length = std::min(block, out.count - first);
    for (int source = 0; source < c.nranks; ++source) {
      inputs.fill(source, base + first,
                  std::span(rows).subspan(static_cast<std::size_t>(source) * block * size, length * size));
    }
    for (std::size_t j = 0; j < length; ++j) {
      const auto element = [&](int source) {
        return load_bits(c.dtype, rows, static_cast<std::size_t>(source) * block + j);
      };
      store(out, first + j, reduce_integers(c, element));
    }
  }
}

}  // namespace

Expected expected(const Case& c, int rank) { return expected(InputGenerator(c), rank); }

Expected expected(const Inputs& inputs, int rank) {
  const Case& c = inputs.which();
  Expected out;
  out.dtype = c.dtype;
  out.count = output_elements(c, rank);
  out.data.resize(out.count * size_of(c.dtype));
  if (reduces(c.collective)) {
    expect_reduction(c, inputs, rank, out);
  } else {
    expect_movement(c, inputs, rank, out);
  }
  return out;
}

Oracle::Oracle(const Case& c) : case_(c), inputs_(c) {
  per_rank_.resize(static_cast<std::size_t>(std::max(c.nranks, 0)));
}

Oracle::~Oracle() = default;

const Expected& Oracle::expected(int rank) {
  if (rank_identical(case_.collective)) {
    if (!shared_) shared_ = std::make_unique<Expected>(collcheck::expected(inputs_, 0));
    return *shared_;
  }
  std::unique_ptr<Expected>& slot = per_rank_.at(static_cast<std::size_t>(rank));
  if (!slot) slot = std::make_unique<Expected>(collcheck::expected(inputs_, rank));
  return *slot;
}

bool Oracle::all_match_in_blocks(std::span<const std::span<const std::byte>> outputs) const {
  const Case& c = case_;
  if (!rank_identical(c.collective) || !reduces(c.collective) || c.op != RedOp::Sum || c.values != ValueKind::Exact ||
      outputs.size() != static_cast<std::size_t>(c.nranks)) {
    return false;
  }
  const std::size_t size = size_of(c.dtype);
  const std::size_t bytes = output_elements(c, 0) * size;
  for (std::span<const std::byte> output : outputs) {
    if (output.size() != bytes) return false;
  }
  std::vector<std::byte> block(std::min(bytes, kBlockValues * size));
  for (std::size_t first = 0; first < bytes; first += block.size()) {
    const std::size_t length = std::min(block.size(), bytes - first);
    if (!inputs_.exact_sums(first / size, std::span(block).first(length))) return false;
    for (std::span<const std::byte> output : outputs) {
      if (std::memcmp(block.data(), output.data() + first, length) != 0) return false;
    }
  }
  return true;
}

std::vector<Verdict> Oracle::compare_all(std::span<const std::span<const std::byte>> outputs,
                                         std::size_t max_reported) {
  std::vector<Verdict> verdicts(outputs.size());
  if (all_match_in_blocks(outputs)) {
    for (Verdict& verdict : verdicts) verdict.checked = output_elements(case_, 0);
    return verdicts;
  }
  for (std::size_t rank = 0; rank < outputs.size(); ++rank) {
    verdicts[rank] = compare(expected(static_cast<int>(rank)), static_cast<int>(rank), outputs[rank], max_reported);
  }
  return verdicts;
}

}  // namespace collcheck
