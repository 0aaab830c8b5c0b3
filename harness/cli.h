// The `collcheck` command line: picks the command named by the first argument and runs it.
// Usage errors are reported on `err` with exit status 2; commands print on `out`.
#pragma once

#include <ostream>
#include <span>
#include <string_view>

namespace collcheck::cli {

// `args` excludes the program name. Returns the process exit status.
int run(std::span<const std::string_view> args, std::ostream& out, std::ostream& err);

}  // namespace collcheck::cli
