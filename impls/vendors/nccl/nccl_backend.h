// NCCL under test: the rank backends `nccl[:algo=A,proto=P,register=on|off,graph=on|off]` and
// `nccl:all-algorithms` name, and what `collcheck list` says of NCCL. Defined in builds with
// NCCL; the registry answers without it.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "impls/backend/rank_backend.h"
#include "reference/result.h"

namespace collcheck {

// One spec per setting (nccl_options.h). Each runs in launched worlds, one process per rank, rank
// r on GPU r mod the visible GPUs; where this machine has no GPU the specs say so
// (RankBackendSpec::cannot_run_here) and nothing is launched.
Result<std::vector<RankBackendSpec>> nccl_backend_specs(std::string_view options, std::string_view spec);

// `NCCL 2.28.9 (built against 2.28.9)`, then the algorithms all-algorithms runs here.
std::string nccl_description();

}  // namespace collcheck
