// `collcheck check --html FILE`: the report as one self-contained page, the same parts as the
// text report in the same order: the verdict, the case table backend × collective, under faults
// the outcome matrix backend × fault kind, what could not run, and every failure with its shrunk
// case, detail and replay command.
#include <string>
#include <vector>

#include "harness/html_page.h"
#include "harness/report.h"

namespace collcheck {
namespace {

using html::xml_text;

// Rows to look at: a case-table row with a failed case; an outcome row with a run that hung,
// returned a wrong result as success, or crashed.
std::vector<bool> failed_rows(const CheckReport& report) {
  std::vector<bool> flagged = {false};
  for (const auto& [key, tally] : report.table) flagged.push_back(tally.failed > 0);
  return flagged;
}

std::vector<bool> bad_outcome_rows(const CheckReport& report) {
  std::vector<bool> flagged = {false};
  for (const auto& [key, counts] : report.outcomes) {
    flagged.push_back(counts.runs[static_cast<std::size_t>(Outcome::Hang)] +
                          counts.runs[static_cast<std::size_t>(Outcome::Corrupt)] +
                          counts.runs[static_cast<std::size_t>(Outcome::Crash)] >
                      0);
  }
  return flagged;
}

void write_failure(const Failure& f, std::size_t index, std::ostream& out) {
  out << "<section class=\"failure\" id=\"failure-" << index << "\">\n<h3>FAILED " << xml_text(failure_heading(f))
      << "</h3>\n<p>shrunk case:</p>\n<pre class=\"case\">" << xml_text(to_string(f.shrunk)) << "</pre>\n";
  if (!f.plan.empty())
    out << "<p>under faults:</p>\n<pre class=\"faults\">" << xml_text(to_string(f.plan)) << "</pre>\n";
  out << "<p>what the property saw:</p>\n<pre class=\"detail\">" << xml_text(f.detail)
      << "</pre>\n<p>replay:</p>\n<pre class=\"replay\">" << xml_text(f.replay) << "</pre>\n</section>\n";
}

}  // namespace

void write_html(const CheckReport& report, std::ostream& out) {
  html::open_page(out, "collcheck check: seed " + std::to_string(report.seed));
  const bool held = report.failures.empty() && report.total().failed == 0;
  out << "<p class=\"verdict-" << (held ? "held" : "failed") << "\">" << xml_text(summary_line(report)) << "</p>\n";
  out << "<h2>Cases</h2>\n";
  html::write_table(out, case_table(report), failed_rows(report));
  if (!report.faults.empty()) {
    out << "<h2>Outcomes under faults</h2>\n<p>" << xml_text(report.faults)
        << " (a run counts under every kind in its plan)</p>\n";
    html::write_table(out, outcome_table(report), bad_outcome_rows(report));
  }
  if (report.shares > 1) out << "<p>merged from " << report.shares << " shares of a campaign</p>\n";
  for (const auto& [backend, why] : report.cannot_run_here)
    out << "<p>NOT RUN " << xml_text(backend) << ": " << xml_text(why) << "</p>\n";
  for (const auto& [backend, refusals] : report.refused)
    out << "<p>" << xml_text(refused_text(backend, refusals)) << "</p>\n";
  for (const CheckReport::MissingShare& missing : report.missing_shares) {
    out << "<p>MISSING share " << missing.index << "/" << report.shares << " on " << xml_text(missing.host) << ": "
        << xml_text(missing.why) << "</p>\n";
  }
  if (!report.failures.empty()) out << "<h2>Failures</h2>\n";
  for (std::size_t i = 0; i < report.failures.size(); ++i) write_failure(report.failures[i], i + 1, out);
  if (report.unreported_failures > 0) out << "<p>" << xml_text(unreported_text(report)) << "</p>\n";
  html::close_page(out);
}

}  // namespace collcheck
