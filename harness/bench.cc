// `collcheck bench`'s sweep and formatting: nccl-tests' table over one backend or two side by
// side, the summary, and the CSV and JSON of a report (the measuring is bench_measure.cc).
#include "harness/bench.h"

#include <algorithm>
#include <cmath>

#include <nlohmann/json.hpp>

#include "reference/bandwidth.h"
#include "reference/numbers.h"

namespace collcheck::bench {

int root_number(const Case& c) { return rooted(c.collective) ? c.root : -1; }
std::string root_text(const Case& c) { return std::to_string(root_number(c)); }
std::string op_text(const Case& c) { return reduces(c.collective) ? std::string(name(c.op)) : "none"; }

namespace {

// nccl-tests' column widths: size count type redop root, then per placement time algbw busbw
// #wrong. Cells are right-aligned, two spaces apart.
constexpr int kWidths[] = {12, 12, 8, 6, 6, 8, 7, 7, 6, 8, 7, 7, 6};
constexpr int kColumns = static_cast<int>(std::size(kWidths));

// Right-aligned cells in kWidths; a comment line puts '#' in the first cell's first column.
// Cells past the table (backend, ratios) follow left-aligned.
std::string table_line(const std::vector<std::string>& cells, bool comment = false) {
  std::string line = comment ? "#" : "";
  for (std::size_t i = 0; i < cells.size(); ++i) {
    if (i > 0) line += "  ";
    const int width = static_cast<int>(i) < kColumns ? kWidths[i] - (comment && i == 0 ? 1 : 0) : 0;
    if (static_cast<int>(cells[i].size()) < width) line.append(static_cast<std::size_t>(width) - cells[i].size(), ' ');
    line += cells[i];
  }
  while (!line.empty() && line.back() == ' ') line.pop_back();
  return line;
}

// nccl-tests' precision: fewer decimals as the time grows, so the column stays 7 wide.
std::string time_cell(double seconds) {
  const double us = seconds * 1e6;
  return printf_text(us >= 10000 ? "%.0f" : us >= 100 ? "%.1f" : "%.2f", us);
}

std::string wrong_cell(const Measurement& m) {
  if (m.state == Measurement::State::Unsupported) return "unsup";
  if (m.state == Measurement::State::Failed) return std::string(name(m.outcome));
  if (!m.checked) return "N/A";
  return m.wrong ? std::to_string(*m.wrong) : "n/a";
}

std::vector<std::string> placement_cells(const Measurement& m) {
  if (m.state != Measurement::State::Ok) return {"-", "-", "-", wrong_cell(m)};
  return {time_cell(m.seconds), printf_text("%.2f", m.bandwidth.algbw), printf_text("%.2f", m.bandwidth.busbw),
          wrong_cell(m)};
}

std::string ratio_cell(const Measurement& mine, const Measurement& theirs) {
  const bool both = mine.state == Measurement::State::Ok && theirs.state == Measurement::State::Ok;
  if (!both || theirs.bandwidth.busbw <= 0) return "    -";
  return printf_text("%5.2f", mine.bandwidth.busbw / theirs.bandwidth.busbw);
}

bool predicted(const std::string& backend) { return backend.find("@sim") != std::string::npos; }

// A cell of the backend column, as wide as the longest backend name, so the ratios line up.
std::string padded(std::string text, const Report& report) {
  std::size_t width = 7;
  for (const std::string& backend : report.backends) width = std::max(width, backend.size());
  text.resize(std::max(width, text.size()), ' ');
  return text;
}

void print_header(std::ostream& out, const Report& report) {
  const Settings& s = report.settings;
  auto who = [](const std::string& backend) {
    return backend + (predicted(backend) ? " (times predicted by the simulated fabric)" : " (times measured)");
  };
  out << "# collcheck bench: " << name(s.collective) << " on " << s.nranks << " ranks, " << who(report.backends[0])
      << "\n";
  if (report.backends.size() > 1)
    out << "#   vs " << who(report.backends[1]) << "; ratio: busbw(" << report.backends[0] << ") / busbw("
        << report.backends[1] << ")\n";
  out << "# minBytes " << s.min_bytes << " maxBytes " << s.max_bytes << " step: "
      << (s.step_bytes > 0 ? std::to_string(s.step_bytes) + "(bytes)" : std::to_string(s.step_factor) + "(factor)")
      << " warmup iters: " << s.warmup << " iters: " << s.iterations << " validation: " << (s.check ? 1 : 0)
      << " deadline: "
      << (std::isinf(s.deadline) ? "none"
          : s.deadline > 0       ? printf_text("%g s", s.deadline)
                                 : "default")
      << "\n";
  if (report.memory.bytes > 0) {
    out << "# memory copy bandwidth: " << printf_text("%.2f", report.memory.bandwidth) << " GB/s (memcpy of "
        << report.memory.bytes << " B, best time " << time_cell(report.memory.seconds) << " us)\n";
  }
  // The placement names centred over their four columns (38 wide, from column 52 and 90).
  out << "#\n#" << std::string(64, ' ') << "out-of-place" << std::string(28, ' ') << "in-place\n";
  std::vector<std::string> names{"size",  "count",  "type", "redop", "root",  "time",  "algbw",
                                 "busbw", "#wrong", "time", "algbw", "busbw", "#wrong"};
  std::vector<std::string> units{"(B)",    "(elements)", "",     "",       "",       "(us)", "(GB/s)",
                                 "(GB/s)", "",           "(us)", "(GB/s)", "(GB/s)", ""};
  if (report.backends.size() > 1) {
    names.insert(names.end(), {padded("backend", report), "ratio", "ratio"});
    units.insert(units.end(), {padded("", report), "  oop", "   ip"});
  }
  out << table_line(names, true) << "\n" << table_line(units, true) << "\n";
}

void print_row(std::ostream& out, const Report& report, const Row& row, const Row* compared_with) {
  const Case& c = row.out_of_place;
  std::vector<std::string> cells{std::to_string(algorithm_bytes(c)), std::to_string(c.count),
                                 std::string(nccl_tests_name(c.dtype)), op_text(c), root_text(c)};
  for (const Measurement* m : {&row.out_of_place_result, &row.in_place_result}) {
    for (std::string& cell : placement_cells(*m)) cells.push_back(std::move(cell));
  }
  if (report.backends.size() > 1) {
    cells.push_back(padded(report.backends[row.backend], report));
    if (compared_with != nullptr) {
      cells.push_back(ratio_cell(compared_with->out_of_place_result, row.out_of_place_result));
      cells.push_back(ratio_cell(compared_with->in_place_result, row.in_place_result));
    }
  }
  out << table_line(cells) << "\n";
  for (const Measurement* m : {&row.out_of_place_result, &row.in_place_result}) {
    if (m->state != Measurement::State::Failed) continue;
    Case shown = c;
    shown.in_place = m == &row.in_place_result;
    out << "#  " << report.backends[row.backend] << " " << to_string(shown) << ": " << name(m->outcome) << ": "
        << m->error << "\n";
  }
}

// Per backend: the wrong elements, failed runs, and the mean busbw of every timed placement.
struct Summary {
  std::size_t wrong = 0;
  std::size_t failed = 0;
  double busbw_sum = 0;
  std::size_t timed = 0;
  double average() const { return timed > 0 ? busbw_sum / static_cast<double>(timed) : 0; }
};

Summary summarize(const Report& report, std::size_t backend) {
  Summary s;
  for (const Row& row : report.rows) {
    if (row.backend != backend) continue;
    for (const Measurement* m : {&row.out_of_place_result, &row.in_place_result}) {
      if (m->state == Measurement::State::Failed) ++s.failed;
      if (m->state != Measurement::State::Ok) continue;
      s.busbw_sum += m->bandwidth.busbw;
      ++s.timed;
      s.wrong += m->wrong.value_or(0);
    }
  }
  return s;
}

}  // namespace

int print_summary(std::ostream& out, const Report& report) {
  int status = 0;
  const bool several = report.backends.size() > 1;
  std::vector<Summary> summaries;
  for (std::size_t b = 0; b < report.backends.size(); ++b) {
    const Summary s = summarize(report, b);
    const std::string who = several ? " (" + report.backends[b] + ")" : "";
    out << "# Out of bounds values : " << s.wrong << (s.wrong == 0 ? " OK" : " FAILED") << who << "\n";
    if (s.failed > 0) out << "# Failed runs          : " << s.failed << who << "\n";
    out << "# Avg bus bandwidth    : " << printf_text("%g", s.average()) << who << "\n";
    if (s.wrong > 0 || s.failed > 0) status = 1;
    summaries.push_back(s);
  }
  if (several && summaries[1].average() > 0) {
    out << "# Avg busbw ratio      : " << printf_text("%.3f", summaries[0].average() / summaries[1].average()) << " ("
        << report.backends[0] << " / " << report.backends[1] << ")\n";
  }
  out << "#\n";
  return status;
}

namespace {

Row measure_row(Backend& backend, std::size_t index, const Case& c, const Settings& settings) {
  Row row;
  row.backend = index;
  row.out_of_place = c;
  row.out_of_place_result = measure(backend, c, settings);
  Case in_place = c;
  in_place.in_place = true;
  row.in_place_result = measure(backend, in_place, settings);
  return row;
}

}  // namespace

std::string_view nccl_tests_name(DType dtype) {
  // In DType's order (reference/dtype.h).
  constexpr std::string_view kNames[] = {"int8", "uint8",    "int32", "uint32", "int64",  "uint64",
                                         "half", "bfloat16", "float", "double", "f8e4m3", "f8e5m2"};
  static_assert(std::size(kNames) == static_cast<std::size_t>(DType::Float8E5M2) + 1);
  return kNames[static_cast<std::size_t>(dtype)];
}

int run(const Settings& settings, std::span<Backend* const> backends, const MemoryCopy& memory, std::ostream& out,
        Report& report) {
  report = Report{settings, {}, {}, memory};
  for (Backend* backend : backends) report.backends.push_back(backend->name());
  print_header(out, report);
  const std::vector<std::uint64_t> sizes = sweep_sizes(settings);
  const std::vector<RedOp> ops = reduces(settings.collective) ? settings.ops : std::vector<RedOp>{settings.ops.front()};
  const std::vector<int> roots = rooted(settings.collective) ? settings.roots : std::vector<int>{0};
  for (DType dtype : settings.dtypes) {
    for (RedOp op : ops) {
      for (int root : roots) {
        for (std::uint64_t bytes : sizes) {
          const Case c = bench_case(settings, dtype, op, root, bytes);
          const std::size_t first = report.rows.size();
          for (std::size_t b = 0; b < backends.size(); ++b) {
            report.rows.push_back(measure_row(*backends[b], b, c, settings));
            print_row(out, report, report.rows.back(), b > 0 ? &report.rows[first] : nullptr);
          }
          out.flush();
        }
      }
    }
  }
  return print_summary(out, report);
}

// CSV: a field with a comma or a quote is quoted, quotes doubled (RFC 4180).
namespace {

std::string csv_field(const std::string& text) {
  if (text.find_first_of(",\"\n") == std::string::npos) return text;
  std::string quoted = "\"";
  for (char ch : text) quoted += ch == '"' ? std::string("\"\"") : std::string(1, ch);
  return quoted + "\"";
}

std::string number_or_empty(const Measurement& m, double value, const char* pattern) {
  return m.state == Measurement::State::Ok ? printf_text(pattern, value) : "";
}

}  // namespace

std::vector<std::vector<std::string>> report_cells(const Report& report) {
  std::vector<std::vector<std::string>> rows = {{"backend", "collective", "size_bytes", "count", "type", "redop",
                                                 "root", "placement", "time_us", "algbw_gbps", "busbw_gbps", "wrong"}};
  for (const Row& row : report.rows) {
    const Case& c = row.out_of_place;
    for (const Measurement* m : {&row.out_of_place_result, &row.in_place_result}) {
      rows.push_back({report.backends[row.backend], std::string(name(c.collective)), std::to_string(algorithm_bytes(c)),
                      std::to_string(c.count), std::string(nccl_tests_name(c.dtype)), op_text(c), root_text(c),
                      m == &row.in_place_result ? "in-place" : "out-of-place",
                      number_or_empty(*m, m->seconds * 1e6, "%.3f"), number_or_empty(*m, m->bandwidth.algbw, "%.6g"),
                      number_or_empty(*m, m->bandwidth.busbw, "%.6g"), wrong_cell(*m)});
    }
  }
  if (report.memory.bytes > 0) {
    const std::string bytes = std::to_string(report.memory.bytes);
    const std::string bw = printf_text("%.6g", report.memory.bandwidth);
    rows.push_back({"memory-copy", "memcpy", bytes, bytes, "uint8", "none", "-1", "copy",
                    printf_text("%.3f", report.memory.seconds * 1e6), bw, bw, ""});
  }
  return rows;
}

namespace {

using Json = nlohmann::ordered_json;  // keys in the order docs/bench.md shows them

// One backend, size and placement as write_json gives it.
Json result_json(const Report& report, const Row& row, const Measurement& m) {
  const Case& c = row.out_of_place;
  const bool timed = m.state == Measurement::State::Ok;
  Json result;
  result["backend"] = report.backends[row.backend];
  result["size_bytes"] = algorithm_bytes(c);
  result["count"] = c.count;
  result["type"] = std::string(nccl_tests_name(c.dtype));
  result["redop"] = op_text(c);
  result["root"] = root_number(c);
  result["placement"] = &m == &row.in_place_result ? "in-place" : "out-of-place";
  result["time_us"] = timed ? Json(m.seconds * 1e6) : Json(nullptr);
  result["algbw_gbps"] = timed ? Json(m.bandwidth.algbw) : Json(nullptr);
  result["busbw_gbps"] = timed ? Json(m.bandwidth.busbw) : Json(nullptr);
  result["wrong"] = timed && m.checked && m.wrong ? Json(*m.wrong) : Json(nullptr);
  result["state"] = timed ? "ok" : wrong_cell(m);  // unsup, or how the run ended
  result["error"] = m.error;
  return result;
}

}  // namespace

void write_json(std::ostream& out, const Report& report, int status) {
  const Settings& s = report.settings;
  Json json;
  json["command"] = "bench";
  json["backends"] = report.backends;
  json["collective"] = std::string(name(s.collective));
  json["ranks"] = s.nranks;
  json["minbytes"] = s.min_bytes;
  json["maxbytes"] = s.max_bytes;
  json["stepfactor"] = s.step_bytes > 0 ? Json(nullptr) : Json(s.step_factor);
  json["stepbytes"] = s.step_bytes > 0 ? Json(s.step_bytes) : Json(nullptr);
  json["iters"] = s.iterations;
  json["warmup_iters"] = s.warmup;
  json["check"] = s.check;
  Json results = Json::array();
  for (const Row& row : report.rows) {
    results.push_back(result_json(report, row, row.out_of_place_result));
    results.push_back(result_json(report, row, row.in_place_result));
  }
  json["results"] = std::move(results);
  json["memory_copy"] = report.memory.bytes == 0 ? Json(nullptr)
                                                 : Json{{"bytes", report.memory.bytes},
                                                        {"time_us", report.memory.seconds * 1e6},
                                                        {"gbps", report.memory.bandwidth}};
  json["status"] = status;
  out << json.dump(2) << '\n';
}

void write_csv(std::ostream& out, const Report& report) {
  for (const std::vector<std::string>& row : report_cells(report)) {
    for (std::size_t i = 0; i < row.size(); ++i) out << (i > 0 ? "," : "") << csv_field(row[i]);
    out << '\n';
  }
}

}  // namespace collcheck::bench
