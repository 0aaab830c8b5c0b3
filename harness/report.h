// What `collcheck check` prints and writes: the table backend × collective, every failure with
// its replay command, and the same as JSON and as JUnit XML (see docs/cli.md).
#pragma once

#include <ostream>
#include <string>

#include "harness/check.h"

namespace collcheck {

void print_report(const CheckReport&, std::ostream&);
void write_json(const CheckReport&, std::ostream&);
void write_junit(const CheckReport&, std::ostream&);

}  // namespace collcheck
