// The conformance programs' one argument of their own, `--backend SPEC`, taken out of the command
// line before GoogleTest reads the rest (main.cc). Tested in backend_argument_test.cc.
#pragma once

#include <string>
#include <string_view>

#include "reference/result.h"

namespace collcheck::conformance {

// Takes every `--backend SPEC` and `--backend=SPEC` out of argv, keeping the other arguments in
// order (argv[argc] stays null), and returns the spec that stands: the last one given, else
// `built_in` (the one collcheck_add_conformance wrote in; empty in the installed
// collcheck-conformance). An error naming --backend where one is given without a value, or none
// is given and none is built in.
Result<std::string> take_backend_argument(int& argc, char** argv, std::string_view built_in);

}  // namespace collcheck::conformance
