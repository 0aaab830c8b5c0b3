// One rank's part of an `nccl[...]` world: its communicator, its GPU, its calls (built only
// where CUDA and NCCL are; nccl_rank_backend.cc says how it works).
#pragma once

#include <memory>

#include "impls/backend/rank_backend.h"
#include "impls/vendors/nccl/nccl_options.h"
#include "reference/result.h"

namespace collcheck {

// Creates the rank's communicator over the world (rank 0's unique id through its allgather) on
// GPU rank mod the visible GPUs; an error names the rank, the GPU and NCCL's or CUDA's message.
Result<std::unique_ptr<RankBackend>> make_nccl_rank_backend(World&, const NcclSetting&, const Capabilities&);

}  // namespace collcheck
