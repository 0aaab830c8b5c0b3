// The schedule knobs (impls/algorithms: Knobs) as options of the commands that build a reference
// algorithm's schedules themselves, prove, simulate and export: their rows in each option table
// and their one parser.
#pragma once

#include "harness/arguments.h"
#include "impls/algorithms/algorithms.h"
#include "reference/result.h"

namespace collcheck::cli {

inline constexpr Option kChunkOption{"chunk", "N", "0", "pipeline chunk in elements (0: one chunk), up to 2^28"};
inline constexpr Option kChannelsOption{"channels", "N", "1", "parallel channels, 1..64"};
inline constexpr Option kFanInOption{"fan-in", "N", "4", "switch fan-in of the in-network algorithm, 2..64"};

// --chunk, --channels and --fan-in, each checked against its range (the error names it).
Result<Knobs> parse_knob_options(const Arguments& args);

}  // namespace collcheck::cli
