// Gloo under test: the rank backends `gloo[:NAME|:all-algorithms]` names. Defined in builds with
// Gloo; the registry answers without it.
#pragma once

#include <string_view>
#include <vector>

#include "impls/backend/rank_backend.h"
#include "reference/result.h"

namespace collcheck {

Result<std::vector<RankBackendSpec>> gloo_backend_specs(std::string_view options, std::string_view spec);

}  // namespace collcheck
