// The verbs interface (verbs.h) over libibverbs, loaded at run time with dlopen of
// libibverbs.so.1, so that a build with the headers but without RDMA hardware (or without the
// library) still runs everything else. Built where CMake finds infiniband/verbs.h.
#pragma once

#include <memory>

#include "impls/ib/verbs.h"
#include "reference/result.h"

namespace collcheck::ib {

// libibverbs, or why it cannot be loaded ("cannot load libibverbs.so.1: ..."). Its devices()
// is an error naming the reason where ibv_get_device_list finds none.
Result<std::unique_ptr<Verbs>> load_ibverbs();

}  // namespace collcheck::ib
