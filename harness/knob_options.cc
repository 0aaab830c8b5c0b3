// The knob options' parser (knob_options.h).
#include "harness/knob_options.h"

namespace collcheck::cli {

Result<Knobs> parse_knob_options(const Arguments& args) {
  Result<std::uint64_t> chunk = parse_count("--chunk", args.get("chunk"), 0, std::uint64_t{1} << 28);
  if (!chunk) return chunk.error();
  Result<std::uint64_t> channels = parse_count("--channels", args.get("channels"), 1, 64);
  if (!channels) return channels.error();
  Result<std::uint64_t> fan_in = parse_count("--fan-in", args.get("fan-in"), 2, 64);
  if (!fan_in) return fan_in.error();
  return Knobs{*chunk, static_cast<int>(*channels), static_cast<int>(*fan_in)};
}

}  // namespace collcheck::cli
