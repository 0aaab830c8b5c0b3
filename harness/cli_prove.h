// `collcheck prove`: the symbolic proof of reference algorithms over ranges of rank counts,
// counts, roots and layouts, printed as a table; exit status 1 when any proof fails.
#pragma once

#include <ostream>
#include <span>
#include <string_view>

namespace collcheck::cli {

int run_prove(std::span<const std::string_view> args, std::ostream& out, std::ostream& err);

}  // namespace collcheck::cli
