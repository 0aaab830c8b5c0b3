// The optional parts this build of collcheck was configured with (CUDA, NCCL, MPI, ...): whether
// each is enabled and why, as cmake/detect.cmake found them and collcheck/config.h records them.
#pragma once

#include <ostream>
#include <span>
#include <string_view>

namespace collcheck::cli {

struct OptionalPart {
  std::string_view name;  // as people write it: "CUDA", "libibverbs", "GoogleTest"
  bool enabled;
  std::string_view reason;  // where it was found and its version, or why it is disabled
};

// Every part, in the order the configure summary prints them.
std::span<const OptionalPart> optional_parts();

// One line per part: name, "enabled" or "disabled", reason.
void print_optional_parts(std::ostream& out);

}  // namespace collcheck::cli
