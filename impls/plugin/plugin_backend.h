// Users' backends as C plugins: the rank backends `plugin:PATH[:key=value,...]` names, one
// rank of a world per process (launched or lockstep) or per thread (collcheck's own tests).
#pragma once

#include <string_view>
#include <vector>

#include "impls/backend/rank_backend.h"
#include "reference/result.h"

namespace collcheck {

// `PATH[:key=value,...]` (the spec after `plugin:`): loads the plugin and asks its capabilities
// here, so that a plugin that cannot load, or refuses its options, is an error before any world
// starts. Making the rank backend on a world calls the plugin's init on every rank, with the
// world's allgather (its control channel) as the out-of-band allgather; the backend's end calls
// finalize. Each run passes the call to the plugin's run, in NCCL's buffer layout between guard
// zones, with the knobs drawn for the run.
Result<std::vector<RankBackendSpec>> plugin_backend_specs(std::string_view options, std::string_view spec);

}  // namespace collcheck
