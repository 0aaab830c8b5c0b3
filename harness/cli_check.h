// `collcheck check` (random cases, every property, shrinking, reports) and `collcheck replay`
// (one case again, with per-rank detail).
#pragma once

#include <ostream>
#include <span>
#include <string_view>

namespace collcheck::cli {

int run_check(std::span<const std::string_view> args, std::ostream& out, std::ostream& err);
int run_replay(std::span<const std::string_view> args, std::ostream& out, std::ostream& err);

}  // namespace collcheck::cli
