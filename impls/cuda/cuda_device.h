// The CUDA devices of this process as the cuda engine's devices (`ALGORITHM@cuda`): built where
// CUDA is found (collcheck_cuda_device), runnable where a device is present.
#pragma once

#include <memory>
#include <string>

#include "impls/cuda/device.h"

namespace collcheck::cuda {

// Participant p's device: GPU p % (GPUs of this process), with a stream of its own; several ranks
// share a GPU where there are fewer GPUs than ranks, each with its own buffers and stream.
std::unique_ptr<Device> make_cuda_device(int participant);

// Why this process cannot run the engine on CUDA devices ("no CUDA device: ..."); empty when it can.
std::string cuda_cannot_run_here();

// The same for peer reads (`p2p=on`), whose kernels read other participants' memory: also why not
// where two of this process's GPUs cannot reach each other (cudaDeviceCanAccessPeer).
std::string peer_reads_cannot_run_here();

// "2 devices: 0 NVIDIA H200 (sm_90, 139 GiB), 1 ...; peer access 0<->1", or why there are none:
// what `collcheck list` prints.
std::string cuda_devices_text();

// Where `net=ib` puts each GPU's ring slots over libibverbs' first active port ("GPU 0: mlx5_0 port
// 1 (InfiniBand): device memory by dma-buf"; host staging and why; or why no verbs): what
// `collcheck list` prints, found by registering slots as the rings do (ib_rings.h).
std::string rdma_slots_on_gpus();

}  // namespace collcheck::cuda
