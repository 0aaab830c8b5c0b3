// What `collcheck check` prints and writes: the table backend × collective, every failure with
// its replay command, and the same as JSON, as JUnit XML and as one HTML page (see docs/cli.md).
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "harness/check.h"

namespace collcheck {

void print_report(const CheckReport&, std::ostream&);
using ReportWriter = void (*)(const CheckReport&, std::ostream&);
void write_json(const CheckReport&, std::ostream&);
void write_junit(const CheckReport&, std::ostream&);
// One self-contained page (report_html.cc): the case table, the outcomes under faults, every
// failure with its shrunk case, detail and replay command.
void write_html(const CheckReport&, std::ostream&);
// Writes the file `path` with `writer`; false when it cannot be opened or written.
bool write_report_file(const std::string& path, ReportWriter writer, const CheckReport&);

// What the text and the HTML report share. The tables as rows of cells, the header first: backend
// × collective (cases, passed, failed, skipped), and under faults backend × fault kind (runs, then
// how many ended in each outcome).
std::vector<std::vector<std::string>> case_table(const CheckReport&);
std::vector<std::vector<std::string>> outcome_table(const CheckReport&);
// "123 cases in 4.5 s: 120 passed, 3 failed, 0 skipped (seed 7)".
std::string summary_line(const CheckReport&);
// "oracle on ring@sim after 12 cases (0.3 s), shrunk in 40 runs": what a failure's heading says.
std::string failure_heading(const Failure&);
// The failures past --max-failures (or of groups whose details kept changing shape) that were
// counted, not shrunk, in a sentence; empty when there are none.
std::string unreported_text(const CheckReport&);
// "REFUSED by nccl: 3 cases refused when they ran (...); the first: CASE: why".
std::string refused_text(const std::string& backend, const CheckReport::Refusals&);
// The backends that refused every case they ran (none of theirs is in the table).
std::vector<std::string> refused_every_case(const CheckReport&);

}  // namespace collcheck
