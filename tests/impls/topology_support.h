// What the topology tests share: a preset or a parsed text that must load (a failure is the
// test's), so each test reads as the machine it checks.
#pragma once

#include <gtest/gtest.h>

#include <string_view>

#include "impls/sim/topology.h"

namespace collcheck::testing {

inline Topology preset(std::string_view name) {
  Result<Topology> t = make_topology(name);
  if (!t) ADD_FAILURE() << t.error().text();
  return t ? std::move(t).value() : Topology{};
}

inline Topology parsed(std::string_view text) {
  Result<Topology> t = parse_topology(text);
  if (!t) ADD_FAILURE() << t.error().text();
  return t ? std::move(t).value() : Topology{};
}

}  // namespace collcheck::testing
