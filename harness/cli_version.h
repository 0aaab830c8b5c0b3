// `collcheck version`: the version, how this binary was built, and which optional parts it has,
// so that a bug report or a CI log says exactly what ran.
#pragma once

#include <ostream>

namespace collcheck::cli {

int run_version(std::ostream& out);

}  // namespace collcheck::cli
