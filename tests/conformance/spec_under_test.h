// The spec the conformance suite runs on, read by main.cc and instantiated by conformance_test.cc.
#pragma once

#include <string_view>

namespace collcheck::conformance {

// The program's `--backend SPEC`, else the one its build wrote in (collcheck_add_conformance's
// kSpec; empty in the installed collcheck-conformance): main.cc's take_backend_argument.
std::string_view spec_under_test();

}  // namespace collcheck::conformance
