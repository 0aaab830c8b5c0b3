// `ALGORITHM@cuda`: the engine with every participant on a CUDA device of this process.
#include "impls/cuda/cuda_device.h"
#include "impls/cuda/engine_backend.h"

namespace collcheck {

EngineDevices cuda_engine_devices() {
  return EngineDevices{cuda::make_cuda_device, cuda::cuda_cannot_run_here, cuda::kDeviceSlotBytes};
}

std::unique_ptr<Backend> make_cuda_backend(SimVariant variant, Knobs knobs, std::string spec) {
  EngineDevices devices = cuda_engine_devices();
  if (knobs.peer_reads) devices.cannot_run_here = cuda::peer_reads_cannot_run_here;
  return make_engine_backend(std::move(variant), knobs, std::move(spec), devices);
}

}  // namespace collcheck
