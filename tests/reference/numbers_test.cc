// Checks the one number grammar (integers with suffixes, decimals, durations, probabilities):
// what it accepts, what it refuses (signs, hex, nan, inf, spaces) and what messages say; the
// quoting of bad input; and the clock conversions that saturate instead of overflowing.
#include "reference/numbers.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <string>
#include <string_view>
#include <vector>

namespace collcheck {
namespace {

constexpr CountRange kAnyCount{0, UINT64_MAX, true, {}};
constexpr DurationRange kBudget{0, true, 86400, false};

std::string message_of(const Error& error) { return error.text(); }

TEST(Numbers, QuotedEscapesControlBytesAndCutsLongInput) {
  EXPECT_EQ(quoted_input("64K"), "'64K'");
  EXPECT_EQ(quoted_input(std::string_view("a\x01\n\t\r'\\\xff", 8)), "'a\\x01\\n\\t\\r\\'\\\\\\xff'");
  EXPECT_EQ(quoted_input(std::string_view("\0", 1)), "'\\x00'");
  const std::string huge(100000, 'x');
  const std::string shown = quoted_input(huge);
  EXPECT_EQ(shown, "'" + std::string(60, 'x') + "'... (100000 bytes)");
  EXPECT_EQ(escaped_input("k=\x02"), "k=\\x02");
}

TEST(Numbers, IntegersAreDecimalDigitsWithOptionalSuffixes) {
  EXPECT_EQ(parse_integer("n", "0", kAnyCount).value(), 0u);
  EXPECT_EQ(parse_integer("n", "18446744073709551615", kAnyCount).value(), UINT64_MAX);
  EXPECT_EQ(parse_integer("n", "64K", kAnyCount).value(), 65536u);
  EXPECT_EQ(parse_integer("n", "64k", kAnyCount).value(), 65536u);
  EXPECT_EQ(parse_integer("n", "16M", kAnyCount).value(), 16u << 20);
  EXPECT_EQ(parse_integer("n", "2G", kAnyCount).value(), 2ull << 30);
  for (std::string_view bad : {"", "+1", "-1", "0x10", "1.5", " 1", "1 ", "1e3", "K", "nan", "inf", "1KB", "1T"}) {
    Result<std::uint64_t> value = parse_integer("--count", bad, kAnyCount);
    ASSERT_FALSE(value.ok()) << bad;
    EXPECT_EQ(value.error().field, "--count");
    EXPECT_NE(value.error().message.find("must be an integer in 0..18446744073709551615 (K, M, G suffixes allowed)"),
              std::string::npos)
        << value.error().message;
  }
  EXPECT_FALSE(parse_integer("n", "64K", CountRange{0, UINT64_MAX, false, {}}).ok());
}

TEST(Numbers, IntegersOutsideTheirRangeSayTheRange) {
  EXPECT_EQ(message_of(parse_integer("--ranks", "0", CountRange{1, 4096, false, {}}).error()),
            "--ranks 0: must be 1..4096");
  EXPECT_EQ(message_of(parse_integer("--count", "64M", CountRange{0, 1 << 24, true, {}}).error()),
            "--count 67108864: must be 0..16777216");
  EXPECT_EQ(message_of(parse_integer("n", "99999999999999999999", kAnyCount).error()),
            "n '99999999999999999999': must be 0..18446744073709551615");
  EXPECT_EQ(message_of(parse_integer("n", "17179869184G", kAnyCount).error()),
            "n '17179869184G': must be 0..18446744073709551615");
  EXPECT_EQ(message_of(parse_integer("segment", "x", CountRange{8, 64, false, "bytes"}).error()),
            "segment 'x': must be an integer in 8..64 (bytes)");
}

TEST(Numbers, DecimalsRefuseNanInfHexAndSigns) {
  EXPECT_DOUBLE_EQ(parse_decimal("p", "0.5", 0, 1).value(), 0.5);
  EXPECT_DOUBLE_EQ(parse_decimal("p", ".5", 0, 1).value(), 0.5);
  EXPECT_DOUBLE_EQ(parse_decimal("p", "5.", 0, 10).value(), 5);
  EXPECT_DOUBLE_EQ(parse_decimal("x", "1e-3", 0, 1).value(), 0.001);
  EXPECT_DOUBLE_EQ(parse_decimal("x", "1.5E2", 0, 1000).value(), 150);
  for (std::string_view bad :
       {"", ".", "nan", "NaN", "inf", "infinity", "-1", "+1", "0x1p3", "1e", "1e+3", "1,5", " 1", "1 ", "1e400", "2"}) {
    EXPECT_FALSE(parse_decimal("x", bad, 0, 1).ok()) << bad;
  }
  EXPECT_EQ(message_of(parse_decimal("timeout", "nan", 0.001, 86400, "seconds, 0.001..86400").error()),
            "timeout 'nan': must be seconds, 0.001..86400");
  EXPECT_EQ(message_of(parse_probability("p", "1.5").error()), "p '1.5': must be a probability in 0..1");
  EXPECT_TRUE(is_decimal("7e-7"));
  EXPECT_FALSE(is_decimal("7e+7"));
}

TEST(Numbers, DurationsTakeUnitsAndNeverNanOrZeroWhereRefused) {
  EXPECT_DOUBLE_EQ(parse_duration("t", "90", kBudget).value(), 90);
  EXPECT_DOUBLE_EQ(parse_duration("t", "8s", kBudget).value(), 8);
  EXPECT_DOUBLE_EQ(parse_duration("t", "500ms", kBudget).value(), 0.5);
  EXPECT_DOUBLE_EQ(parse_duration("t", "1.5m", kBudget).value(), 90);
  EXPECT_DOUBLE_EQ(parse_duration("t", "24h", kBudget).value(), 86400);
  EXPECT_DOUBLE_EQ(parse_duration("t", "2.5", kBudget).value(), 2.5);
  for (std::string_view bad : {"nan", "inf", "infinity", "none", "-1", "+1", "0x10", "", "s", "5 s", "5sec", "5d"}) {
    Result<double> value = parse_duration("--time-budget", bad, kBudget);
    ASSERT_FALSE(value.ok()) << bad;
    EXPECT_EQ(value.error().field, "--time-budget");
    EXPECT_NE(value.error().message.find("a number with an optional unit ms, s, m or h"), std::string::npos)
        << value.error().message;
  }
  EXPECT_EQ(message_of(parse_duration("--time-budget", "0", kBudget).error()),
            "--time-budget '0': must be more than 0 s and at most 24h");
  EXPECT_EQ(message_of(parse_duration("--time-budget", "25h", kBudget).error()),
            "--time-budget '25h': must be more than 0 s and at most 24h");
  EXPECT_FALSE(parse_duration("t", "1e400", kBudget).ok());
}

TEST(Numbers, AnInfiniteDeadlineIsNone) {
  EXPECT_TRUE(std::isinf(parse_duration("--deadline", "infinity", kDeadlineRange).value()));
  EXPECT_TRUE(std::isinf(parse_duration("--deadline", "none", kDeadlineRange).value()));
  EXPECT_DOUBLE_EQ(parse_duration("--deadline", "8s", kDeadlineRange).value(), 8);
  EXPECT_FALSE(parse_duration("--deadline", "inf", kDeadlineRange).ok());
  EXPECT_FALSE(parse_duration("--deadline", "0", kDeadlineRange).ok());
  EXPECT_NE(parse_duration("--deadline", "x", kDeadlineRange).error().message.find("or infinity or none"),
            std::string::npos);
}

TEST(Numbers, NumberTextReadsBackThroughTheGrammar) {
  for (double value : {0.0, 0.5, 1e-7, 1e6, 1e10, 86400.0, 0.1 + 0.2}) {
    const std::string text = number_text(value);
    EXPECT_DOUBLE_EQ(parse_decimal("x", text, 0, 1e300).value(), value) << text;
  }
  EXPECT_EQ(number_text(1e10), "1e10");
}

// A table's number through its printf pattern, the text around the conversion kept, and the
// widest a table prints (a 60-character cell) whole: fails where the buffer was 32 characters.
TEST(Numbers, PrintfTextKeepsThePatternsTextAndWideCells) {
  EXPECT_EQ(printf_text("%.2f", 1.0 / 3), "0.33");
  EXPECT_EQ(printf_text("%5.2f", 2.5), " 2.50");
  EXPECT_EQ(printf_text("%g s", 0.25), "0.25 s");
  EXPECT_EQ(printf_text("%60.1f", 7), std::string(57, ' ') + "7.0");
}

TEST(Numbers, ListTextJoinsRunsAsTheCommandLineReadsThem) {
  EXPECT_EQ(list_text(std::vector<std::uint64_t>{}), "");
  EXPECT_EQ(list_text(std::vector<std::uint64_t>{4}), "4");
  EXPECT_EQ(list_text(std::vector<std::uint64_t>{0, 1}), "0,1");
  EXPECT_EQ(list_text(std::vector<std::uint64_t>{0, 1, 2, 3, 5, 7, 8, 9, 11, 12}), "0..3,5,7..9,11,12");
  EXPECT_EQ(ranks_text(std::vector<std::uint64_t>{4}), "rank 4");
  EXPECT_EQ(ranks_text(std::vector<std::uint64_t>{0, 1, 2, 5}), "ranks 0..2,5");
}

TEST(Numbers, ClockConversionsSaturate) {
  using Clock = std::chrono::steady_clock;
  EXPECT_EQ(clock_duration(INFINITY), Clock::duration::max());
  EXPECT_EQ(clock_duration(1e10), Clock::duration::max());  // 1e19 ns does not fit in 64 bits
  EXPECT_EQ(clock_duration(1e300), Clock::duration::max());
  EXPECT_EQ(clock_duration(NAN), Clock::duration::zero());
  EXPECT_EQ(clock_duration(-5), Clock::duration::zero());
  EXPECT_EQ(clock_duration(1.5), std::chrono::milliseconds(1500));
  const Clock::time_point now = Clock::now();
  EXPECT_EQ(clock_after(now, INFINITY), Clock::time_point::max());
  const Clock::time_point late(Clock::duration::max() - std::chrono::seconds(1));
  EXPECT_EQ(clock_after(late, 2), Clock::time_point::max());
  EXPECT_GT(clock_after(now, 1e9), now);
  EXPECT_EQ(clock_after(now, 2), now + std::chrono::seconds(2));
}

}  // namespace
}  // namespace collcheck
