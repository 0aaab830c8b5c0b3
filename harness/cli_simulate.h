// `collcheck simulate`: runs one reference algorithm on the simulated fabric for a list of
// counts and prints nccl-tests' columns: predicted time, algbw, busbw, #wrong, trace hash.
#pragma once

#include <ostream>
#include <span>
#include <string_view>

namespace collcheck::cli {

int run_simulate(std::span<const std::string_view> args, std::ostream& out, std::ostream& err);

}  // namespace collcheck::cli
