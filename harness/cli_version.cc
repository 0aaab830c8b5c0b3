// `collcheck version`: version, compiler, build type and flags from collcheck/config.h, then the
// optional parts one per line.
#include "harness/cli_version.h"

#include <string_view>

#include "collcheck/config.h"
#include "harness/optional_parts.h"

namespace collcheck::cli {

const CommandHelp& version_help() {
  static constexpr CommandHelp help{
      "version", "print the version, the build and its optional parts", {}, "", "", "collcheck version"};
  return help;
}

int run_version(std::ostream& out) {
  constexpr std::string_view flags = COLLCHECK_CXX_FLAGS;
  out << "collcheck " << COLLCHECK_VERSION << '\n';
  out << "compiler    " << COLLCHECK_CXX_COMPILER << '\n';
  out << "build type  " << COLLCHECK_BUILD_TYPE << '\n';
  if (!flags.empty()) out << "flags       " << flags << '\n';
  out << "optional parts:\n";
  print_optional_parts(out);
  return 0;
}

}  // namespace collcheck::cli
