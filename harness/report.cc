// Text, JSON and JUnit renderings of a CheckReport (HTML: report_html.cc); under faults also the
// matrix backend × fault kind of outcomes, and each failure's shrunk plan.
#include "harness/report.h"

#include <fstream>
#include <set>
#include <string>

#include <nlohmann/json.hpp>

#include "harness/html_page.h"
#include "harness/text_table.h"
#include "reference/numbers.h"

namespace collcheck {
namespace {

using html::xml_text;
using Json = nlohmann::ordered_json;  // keys in the order docs/cli.md shows them

std::string seconds_text(double seconds) { return printf_text("%.1f", seconds); }

std::string indent(const std::string& text, const std::string& prefix) {
  std::string out = prefix;
  for (std::size_t i = 0; i < text.size(); ++i) {
    out += text[i];
    if (text[i] == '\n' && i + 1 < text.size()) out += prefix;
  }
  if (!out.empty() && out.back() != '\n') out += '\n';
  return out;
}

constexpr Outcome kOutcomes[] = {Outcome::Ok, Outcome::Detected, Outcome::Hang, Outcome::Corrupt, Outcome::Crash};

std::size_t count(const OutcomeCounts& counts, Outcome outcome) {
  return counts.runs[static_cast<std::size_t>(outcome)];
}

// Under faults: the plan and the matrix backend × fault kind, one object per row.
void add_outcomes_json(const CheckReport& report, Json& json) {
  json["faults"] = report.faults;
  json["outcomes"] = Json::array();
  for (const auto& [key, counts] : report.outcomes) {
    Json row{{"backend", key.first}, {"fault", key.second}, {"runs", counts.total()}};
    for (Outcome outcome : kOutcomes) row[std::string(name(outcome))] = count(counts, outcome);
    json["outcomes"].push_back(std::move(row));
  }
}

Json tally_json(const Tally& tally) {
  return {{"cases", tally.cases}, {"passed", tally.passed}, {"failed", tally.failed}, {"skipped", tally.skipped}};
}

Json failure_json(const Failure& f) {
  Json json{{"backend", f.backend},
            {"collective", name(f.collective)},
            {"property", f.property},
            {"case", to_string(f.shrunk)},
            {"original_case", to_string(f.original)},
            {"schedule_seed", f.schedule_seed},
            {"cases_until", f.cases_until},
            {"seconds_until", std::stod(seconds_text(f.seconds_until))},
            {"count", f.count},
            {"detail", f.detail}};
  if (!f.plan.empty()) json["faults"] = to_string(f.plan);
  json["replay"] = f.replay;
  return json;
}

// The groups of one backend and property as text, those whose shrunk case kept the collective
// (else all of them): count, shrunk case, detail and replay line each.
std::string groups_text(const CheckReport& report, const std::string& backend, Collective collective,
                        const std::string& property) {
  std::string text;
  for (const bool same_collective : {true, false}) {
    for (const Failure& f : report.failures) {
      // A group's backend carries the knobs drawn for it: `ring@sim` + `:chunk=8` or `,chunk=8`.
      const bool of_backend =
          f.backend.starts_with(backend) &&
          (f.backend.size() == backend.size() || f.backend[backend.size()] == ':' || f.backend[backend.size()] == ',');
      if (!of_backend || f.property != property || (same_collective && f.collective != collective)) continue;
      text += "\n" + std::to_string(f.count) + " failing case" + (f.count == 1 ? "" : "s") + ": " +
              to_string(f.shrunk) + "\n" + f.detail + "\nreplay: " + f.replay + "\n";
    }
    if (!text.empty()) return text;
  }
  return text;
}

}  // namespace

std::vector<std::vector<std::string>> case_table(const CheckReport& report) {
  std::vector<std::vector<std::string>> rows = {{"backend", "collective", "cases", "passed", "failed", "skipped"}};
  for (const auto& [key, tally] : report.table) {
    rows.push_back({key.first, std::string(name(key.second)), std::to_string(tally.cases), std::to_string(tally.passed),
                    std::to_string(tally.failed), std::to_string(tally.skipped)});
  }
  return rows;
}

std::vector<std::vector<std::string>> outcome_table(const CheckReport& report) {
  std::vector<std::vector<std::string>> rows = {{"backend", "fault", "runs"}};
  for (Outcome outcome : kOutcomes) rows.front().emplace_back(name(outcome));
  for (const auto& [key, counts] : report.outcomes) {
    std::vector<std::string> row = {key.first, key.second, std::to_string(counts.total())};
    for (Outcome outcome : kOutcomes) row.push_back(std::to_string(count(counts, outcome)));
    rows.push_back(std::move(row));
  }
  return rows;
}

std::string summary_line(const CheckReport& report) {
  const Tally total = report.total();
  return std::to_string(total.cases) + " cases in " + seconds_text(report.seconds) +
         " s: " + std::to_string(total.passed) + " passed, " + std::to_string(total.failed) + " failed, " +
         std::to_string(total.skipped) + " skipped (seed " + std::to_string(report.seed) + ")";
}

std::string failure_heading(const Failure& f) {
  return f.property + " on " + f.backend + " after " + std::to_string(f.cases_until) + " case" +
         (f.cases_until == 1 ? "" : "s") + " (" + seconds_text(f.seconds_until) + " s)" +
         (f.count > 1 ? ", " + std::to_string(f.count) + " failing cases alike" : "") + ", shrunk in " +
         std::to_string(f.shrink_runs) + " runs";
}

std::string unreported_text(const CheckReport& report) {
  if (report.unreported_failures == 0) return "";
  return std::to_string(report.unreported_failures) + " more failing case" +
         (report.unreported_failures == 1 ? "" : "s") +
         " in groups not shrunk (past --max-failures, or a property's details kept changing shape)";
}

std::string refused_text(const std::string& backend, const CheckReport::Refusals& refusals) {
  return "REFUSED by " + backend + ": " + std::to_string(refusals.cases) + " case" + (refusals.cases == 1 ? "" : "s") +
         " refused when they ran (outside what it takes: a precondition, not a finding); the first: " + refusals.first;
}

std::vector<std::string> refused_every_case(const CheckReport& report) {
  std::set<std::string> judged;
  for (const auto& [key, tally] : report.table) judged.insert(key.first);
  std::vector<std::string> backends;
  for (const auto& [backend, refusals] : report.refused) {
    if (!judged.contains(backend)) backends.push_back(backend);
  }
  return backends;
}

void print_report(const CheckReport& report, std::ostream& out) {
  cli::TextTable table;
  for (std::vector<std::string>& row : case_table(report)) table.add_row(std::move(row));
  table.print(out);
  out << summary_line(report) << "\n";
  if (!report.faults.empty()) {
    // The matrix backend × fault kind: how the base runs under each kind ended.
    out << "\noutcomes under faults " << report.faults << " (a run counts under every kind in its plan):\n";
    cli::TextTable outcomes;
    for (std::vector<std::string>& row : outcome_table(report)) outcomes.add_row(std::move(row));
    outcomes.print(out);
  }
  if (report.shares > 1) out << "merged from " << report.shares << " shares of a campaign\n";
  for (const auto& [backend, why] : report.cannot_run_here) out << "\nNOT RUN " << backend << ": " << why << "\n";
  for (const auto& [backend, refusals] : report.refused) out << "\n" << refused_text(backend, refusals) << "\n";
  for (const CheckReport::MissingShare& missing : report.missing_shares) {
    out << "\nMISSING share " << missing.index << "/" << report.shares << " on " << missing.host << ": " << missing.why
        << "\n";
  }
  for (const Failure& f : report.failures) {
    out << "\nFAILED " << failure_heading(f) << " to:\n  " << to_string(f.shrunk) << "\n"
        << (f.plan.empty() ? "" : "  under faults " + to_string(f.plan) + "\n") << indent(f.detail, "  ")
        << "  replay: " << f.replay << "\n";
  }
  if (report.unreported_failures > 0) out << "\n" << unreported_text(report) << "\n";
}

void write_json(const CheckReport& report, std::ostream& out) {
  Json json;
  json["seed"] = report.seed;
  json["seconds"] = std::stod(seconds_text(report.seconds));  // tenths, as the text report prints them
  json["backends"] = report.backends;
  json["summary"] = tally_json(report.total());
  json["table"] = Json::array();
  for (const auto& [key, tally] : report.table) {
    Json row{{"backend", key.first}, {"collective", name(key.second)}};
    row.update(tally_json(tally));
    json["table"].push_back(std::move(row));
  }
  json["failures"] = Json::array();
  for (const Failure& f : report.failures) json["failures"].push_back(failure_json(f));
  if (report.unreported_failures > 0) json["unreported_failures"] = report.unreported_failures;
  if (!report.faults.empty()) add_outcomes_json(report, json);
  for (const auto& [backend, why] : report.cannot_run_here)
    json["cannot_run_here"].push_back(Json{{"backend", backend}, {"why", why}});
  for (const auto& [backend, refusals] : report.refused)
    json["refused"].push_back(Json{{"backend", backend}, {"cases", refusals.cases}, {"first", refusals.first}});
  if (report.shares > 1) {
    json["campaign"] = Json{{"shares", report.shares}, {"missing", Json::array()}};
    for (const CheckReport::MissingShare& missing : report.missing_shares) {
      json["campaign"]["missing"].push_back(
          Json{{"share", missing.index}, {"host", missing.host}, {"why", missing.why}});
    }
  }
  // A backend name or detail that is not UTF-8 is written with U+FFFD, never refused.
  out << json.dump(2, ' ', false, Json::error_handler_t::replace) << '\n';
}

void write_junit(const CheckReport& report, std::ostream& out) {
  std::size_t failures = 0, skipped = 0;
  for (const auto& [key, tally] : report.per_property) {
    failures += tally.failed > 0;
    skipped += tally.failed == 0 && tally.passed == 0;
  }
  out << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
      << "<testsuites name=\"collcheck\" tests=\"" << report.per_property.size() << "\" failures=\"" << failures
      << "\" skipped=\"" << skipped << "\" time=\"" << seconds_text(report.seconds) << "\">\n"
      << "  <testsuite name=\"collcheck check seed " << report.seed << "\" tests=\"" << report.per_property.size()
      << "\" failures=\"" << failures << "\" skipped=\"" << skipped << "\">\n";
  for (const auto& [key, tally] : report.per_property) {
    const auto& [backend, collective, property] = key;
    out << "    <testcase classname=\"" << xml_text(backend + "." + std::string(name(collective))) << "\" name=\""
        << xml_text(property) << "\">";
    auto failure = report.first_failure.find(key);
    if (tally.failed > 0) {
      const std::string groups = groups_text(report, backend, collective, property);
      out << "\n      <failure message=\""
          << xml_text(property + " failed in " + std::to_string(tally.failed) + " of " + std::to_string(tally.cases) +
                      " cases")
          << "\">" << xml_text((failure != report.first_failure.end() ? failure->second : "") + "\n" + groups)
          << "</failure>\n    ";
    } else if (tally.passed == 0) {
      out << "<skipped message=\"the property did not apply to any case\"/>";
    }
    out << "</testcase>\n";
  }
  out << "  </testsuite>\n</testsuites>\n";
}

bool write_report_file(const std::string& path, ReportWriter writer, const CheckReport& report) {
  std::ofstream file(path);
  if (file) writer(report, file);
  return static_cast<bool>(file);
}

}  // namespace collcheck
