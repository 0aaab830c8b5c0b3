// `collcheck version`: the version, how this binary was built, and which optional parts it has,
// so that a bug report or a CI log says exactly what ran.
#pragma once

#include <ostream>

#include "harness/command_help.h"

namespace collcheck::cli {

// The options, defaults and example `collcheck version --help` prints.
const CommandHelp& version_help();

int run_version(std::ostream& out);

}  // namespace collcheck::cli
