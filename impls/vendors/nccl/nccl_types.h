// collcheck's dtypes as NCCL's (built only where CUDA and NCCL are).
#pragma once

#include <nccl.h>

#include <optional>

#include "reference/dtype.h"

namespace collcheck {

// NCCL's type for a dtype; none where NCCL has none.
std::optional<ncclDataType_t> nccl_dtype(DType dtype);

}  // namespace collcheck
