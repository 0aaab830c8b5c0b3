// The verbs interface (verbs.h) over libibverbs, loaded at run time with dlopen of
// libibverbs.so.1, so that a build with the headers but without RDMA hardware (or without the
// library) still runs everything else. Built where CMake finds infiniband/verbs.h; the probe of
// whether RDMA can run here everywhere (rdma_here.cc).
#pragma once

#include <memory>
#include <string>

#include "impls/ib/verbs.h"
#include "reference/result.h"

namespace collcheck::ib {

// libibverbs, or why it cannot be loaded ("cannot load libibverbs.so.1: ...", or that this build
// has no libibverbs). Its devices() is an error naming the reason where ibv_get_device_list finds
// none.
Result<std::unique_ptr<Verbs>> load_ibverbs();

// Why RDMA hardware cannot be used here (no libibverbs, no device: the reason), or "" where
// libibverbs finds a device: what `ALGORITHM@ib` and `nccl:net=ib` say before launching anything.
std::string rdma_cannot_run_here();

}  // namespace collcheck::ib
