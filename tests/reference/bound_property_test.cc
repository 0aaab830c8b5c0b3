// Properties of the float bound: real and special inputs reduced in any rank order and along
// any tree, rounding every step to the dtype, always pass the oracle's comparison.
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

const std::vector<DType> kFloatDtypes{DType::Float16, DType::BFloat16,   DType::Float32,
                                      DType::Float64, DType::Float8E4M3, DType::Float8E5M2};

RC_GTEST_PROP(FloatBound, HoldsForRandomReductionOrders, ()) {
  Case c;
  c.dtype = *rc::gen::elementOf(kFloatDtypes);
  c.op = *rc::gen::elementOf(std::vector<RedOp>(all_ops().begin(), all_ops().end()));
  c.values = *rc::gen::element(ValueKind::Real, ValueKind::Special, ValueKind::Exact);
  c.nranks = *rc::gen::oneOf(rc::gen::inRange(1, 9), rc::gen::inRange(9, 200));
  c.count = *rc::gen::inRange<std::size_t>(1, 8);
  c.seed = *rc::gen::arbitrary<std::uint64_t>();
  c.collective = *rc::gen::element(Collective::AllReduce, Collective::ReduceScatter);
  const int rank = *rc::gen::inRange(0, c.nranks);
  RC_TAG(name(c.dtype), name(c.op), name(c.values));

  const InputGenerator inputs(c);
  const Expected e = expected(inputs, rank);
  Stream stream(*rc::gen::arbitrary<std::uint64_t>());
  const Combiner combine{c.dtype, c.op, *rc::gen::arbitrary<bool>()};
  const std::size_t base = c.collective == Collective::ReduceScatter ? static_cast<std::size_t>(rank) * c.count : 0;
  std::vector<std::byte> got(c.count * size_of(c.dtype));
  for (std::size_t i = 0; i < c.count; ++i) {
    std::vector<double> values;
    values.reserve(static_cast<std::size_t>(c.nranks));
    for (int r = 0; r < c.nranks; ++r) values.push_back(inputs.value(r, base + i));
    store_bits(c.dtype, got, i, encode(c.dtype, testing::random_order_reduce(values, combine, stream)));
  }
  const Verdict v = compare(e, rank, got);
  RC_LOG() << to_string(c) << "\n" << v.describe(c.dtype);
  RC_ASSERT(v.ok);
}

// The bound is not vacuous: for float32 it is gamma_63 = 63 * 2^-24 (and a little) of the
// sum of magnitudes (at most 64 * 8 here), far below the values themselves.
TEST(FloatBound, IsTightEnoughToMeanSomething) {
  Case c;
  c.dtype = DType::Float32;
  c.values = ValueKind::Real;
  c.nranks = 64;
  c.count = 256;
  const Expected e = expected(c, 0);
  for (std::size_t i = 0; i < c.count; ++i) EXPECT_LT(e.bound[i], 64 * 8 * 64 * 0x1p-24) << i;
}

}  // namespace
}  // namespace collcheck
