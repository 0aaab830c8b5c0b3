// A campaign's shares: a share's report as JSON bytes for the merge and
// back, and the merge of the shares' reports into the one report rank 0 prints.
#include "harness/campaign.h"

#include <algorithm>
#include <set>

#include <nlohmann/json.hpp>

#include "faults/plan.h"

namespace collcheck {
namespace {

using Json = nlohmann::json;

Json tally_json(const Tally& tally) { return Json::array({tally.cases, tally.passed, tally.failed, tally.skipped}); }

Tally tally_of(const Json& json) {
  return Tally{json.at(0).get<std::size_t>(), json.at(1).get<std::size_t>(), json.at(2).get<std::size_t>(),
               json.at(3).get<std::size_t>()};
}

void add_tally(Tally& sum, const Tally& tally) {
  sum.cases += tally.cases;
  sum.passed += tally.passed;
  sum.failed += tally.failed;
  sum.skipped += tally.skipped;
}

Json failure_json(const Failure& f) {
  return Json{{"backend", f.backend},
              {"property", f.property},
              {"shrunk", to_string(f.shrunk)},
              {"original", to_string(f.original)},
              {"knobs", f.knobs},
              {"schedule_seed", f.schedule_seed},
              {"detail", f.detail},
              {"replay", f.replay},
              {"cases_until", f.cases_until},
              {"seconds_until", f.seconds_until},
              {"shrink_runs", f.shrink_runs},
              {"count", f.count},
              {"signature", f.signature},
              {"plan", f.plan.empty() ? std::string() : to_string(f.plan)}};
}

// A field of a share's report that does not parse: the bytes came from another collcheck.
struct BadReport {
  std::string what;
};

template <typename T>
T value_of(Result<T> parsed, const char* what) {
  if (!parsed) throw BadReport{std::string(what) + ": " + parsed.error().text()};
  return *parsed;
}

Collective collective_of(const Json& json) { return value_of(parse_collective(json.get<std::string>()), "collective"); }

Failure failure_of(const Json& json) {
  Failure f;
  f.backend = json.at("backend").get<std::string>();
  f.property = json.at("property").get<std::string>();
  f.shrunk = value_of(parse_case(json.at("shrunk").get<std::string>()), "case");
  f.original = value_of(parse_case(json.at("original").get<std::string>()), "case");
  f.collective = f.shrunk.collective;
  f.knobs = json.at("knobs").get<std::string>();
  f.schedule_seed = json.at("schedule_seed").get<std::uint64_t>();
  f.detail = json.at("detail").get<std::string>();
  f.replay = json.at("replay").get<std::string>();
  f.cases_until = json.at("cases_until").get<std::size_t>();
  f.seconds_until = json.at("seconds_until").get<double>();
  f.shrink_runs = json.at("shrink_runs").get<std::size_t>();
  f.count = json.at("count").get<std::size_t>();
  f.signature = json.at("signature").get<std::string>();
  const std::string plan = json.at("plan").get<std::string>();
  if (!plan.empty()) f.plan = value_of(parse_fault_plan(plan), "faults");
  return f;
}

// The user's backend (of `backends`) a failure's backend is, its drawn knobs added: the longest
// name it starts with, followed by its end, ':' or ','. backends.size() when none.
std::size_t user_backend(const std::vector<std::string>& backends, const std::string& failing) {
  std::size_t found = backends.size();
  for (std::size_t b = 0; b < backends.size(); ++b) {
    const std::string& name = backends[b];
    const bool of = failing.starts_with(name) &&
                    (failing.size() == name.size() || failing[name.size()] == ':' || failing[name.size()] == ',');
    if (of && (found == backends.size() || name.size() > backends[found].size())) found = b;
  }
  return found;
}

// The failure groups of every share as one list, in stream order per backend: groups of one
// signature joined into the first, past `max_failures` counted as unreported.
void merge_failures(const std::vector<const CheckReport*>& reports, std::size_t max_failures, CheckReport& merged) {
  std::vector<Failure> all;
  for (const CheckReport* report : reports) all.insert(all.end(), report->failures.begin(), report->failures.end());
  std::stable_sort(all.begin(), all.end(), [&merged](const Failure& a, const Failure& b) {
    const std::size_t backend_a = user_backend(merged.backends, a.backend);
    const std::size_t backend_b = user_backend(merged.backends, b.backend);
    return backend_a != backend_b ? backend_a < backend_b : a.cases_until < b.cases_until;
  });
  for (Failure& failure : all) {
    const auto same = std::find_if(merged.failures.begin(), merged.failures.end(),
                                   [&failure](const Failure& kept) { return kept.signature == failure.signature; });
    if (same != merged.failures.end()) {
      same->count += failure.count;
    } else if (merged.failures.size() < max_failures) {
      merged.failures.push_back(std::move(failure));
    } else {
      merged.unreported_failures += failure.count;
    }
  }
  // The first failure's detail per backend, collective and property: that of the first group.
  for (const Failure& f : merged.failures) {
    const std::size_t b = user_backend(merged.backends, f.backend);
    if (b == merged.backends.size()) continue;
    merged.first_failure.emplace(std::tuple{merged.backends[b], f.original.collective, f.property}, f.detail);
  }
  for (const CheckReport* report : reports)
    merged.first_failure.insert(report->first_failure.begin(), report->first_failure.end());
}

// A share's refusals into the merged report: the cases summed, the first reason of the first share.
void merge_refusals(const CheckReport& share, CheckReport& merged) {
  for (const auto& [backend, refusals] : share.refused) {
    CheckReport::Refusals& into = merged.refused[backend];
    if (into.cases == 0) into.first = refusals.first;
    into.cases += refusals.cases;
  }
}

}  // namespace

std::string encode_report(const CheckReport& report) {
  Json json{{"seed", report.seed},           {"seconds", report.seconds},
            {"backends", report.backends},   {"unreported_failures", report.unreported_failures},
            {"faults", report.faults},       {"table", Json::array()},
            {"per_property", Json::array()}, {"first_failure", Json::array()},
            {"failures", Json::array()},     {"cannot_run_here", report.cannot_run_here},
            {"outcomes", Json::array()},     {"refused", Json::array()}};
  for (const auto& [key, tally] : report.table)
    json["table"].push_back(Json::array({key.first, name(key.second), tally_json(tally)}));
  for (const auto& [key, tally] : report.per_property) {
    const auto& [backend, collective, property] = key;
    json["per_property"].push_back(Json::array({backend, name(collective), property, tally_json(tally)}));
  }
  for (const auto& [key, detail] : report.first_failure) {
    const auto& [backend, collective, property] = key;
    json["first_failure"].push_back(Json::array({backend, name(collective), property, detail}));
  }
  for (const Failure& f : report.failures) json["failures"].push_back(failure_json(f));
  for (const auto& [key, counts] : report.outcomes)
    json["outcomes"].push_back(Json::array({key.first, key.second, counts.runs}));
  for (const auto& [backend, refusals] : report.refused)
    json["refused"].push_back(Json::array({backend, refusals.cases, refusals.first}));
  return json.dump(-1, ' ', false, Json::error_handler_t::replace);
}

Result<CheckReport> decode_report(std::string_view bytes) {
  try {
    const Json json = Json::parse(bytes);
    CheckReport report;
    report.seed = json.at("seed").get<std::uint64_t>();
    report.seconds = json.at("seconds").get<double>();
    report.backends = json.at("backends").get<std::vector<std::string>>();
    report.unreported_failures = json.at("unreported_failures").get<std::size_t>();
    report.faults = json.at("faults").get<std::string>();
    for (const Json& row : json.at("table"))
      report.table[{row.at(0).get<std::string>(), collective_of(row.at(1))}] = tally_of(row.at(2));
    for (const Json& row : json.at("per_property")) {
      report.per_property[{row.at(0).get<std::string>(), collective_of(row.at(1)), row.at(2).get<std::string>()}] =
          tally_of(row.at(3));
    }
    for (const Json& row : json.at("first_failure")) {
      report.first_failure[{row.at(0).get<std::string>(), collective_of(row.at(1)), row.at(2).get<std::string>()}] =
          row.at(3).get<std::string>();
    }
    for (const Json& f : json.at("failures")) report.failures.push_back(failure_of(f));
    report.cannot_run_here = json.at("cannot_run_here").get<std::map<std::string, std::string>>();
    for (const Json& row : json.at("outcomes")) {
      report.outcomes[{row.at(0).get<std::string>(), row.at(1).get<std::string>()}].runs =
          row.at(2).get<std::array<std::size_t, 5>>();
    }
    for (const Json& row : json.at("refused"))
      report.refused[row.at(0).get<std::string>()] = {row.at(1).get<std::size_t>(), row.at(2).get<std::string>()};
    return report;
  } catch (const Json::exception& e) {
    return Error{"", std::string("a share's report does not parse: ") + e.what()};
  } catch (const BadReport& e) {
    return Error{"", "a share's report does not parse: " + e.what};
  }
}

CheckReport merge_reports(const std::vector<std::optional<CheckReport>>& shares, const std::vector<std::string>& hosts,
                          const std::vector<std::string>& why, std::size_t max_failures) {
  CheckReport merged;
  merged.shares = shares.size();
  std::vector<const CheckReport*> reports;
  for (std::size_t i = 0; i < shares.size(); ++i) {
    if (shares[i]) {
      reports.push_back(&*shares[i]);
    } else {
      merged.missing_shares.push_back({i, i < hosts.size() ? hosts[i] : "?", i < why.size() ? why[i] : ""});
    }
  }
  if (reports.empty()) return merged;
  merged.seed = reports.front()->seed;
  merged.backends = reports.front()->backends;
  merged.faults = reports.front()->faults;
  for (const CheckReport* report : reports) {
    merged.seconds = std::max(merged.seconds, report->seconds);
    for (const auto& [key, tally] : report->table) add_tally(merged.table[key], tally);
    for (const auto& [key, tally] : report->per_property) add_tally(merged.per_property[key], tally);
    for (const auto& [key, counts] : report->outcomes) {
      for (std::size_t k = 0; k < counts.runs.size(); ++k) merged.outcomes[key].runs[k] += counts.runs[k];
    }
    merged.cannot_run_here.insert(report->cannot_run_here.begin(), report->cannot_run_here.end());
    merge_refusals(*report, merged);
    merged.unreported_failures += report->unreported_failures;
  }
  merge_failures(reports, max_failures, merged);
  return merged;
}

}  // namespace collcheck
