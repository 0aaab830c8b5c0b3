// `collcheck bench --html FILE`: the report as one self-contained page: what was timed, nccl-tests'
// closing lines, the plot of bench_plot.cc inline, and the table the CSV holds, rows whose run
// failed or whose result was wrong marked.
#include <sstream>
#include <string>
#include <vector>

#include "harness/bench.h"
#include "harness/html_page.h"

namespace collcheck::bench {
namespace {

// The marks for report_cells' rows: none for the header and the memory copy.
std::vector<bool> bad_rows(const Report& report) {
  std::vector<bool> flagged = {false};
  for (const Row& row : report.rows) {
    for (const Measurement* m : {&row.out_of_place_result, &row.in_place_result})
      flagged.push_back(m->state == Measurement::State::Failed || m->wrong.value_or(0) > 0);
  }
  return flagged;
}

}  // namespace

void write_html(std::ostream& out, const Report& report) {
  const Settings& s = report.settings;
  html::open_page(out,
                  "collcheck bench: " + std::string(name(s.collective)) + ", " + std::to_string(s.nranks) + " ranks");
  out << "<p>" << html::xml_text(report.backends.front());
  if (report.backends.size() > 1) out << " vs " << html::xml_text(report.backends[1]);
  out << "; sizes " << s.min_bytes << " to " << s.max_bytes << " B, " << s.warmup << " warmup and " << s.iterations
      << " timed iterations, " << (s.check ? "every result checked" : "results not checked") << "</p>\n";
  std::ostringstream summary;
  print_summary(summary, report);
  out << "<pre class=\"summary\">" << html::xml_text(summary.str()) << "</pre>\n<h2>Bus bandwidth</h2>\n";
  write_svg(out, report);
  out << "<h2>Measurements</h2>\n";
  html::write_table(out, report_cells(report), bad_rows(report));
  html::close_page(out);
}

}  // namespace collcheck::bench
