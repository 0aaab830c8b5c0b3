// `collcheck prove`: the symbolic proof of reference algorithms over ranges of rank counts,
// counts, roots and layouts, printed as a table; exit status 1 when any proof fails.
#pragma once

#include <ostream>
#include <span>
#include <string_view>

#include "harness/arguments.h"
#include "harness/command_help.h"

namespace collcheck::cli {

// The options, defaults and example `collcheck prove --help` prints.
const CommandHelp& prove_help();

int run_prove(std::span<const std::string_view> args, std::ostream& out, std::ostream& err);

// `prove --schedule FILE`: reads and checks an MSCCL XML file, then proves it for every count it
// admits; exit status 1 when the file is refused or a proof fails (cli_prove_schedule.cc).
int run_prove_schedule(const Arguments& args, std::ostream& out, std::ostream& err);

}  // namespace collcheck::cli
