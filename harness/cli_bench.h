// `collcheck bench`: nccl-tests' flags and columns over any backend, side by side with another
// (--vs) and with the measured memory bandwidth, as a table, CSV or an SVG plot.
#pragma once

#include <ostream>
#include <span>
#include <string_view>

#include "harness/command_help.h"

namespace collcheck::cli {

// The options, defaults and example `collcheck bench --help` prints.
const CommandHelp& bench_help();

int run_bench(std::span<const std::string_view> args, std::ostream& out, std::ostream& err);

}  // namespace collcheck::cli
