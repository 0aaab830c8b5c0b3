// `collcheck list`: everything a case can be made of (collectives, dtypes, ops, value kinds)
// and the optional parts of this build, as the reference library and config.h define them.
#pragma once

#include <ostream>

#include "harness/command_help.h"

namespace collcheck::cli {

// The options, defaults and example `collcheck list --help` prints.
const CommandHelp& list_help();

int run_list(std::ostream& out);

}  // namespace collcheck::cli
