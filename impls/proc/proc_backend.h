// The proc transport's entry in the registry: the rank backends `ALGORITHM@proc[:knobs]`,
// `all@proc` and `mutant:NAME@proc` name.
#pragma once

#include <string_view>
#include <vector>

#include "impls/backend/rank_backend.h"
#include "reference/result.h"

namespace collcheck {

Result<std::vector<RankBackendSpec>> proc_backend_specs(std::string_view what, std::string_view options,
                                                        std::string_view spec);

}  // namespace collcheck
