// A campaign's shares (CaseShare) and their merge: the shares of a stream, each run on its own
// and sent as bytes, merge into the report one process gives over the same cases; a share that
// never reported is named; groups past --max-failures are counted.
#include <gtest/gtest.h>

#include <optional>

#include "harness/campaign.h"
#include "harness/check.h"
#include "harness/faulty_backend.h"
#include "impls/registry.h"
#include "tests/support/broken_backend.h"

namespace collcheck {
namespace {

// The report of `spec` over the first 40 cases of seed 5, of the whole stream or one share.
CheckReport run_share(const std::string& spec, CaseShare share, const std::string& faults = "") {
  auto made = make_backends(spec);
  EXPECT_TRUE(made.ok()) << made.error().text();
  std::vector<std::unique_ptr<Backend>> backends = std::move(made).value();
  for (auto& backend : backends) {
    if (faults.empty()) continue;
    backend = std::move(with_faults(std::move(backend), FaultPlan{}).value());
  }
  CheckOptions options = testing::bounded_options(5, 40, 8, 1024);
  options.jobs = 1;
  options.faults = faults;
  options.share = share;
  return run_check(options, backends, nullptr);
}

// Each share's report through bytes, as rank 0 gets it.
std::vector<std::optional<CheckReport>> shares_of(const std::string& spec, std::size_t count,
                                                  const std::string& faults = "") {
  std::vector<std::optional<CheckReport>> shares;
  for (std::size_t index = 0; index < count; ++index) {
    Result<CheckReport> sent = decode_report(encode_report(run_share(spec, {index, count}, faults)));
    EXPECT_TRUE(sent.ok()) << sent.error().text();
    shares.emplace_back(std::move(sent).value());
  }
  return shares;
}

std::string failures_text(const CheckReport& report) {
  std::string text;
  for (const Failure& f : report.failures) {
    text += f.replay + " after " + std::to_string(f.cases_until) + " cases, " + std::to_string(f.count) + " alike\n";
  }
  return text + std::to_string(report.unreported_failures) + " unreported\n";
}

TEST(Campaign, SharesMergeIntoTheReportOfOneProcess) {
  const std::string spec = "mutant:drop-remainder@sim";
  const CheckReport one = run_share(spec, {});
  ASSERT_FALSE(one.failures.empty());
  const CheckReport merged = merge_reports(shares_of(spec, 3), {"a", "b", "c"}, {}, 10);
  EXPECT_EQ(merged.shares, 3u);
  EXPECT_TRUE(merged.missing_shares.empty());
  EXPECT_EQ(merged.total().cases, 40u);
  for (const auto& [key, tally] : one.table) {
    EXPECT_EQ(merged.table.at(key).failed, tally.failed) << key.first;
    EXPECT_EQ(merged.table.at(key).cases, tally.cases) << key.first;
  }
  EXPECT_EQ(failures_text(merged), failures_text(one));
  EXPECT_EQ(merged.first_failure, one.first_failure);
}

TEST(Campaign, SharesUnderRandomFaultsMergeIntoTheReportOfOneProcess) {
  const std::string spec = "mutant:drop-remainder@sim";
  const CheckReport one = run_share(spec, {}, "random:corrupt");
  ASSERT_FALSE(one.failures.empty());
  const CheckReport merged = merge_reports(shares_of(spec, 2, "random:corrupt"), {"a", "b"}, {}, 10);
  EXPECT_EQ(failures_text(merged), failures_text(one));
  EXPECT_EQ(merged.faults, one.faults);
  for (const auto& [key, counts] : one.outcomes) EXPECT_EQ(merged.outcomes.at(key).runs, counts.runs) << key.second;
}

TEST(Campaign, AReportGoesThroughBytesUnchanged) {
  const CheckReport report = run_share("mutant:drop-remainder@sim", {}, "random:corrupt");
  const std::string bytes = encode_report(report);
  Result<CheckReport> back = decode_report(bytes);
  ASSERT_TRUE(back.ok()) << back.error().text();
  EXPECT_EQ(encode_report(*back), bytes);
  EXPECT_FALSE(decode_report("{\"seed\": 1}").ok());
  EXPECT_FALSE(decode_report("not json").ok());
}

TEST(Campaign, AShareNotHeardFromIsNamedWithItsHost) {
  std::vector<std::optional<CheckReport>> shares = shares_of("ring@sim", 2);
  shares[1].reset();
  const CheckReport merged = merge_reports(shares, {"node0", "node1"}, {"", "it stopped"}, 10);
  ASSERT_EQ(merged.missing_shares.size(), 1u);
  EXPECT_EQ(merged.missing_shares[0].index, 1u);
  EXPECT_EQ(merged.missing_shares[0].host, "node1");
  EXPECT_EQ(merged.missing_shares[0].why, "it stopped");
  EXPECT_EQ(merged.total().cases, 20u);  // share 0's cases: 0, 2, ... 38
}

TEST(Campaign, GroupsPastMaxFailuresAreCountedNotReported) {
  const CheckReport merged = merge_reports(shares_of("mutant:drop-remainder@sim", 2), {"a", "b"}, {}, 1);
  ASSERT_EQ(merged.failures.size(), 1u);
  EXPECT_GT(merged.unreported_failures, 0u);
}

}  // namespace
}  // namespace collcheck
