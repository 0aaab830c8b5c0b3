// The vendors' known defects (docs/vendors.md) that the conformance suite leaves out, each with
// its reason and the test that asserts it, so that the rest of a vendor stays checked.
#pragma once

#include <string>
#include <string_view>

#include "impls/backend/backend.h"
#include "reference/case.h"

namespace collcheck::conformance {

// Why `spec` cannot be held to this case with these options (a finding's one line, naming the
// test that asserts the finding); empty when nothing known stands in the way.
std::string_view known_finding(std::string_view spec, const Case&, const RunOptions&);

}  // namespace collcheck::conformance
