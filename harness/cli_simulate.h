// `collcheck simulate`: runs one reference algorithm on the simulated fabric for a list of
// counts and prints nccl-tests' columns: predicted time, algbw, busbw, #wrong, trace hash.
#pragma once

#include <ostream>
#include <span>
#include <string_view>

#include "harness/command_help.h"

namespace collcheck::cli {

// The options, defaults and example `collcheck simulate --help` prints.
const CommandHelp& simulate_help();

int run_simulate(std::span<const std::string_view> args, std::ostream& out, std::ostream& err);

}  // namespace collcheck::cli
