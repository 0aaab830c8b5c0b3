// Properties of exact inputs: any rank order and any reduction tree, rounding every step to
// the dtype, gives exactly the oracle's bits, for every dtype and op but avg.
#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include <vector>

#include "reference/oracle.h"
#include "tests/reference/reduction_orders.h"

namespace collcheck {
namespace {

using testing::Combiner;
using testing::Stream;

// Integers wrap: any order of wrapping sums and products gives the same bits.
std::uint64_t integer_reduce(const Case& c, const InputGenerator& inputs, std::size_t index, Stream& stream) {
  std::vector<int> ranks(static_cast<std::size_t>(c.nranks));
  for (int r = 0; r < c.nranks; ++r) ranks[static_cast<std::size_t>(r)] = r;
  for (std::size_t i = ranks.size(); i > 1; --i) std::swap(ranks[i - 1], ranks[stream.below_n(i)]);
  std::uint64_t accumulator = inputs.bits(ranks[0], index);
  for (std::size_t k = 1; k < ranks.size(); ++k) {
    const std::uint64_t x = inputs.bits(ranks[k], index);
    accumulator = c.op == RedOp::Prod ? accumulator * x : accumulator + x;
  }
  return accumulator;
}

RC_GTEST_PROP(ExactInputs, GiveOrderIndependentResults, ()) {
  Case c;
  c.dtype = *rc::gen::elementOf(std::vector<DType>(all_dtypes().begin(), all_dtypes().end()));
  const bool integer = !is_float(c.dtype);
  c.op = *rc::gen::element(RedOp::Sum, RedOp::Prod, RedOp::Min, RedOp::Max);
  if (integer) c.op = *rc::gen::element(RedOp::Sum, RedOp::Prod);
  c.nranks = *rc::gen::oneOf(rc::gen::inRange(1, 17), rc::gen::inRange(17, 600));
  c.count = *rc::gen::inRange<std::size_t>(1, 8);
  c.seed = *rc::gen::arbitrary<std::uint64_t>();
  c.values = ValueKind::Exact;
  RC_TAG(name(c.dtype));

  const InputGenerator inputs(c);
  const Expected e = expected(inputs, 0);
  RC_ASSERT(e.bitwise());
  Stream stream(*rc::gen::arbitrary<std::uint64_t>());
  const Combiner combine{c.dtype, c.op, *rc::gen::arbitrary<bool>()};
  for (std::size_t i = 0; i < c.count; ++i) {
    std::uint64_t got;
    if (integer) {
      got = integer_reduce(c, inputs, i, stream);
    } else {
      std::vector<double> values;
      for (int rank = 0; rank < c.nranks; ++rank) values.push_back(inputs.value(rank, i));
      got = encode(c.dtype, testing::random_order_reduce(values, combine, stream));
    }
    std::vector<std::byte> packed(size_of(c.dtype));
    store_bits(c.dtype, packed, 0, got);
    const std::uint64_t want = e.bits(i);
    RC_ASSERT(load_bits(c.dtype, packed, 0) == want);
  }
}

}  // namespace
}  // namespace collcheck
