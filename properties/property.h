// Named predicates over one case run on one backend: the oracle, rank agreement, determinism,
// in-place, composition, buffer safety, repeat and liveness. Each has a one-line doc.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "impls/backend.h"

namespace collcheck {

struct PropertyResult {
  bool ok = true;
  bool skipped = false;  // does not apply to this case or backend (not a pass)
  std::string detail;    // on failure: what differs, where; on skip: why
};

struct PropertyContext {
  std::uint64_t schedule_seed = 0;  // the interleaving of the base run
};

// Every property sees the base run of the case (its first call) and may run the backend again.
struct Property {
  std::string_view name;
  std::string_view doc;
  PropertyResult (*check)(const Case&, Backend&, const RepeatedRun& base, const PropertyContext&);
};

std::span<const Property> all_properties();
const Property* find_property(std::string_view name);
std::string property_names();

}  // namespace collcheck
