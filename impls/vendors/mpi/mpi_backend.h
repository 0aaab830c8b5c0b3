// Open MPI under test: the rank backends `mpi[:COLL=ALG,...|:all-algorithms]` names, and what
// `collcheck list` says of MPI. Defined in builds with MPI; the registry answers without it.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "impls/backend/rank_backend.h"
#include "reference/result.h"

namespace collcheck {

Result<std::vector<RankBackendSpec>> mpi_backend_specs(std::string_view options, std::string_view spec);

// Why fp16, bf16 and fp8 are missing, and Open MPI's coll/tuned algorithms per collective
// (`allreduce: 1 basic_linear, ...`).
std::string_view mpi_dtype_note();
std::string mpi_algorithm_table();

}  // namespace collcheck
