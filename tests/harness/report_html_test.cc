// `collcheck check --html`: the page parses as XML whatever the names and details hold (& < > "
// escaped), carries the case table, the outcomes under faults and every failure with its shrunk
// case, detail and replay command, and neither runs a script nor loads anything.
#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

#include "faults/plan.h"
#include "harness/check.h"
#include "harness/report.h"
#include "tests/support/html_page.h"

namespace collcheck {
namespace {

using Cells = std::vector<std::vector<std::string>>;

// A backend named by a schedule file whose path holds every character XML escapes.
const std::string kOddBackend = "schedule:a&b<c>\"d\".xml@sim";
// A detail with those characters, and entities written out that must stay text.
const std::string kOddDetail = "rank 1: element 2 is 5, expected 6 < 7 && \"6\" > 4\nsaw &lt;x&gt; &amp; more";

// Two backends, three rows of cases, a matrix under faults and one failure on the odd backend.
CheckReport sample_report() {
  CheckReport report;
  report.seed = 5;
  report.seconds = 2.04;
  report.backends = {"ring@sim", kOddBackend};
  report.table[{"ring@sim", Collective::AllReduce}] = Tally{40, 40, 0, 0};
  report.table[{"ring@sim", Collective::AllGather}] = Tally{35, 33, 0, 2};
  report.table[{kOddBackend, Collective::AllReduce}] = Tally{25, 22, 3, 0};
  report.faults = "random, swarm drop,corrupt (given)";
  report.outcomes[{"ring@sim", "corrupt"}].runs = {3, 9, 0, 0, 0};
  report.outcomes[{kOddBackend, "drop"}].runs = {1, 2, 4, 5, 0};
  Failure failure;
  failure.backend = kOddBackend;
  failure.property = "oracle";
  failure.shrunk = parse_case("allreduce/f32/sum/n=3/ranks=2").value();
  failure.original = parse_case("allreduce/f32/sum/n=1000/ranks=7").value();
  failure.schedule_seed = 11;
  failure.detail = kOddDetail;
  failure.plan = parse_fault_plan("drop:link=0->1:times=1").value();
  failure.replay =
      replay_command(failure.backend, failure.shrunk, failure.schedule_seed, failure.property, failure.plan);
  failure.cases_until = 12;
  failure.count = 3;
  failure.shrink_runs = 40;
  report.failures.push_back(failure);
  return report;
}

std::string text_of(const pugi::xml_document& document, const char* xpath) {
  const pugi::xpath_node found = document.select_node(xpath);
  EXPECT_TRUE(found) << "no " << xpath;
  return found ? found.node().child_value() : "";
}

TEST(HtmlReport, ParsesAndCarriesTablesAndFailures) {
  const CheckReport report = sample_report();
  std::ostringstream page;
  write_html(report, page);
  pugi::xml_document document;
  ASSERT_NO_FATAL_FAILURE(testing::parse_page(page.str(), document));
  // The odd characters were escaped: the raw page never holds the detail as it is.
  EXPECT_EQ(page.str().find(kOddDetail), std::string::npos);

  const pugi::xpath_node_set tables = document.select_nodes("//table");
  ASSERT_EQ(tables.size(), 2u);
  EXPECT_EQ(testing::table_cells(tables[0].node()),
            (Cells{{"backend", "collective", "cases", "passed", "failed", "skipped"},
                   {"ring@sim", "allreduce", "40", "40", "0", "0"},
                   {"ring@sim", "allgather", "35", "33", "0", "2"},
                   {kOddBackend, "allreduce", "25", "22", "3", "0"}}));
  EXPECT_EQ(testing::table_cells(tables[1].node()),
            (Cells{{"backend", "fault", "runs", "ok", "detected", "hang", "corrupt", "crash"},
                   {"ring@sim", "corrupt", "12", "3", "9", "0", "0", "0"},
                   {kOddBackend, "drop", "12", "1", "2", "4", "5", "0"}}));
  // The rows to look at are marked: the backend with failed cases, the fault that hung and corrupted.
  EXPECT_EQ(document.select_nodes("//table[1]//tr[@class='flagged']").size(), 1u);
  EXPECT_EQ(std::string(document.select_node("//tr[@class='flagged']/td").node().child_value()), kOddBackend);
  EXPECT_EQ(document.select_nodes("//tr[@class='flagged']").size(), 2u);

  EXPECT_EQ(text_of(document, "//p[@class='verdict-failed']"),
            "100 cases in 2.0 s: 95 passed, 3 failed, 2 skipped (seed 5)");
  const Failure& failure = report.failures.front();
  EXPECT_EQ(document.select_nodes("//section[@class='failure']").size(), 1u);
  EXPECT_EQ(text_of(document, "//section[@class='failure']/h3"),
            "FAILED oracle on " + kOddBackend + " after 12 cases (0.0 s), 3 failing cases alike, shrunk in 40 runs");
  EXPECT_EQ(text_of(document, "//pre[@class='case']"), to_string(failure.shrunk));
  EXPECT_EQ(text_of(document, "//pre[@class='faults']"), "drop:link=0->1:times=1");
  EXPECT_EQ(text_of(document, "//pre[@class='detail']"), kOddDetail);
  EXPECT_EQ(text_of(document, "//pre[@class='replay']"), failure.replay);
  EXPECT_NE(failure.replay.find("--backend '" + kOddBackend + "'"), std::string::npos) << failure.replay;

  EXPECT_EQ(testing::outside_reference(document), "");
  EXPECT_EQ(page.str().find("<script"), std::string::npos);
  EXPECT_EQ(page.str().find("http:"), page.str().find("http://www.w3.org/1999/xhtml"));  // the namespace alone
}

// A report that held: no failure section, no outcome table, the verdict marked as held.
TEST(HtmlReport, AReportThatHeldHasNoFailures) {
  CheckReport report;
  report.seed = 1;
  report.backends = {"ring@sim"};
  report.table[{"ring@sim", Collective::AllReduce}] = Tally{10, 10, 0, 0};
  std::ostringstream page;
  write_html(report, page);
  pugi::xml_document document;
  ASSERT_NO_FATAL_FAILURE(testing::parse_page(page.str(), document));
  EXPECT_EQ(document.select_nodes("//table").size(), 1u);
  EXPECT_EQ(document.select_nodes("//section").size(), 0u);
  EXPECT_EQ(text_of(document, "//p[@class='verdict-held']"),
            "10 cases in 0.0 s: 10 passed, 0 failed, 0 skipped (seed 1)");
}

}  // namespace
}  // namespace collcheck
