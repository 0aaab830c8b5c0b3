// The proc transport's entry in the registry: the rank backends `ALGORITHM@proc[:knobs]`,
// `all@proc` and `mutant:NAME@proc` name, and over RDMA `ALGORITHM@ib[...]`.
#pragma once

#include <string_view>
#include <vector>

#include "impls/backend/rank_backend.h"
#include "reference/result.h"

namespace collcheck {

// `ib`: the same schedules over the ib links (ALGORITHM@ib[:verbs=ibverbs|loopback,dev=D,port=P,
// gid=G,qps=N,knobs]): RDMA writes through libibverbs, or the in-process loopback.
Result<std::vector<RankBackendSpec>> proc_backend_specs(std::string_view what, std::string_view options,
                                                        std::string_view spec, bool ib = false);

}  // namespace collcheck
