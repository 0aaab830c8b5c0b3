// libFuzzer target for topology files (impls/sim/topology.h, docs/simulator.md): a topology that
// parses is well formed (links and ranks name vertices that exist, latencies and bandwidths are
// finite and usable), and a message between its first two GPUs has a finite time.
#include <cmath>

#include "impls/sim/topology.h"
#include "tests/fuzz/fuzz_checks.h"

using namespace collcheck;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text = fuzz::as_text(data, size);
  const Result<Topology> topology = parse_topology(text);
  if (!topology) {
    fuzz::require_message(topology.error(), "parse_topology");
    return 0;
  }
  const int vertices = static_cast<int>(topology->vertices.size());
  for (const Link& link : topology->links) {
    fuzz::require(link.from >= 0 && link.from < vertices && link.to >= 0 && link.to < vertices,
                  "a link joins vertices that exist", text);
    fuzz::require(std::isfinite(link.latency) && link.latency >= 0, "a latency is finite, not negative", text);
    fuzz::require(std::isfinite(link.bandwidth) && link.bandwidth > 0, "a bandwidth is finite, positive", text);
  }
  for (int gpu : topology->gpus) {
    fuzz::require(gpu >= 0 && gpu < vertices && topology->vertices[gpu].kind == VertexKind::Gpu,
                  "a rank's GPU is a GPU vertex", text);
  }
  fuzz::require(std::isfinite(topology->copy_bandwidth) && topology->copy_bandwidth >= 0,
                "the copy bandwidth is finite, not negative", text);
  if (topology->nranks() >= 2) {
    const std::vector<int>& route = topology->route(topology->gpus[0], topology->gpus[1]);
    const double seconds = transfer_time(*topology, route, 1 << 20);
    fuzz::require(std::isfinite(seconds) && seconds >= 0, "a transfer takes a finite time", text);
  }
  return 0;
}
