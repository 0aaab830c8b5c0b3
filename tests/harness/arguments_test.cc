// The number sets of the command line (`--ranks 1..4,8`, harness/arguments.h): what they accept,
// and the bounds that keep a typed set from spending memory before anything runs.
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "harness/arguments.h"

namespace collcheck::cli {
namespace {

TEST(NumberSet, ItemsAndRangesAreSortedWithoutRepeats) {
  const auto set = parse_set("--ranks", "8,1..4,2,16", 1, 4096);
  ASSERT_TRUE(set.ok()) << set.error().message;
  EXPECT_EQ(*set, (std::vector<std::uint64_t>{1, 2, 3, 4, 8, 16}));
}

TEST(NumberSet, AMillionValuesInAllAtMost) {
  // One range over the bound, and many ranges each under it that together pass it.
  EXPECT_FALSE(parse_set("--counts", "0..1000000", 0, 1'000'000'000).ok());
  EXPECT_TRUE(parse_set("--counts", "0..999999", 0, 1'000'000'000).ok());
  std::string many;
  for (int item = 0; item < 20; ++item) many += (many.empty() ? "" : ",") + std::string("0..99999");
  const auto refused = parse_set("--counts", many, 0, 1'000'000'000);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().message.find("more than a million values"), std::string::npos) << refused.error().message;
}

TEST(NumberSet, ARangeEndingAtTheLargestValueEnds) {
  constexpr std::uint64_t largest = std::numeric_limits<std::uint64_t>::max();
  const std::string text = std::to_string(largest - 2) + ".." + std::to_string(largest);
  const auto set = parse_set("--seed", text, 0, largest);
  ASSERT_TRUE(set.ok()) << set.error().message;
  EXPECT_EQ(*set, (std::vector<std::uint64_t>{largest - 2, largest - 1, largest}));
}

}  // namespace
}  // namespace collcheck::cli
