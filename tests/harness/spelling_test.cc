// The mpi backend's datatype spellings as a generator dimension: the case seeds check draws
// reach every predefined spelling of a width, and a backend wrong only under one spelling is
// caught and shrunk to a case that still runs with it.
#include <gtest/gtest.h>

#include <functional>
#include <set>
#include <string>

#include "harness/case_generator.h"
#include "harness/check.h"
#include "impls/registry.h"
#include "impls/vendors/mpi/mpi_rank_backend.h"
#include "tests/support/broken_backend.h"

namespace collcheck {
namespace {

TEST(MpiSpellings, EverySpellingOfAWidthIsDrawn) {
  auto made = make_backends("ring@sim");
  ASSERT_TRUE(made.ok()) << made.error().text();
  CaseLimits limits;
  limits.dtypes = {DType::Int64, DType::UInt64};
  limits.max_count = 64;
  const rc::Gen<Case> cases = case_generator(made.value().front()->capabilities(), limits);
  rc::Random random(3);
  std::set<std::string> seen;
  for (int i = 0; i < 200; ++i) seen.insert(std::string(mpi_type_name(cases(random.split(), 50).value())));
  for (const char* spelling :
       {"MPI_INT64_T", "MPI_LONG", "MPI_LONG_LONG", "MPI_UINT64_T", "MPI_UNSIGNED_LONG", "MPI_UNSIGNED_LONG_LONG"}) {
    EXPECT_TRUE(seen.contains(spelling)) << spelling << " never drawn";
  }
}

TEST(MpiSpellings, ABackendBrokenOnlyUnderOneSpellingIsCaughtAndShrunkToIt) {
  for (std::uint64_t seed : {1, 2, 3}) {
    auto made = make_backends("ring@sim");
    ASSERT_TRUE(made.ok()) << made.error().text();
    std::vector<std::unique_ptr<Backend>> list;
    list.push_back(std::make_unique<testing::BrokenWhere>(
        std::move(made.value().front()), [](const Case& c) { return mpi_type_name(c) == "MPI_LONG_LONG"; }));
    CheckOptions options;
    options.seed = seed;
    options.time_budget = 600;  // never the limit: --cases is
    options.cases = 300;
    options.limits.dtypes = {DType::Int64};
    options.limits.max_count = 256;
    options.properties = {"liveness"};
    options.stop_at_first_failure = true;
    const CheckReport report = run_check(options, list, nullptr);
    ASSERT_EQ(report.failures.size(), 1u) << "seed " << seed;
    EXPECT_EQ(mpi_type_name(report.failures[0].shrunk), "MPI_LONG_LONG")
        << "seed " << seed << ": " << to_string(report.failures[0].shrunk);
  }
}

}  // namespace
}  // namespace collcheck
