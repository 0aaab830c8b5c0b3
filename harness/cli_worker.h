// The processes a launched world is made of besides mpirun: `collcheck worker`, one rank of a
// world that `collcheck check` or `bench` launched through mpirun, which takes cases from the
// launching process and sends back its rank's results; and `collcheck guard`, which takes the
// world down once the launching process is gone (impls/worlds/leftovers.h).
#pragma once

#include <ostream>
#include <span>
#include <string_view>

#include "harness/command_help.h"

namespace collcheck::cli {

// The options, defaults and example `collcheck worker --help` prints.
const CommandHelp& worker_help();

int run_worker(std::span<const std::string_view> args, std::ostream& out, std::ostream& err);

// The options, defaults and example `collcheck guard --help` prints.
const CommandHelp& guard_help();

int run_guard(std::span<const std::string_view> args, std::ostream& out, std::ostream& err);

}  // namespace collcheck::cli
