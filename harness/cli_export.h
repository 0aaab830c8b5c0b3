// `collcheck export --algorithm ring --ranks 4 --count 16`: a built-in algorithm's schedule for one
// shape, written in collcheck's text form (docs/schedules.md), which `prove --schedule` and
// `--backend schedule:FILE@sim|proc` read back.
#pragma once

#include <ostream>
#include <span>
#include <string_view>

#include "harness/command_help.h"

namespace collcheck::cli {

const CommandHelp& export_help();

int run_export(std::span<const std::string_view> args, std::ostream& out, std::ostream& err);

}  // namespace collcheck::cli
