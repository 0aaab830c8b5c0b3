// `--backend SPEC` taken out of a conformance program's command line (backend_argument.h).
#include "tests/conformance/backend_argument.h"

namespace collcheck::conformance {

Result<std::string> take_backend_argument(int& argc, char** argv, std::string_view built_in) {
  constexpr std::string_view kOption = "--backend", kJoined = "--backend=";
  const Error no_value{std::string(kOption), "expected a backend spec after it (e.g. plugin:./libmine.so)"};
  std::string given;
  int kept = 1;
  for (int i = 1; i < argc; ++i) {
    const std::string_view argument = argv[i];
    if (argument == kOption) {
      if (i + 1 == argc) return no_value;
      given = argv[++i];
    } else if (argument.starts_with(kJoined)) {
      given = std::string(argument.substr(kJoined.size()));
      if (given.empty()) return no_value;
    } else {
      argv[kept++] = argv[i];
    }
  }
  argc = kept;
  argv[argc] = nullptr;
  if (!given.empty()) return given;
  if (!built_in.empty()) return std::string(built_in);
  return Error{std::string(kOption),
               "required, the backend the conformance suite runs on (e.g. plugin:./libmine.so:k=v, ring@sim; "
               "`collcheck list` names them)"};
}

}  // namespace collcheck::conformance
