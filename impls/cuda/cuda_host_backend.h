// `ALGORITHM@cuda-host`: the cuda transport's engine and kernels with every buffer in host memory,
// one thread per participant, so that the device code's logic runs wherever the suite runs.
#pragma once

#include <memory>
#include <string>

#include "impls/backend/backend.h"
#include "impls/sim/sim_backend.h"

namespace collcheck {

// `spec` is the name the backend reports (`ring@cuda-host:chunk=4`).
std::unique_ptr<Backend> make_cuda_host_backend(SimVariant variant, Knobs knobs, std::string spec);

}  // namespace collcheck
