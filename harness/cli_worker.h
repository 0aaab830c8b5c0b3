// `collcheck worker`: one rank of a world that `collcheck check` or `bench` launched through
// mpirun; it takes cases from the launching process and sends back its rank's results.
#pragma once

#include <ostream>
#include <span>
#include <string_view>

#include "harness/command_help.h"

namespace collcheck::cli {

// The options, defaults and example `collcheck worker --help` prints.
const CommandHelp& worker_help();

int run_worker(std::span<const std::string_view> args, std::ostream& out, std::ostream& err);

}  // namespace collcheck::cli
