// Shared by the property files: verdict helpers, the oracle over a call, and the properties that
// judge a run's outcome under faults (safety, liveness, recovery, reliability).
#pragma once

#include <string>
#include <vector>

#include "properties/property.h"

namespace collcheck {

inline PropertyResult pass() { return {}; }
inline PropertyResult fail(std::string detail) { return {false, false, std::move(detail)}; }
inline PropertyResult skip(std::string why) { return {true, true, std::move(why)}; }

inline bool completed(const RepeatedRun& run) { return run.outcome == Outcome::Ok && !run.calls.empty(); }

// Every rank's output against the oracle for one call's case; `call` prefixes the detail.
PropertyResult match_oracle(const Case& c, const std::vector<RankResult>& ranks, const std::string& call);

PropertyResult safety(const Case&, Backend&, const RepeatedRun& base, const PropertyContext&);
PropertyResult liveness(const Case&, Backend&, const RepeatedRun& base, const PropertyContext&);
PropertyResult recovery(const Case&, Backend&, const RepeatedRun& base, const PropertyContext&);
PropertyResult reliability(const Case&, Backend&, const RepeatedRun& base, const PropertyContext&);

}  // namespace collcheck
