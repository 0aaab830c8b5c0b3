// Gloo's algorithms (the class-style ones and the function-style ones) behind one small interface
// for the gloo backend (the TCP full mesh they run on is gloo_mesh.h).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "reference/case.h"

namespace gloo {
class Context;
}

namespace collcheck {

// The options a `gloo:NAME:key=value,...` spec may set; each algorithm takes a subset.
struct GlooKnobs {
  std::string algorithm = "ring";  // gloo:allreduce: ring or bcube (AllreduceOptions::Algorithm)
  std::size_t segment = 0;         // bytes: Gloo's maxSegmentSize (0: Gloo's default, 1 MiB)
  int base = 2;                    // gloo:allreduce_bcube: Context::base, the peers per group
  double timeout = 0;              // seconds per wait (0: the run's deadline; class-style: 60)
  std::string iface;               // network interface for the TCP device (default: see connect)
};

// One rank's buffers for one case, already laid out as NCCL's in-place rule says: in place,
// `input` and `output` point into the same storage. `output` is null where the rank has no
// output (reduce, non-root); `scratch` holds GlooAlgorithm::scratch elements.
struct GlooBuffers {
  std::byte* input = nullptr;
  std::byte* output = nullptr;
  std::byte* scratch = nullptr;
};

// One algorithm built for one case shape on one context: built once, run as often as needed.
// run() throws gloo::Exception when Gloo reports an error (a timeout is a gloo::IoException).
class GlooCall {
 public:
  virtual ~GlooCall() = default;
  // `timeout` bounds each wait of the function-style algorithms (the class-style ones wait as
  // long as their pairs were told when they connected); `tag` tells calls apart on the wire.
  virtual void run(std::chrono::milliseconds timeout, std::uint32_t tag) = 0;
};

struct GlooAlgorithm {
  std::string_view name;       // `allreduce_ring`
  std::string_view gloo_name;  // what it is in Gloo: `gloo::AllreduceRing<T>`
  // Its own collective first, then the v-collective it also runs with per-rank counts, if any.
  std::vector<Collective> collectives;
  bool in_place;                          // whether in-place cases are accepted
  std::vector<std::string_view> options;  // the keys it takes besides `timeout` and `iface`
  std::string_view note;                  // how the adapter uses it (copies it adds), for docs and list
  // Elements of the scratch buffer the adapter needs for a case (0: none).
  std::size_t (*scratch)(const Case&);
  // Throws gloo::Exception where Gloo refuses the shape.
  std::unique_ptr<GlooCall> (*make)(const std::shared_ptr<gloo::Context>&, const Case&, const GlooKnobs&,
                                    const GlooBuffers&);
};

// Every algorithm the installed Gloo ships that maps onto one of our collectives, in list order.
std::span<const GlooAlgorithm> gloo_algorithms();

// The dtypes an algorithm runs: every dtype where it only moves data (Gloo moves elements by
// size), Gloo's arithmetic types (no bf16, no fp8) where it reduces.
std::vector<DType> gloo_dtypes(const GlooAlgorithm&);

// Message sizes in bytes where the algorithm changes how it cuts its data, as Gloo's sources set
// them (Capabilities::edge_bytes); `knobs` where a knob moves one (segment). Empty: none known.
std::vector<std::size_t> gloo_edge_bytes(const GlooAlgorithm&, const GlooKnobs&);

}  // namespace collcheck
