// The cuda transport's engine as a backend: `ALGORITHM@cuda-host` (every buffer in host memory, the
// kernels on the host, so that the engine runs wherever the suite runs) and `ALGORITHM@cuda`.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "impls/backend/backend.h"
#include "impls/backend/rank_backend.h"
#include "impls/cuda/device.h"
#include "impls/cuda/slot_engine.h"
#include "impls/sim/sim_backend.h"

namespace collcheck {

// Where the engine's participants run: their devices, and why they cannot run here (null: they can).
struct EngineDevices {
  cuda::DeviceMaker make = cuda::make_host_device;
  std::string (*cannot_run_here)() = nullptr;
  std::size_t largest_slot = cuda::kHostSlotBytes;  // the rings' slots where they have room
};

// `spec` is the name the backend reports (`ring@cuda-host:chunk=4`).
std::unique_ptr<Backend> make_engine_backend(SimVariant variant, Knobs knobs, std::string spec, EngineDevices devices);
std::unique_ptr<Backend> make_cuda_host_backend(SimVariant variant, Knobs knobs, std::string spec);
// ALGORITHM@cuda: every participant on a CUDA device of this process (cuda_backend.cc, built
// where CUDA is found).
std::unique_ptr<Backend> make_cuda_backend(SimVariant variant, Knobs knobs, std::string spec);
EngineDevices cuda_engine_devices();

// The engine's mode, an option of `@cuda` and `@cuda-host`: `mode=threads` (the default: every
// participant a thread of this process) or `mode=processes` (one process per rank, launched like
// `@proc`, the rings in shared memory: process_rings.h). With mode=processes among the options:
// `WHAT@TRANSPORT:OPTIONS` (WHAT: an algorithm, all, mutant:NAME, schedule:FILE) with the
// options' `knobs`, as backends across processes on `devices`, each named as `spec` writes its
// transport and options. With `rdma` (`net=ib`) the rings between the processes go over RDMA
// through those verbs (ib_rings.h); over the loopback the ranks are threads of one process.
Result<std::vector<RankBackendSpec>> engine_process_specs(std::string_view what, const Knobs& knobs,
                                                          std::string_view spec, EngineDevices devices,
                                                          std::optional<ib::VerbsChoice> rdma = std::nullopt);

}  // namespace collcheck
