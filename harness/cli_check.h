// `collcheck check` (random cases, every property, shrinking, reports) and `collcheck replay`
// (one case again, with per-rank detail).
#pragma once

#include <ostream>
#include <span>
#include <string_view>

#include "harness/command_help.h"

namespace collcheck::cli {

// The options, defaults and example `collcheck check --help` prints.
const CommandHelp& check_help();

int run_check(std::span<const std::string_view> args, std::ostream& out, std::ostream& err);

// The options, defaults and example `collcheck replay --help` prints.
const CommandHelp& replay_help();

int run_replay(std::span<const std::string_view> args, std::ostream& out, std::ostream& err);

}  // namespace collcheck::cli
