// What proving a schedule holds, estimated before it is built (proof.h: proof_memory).
#include <algorithm>
#include <vector>

#include "impls/prove/proof.h"
#include "impls/prove/provenance.h"
#include "reference/counts.h"

namespace collcheck {

using provenance::Element;
using provenance::Run;

namespace {

constexpr std::uint64_t kHeapBlockOverhead = 16;  // malloc's header and rounding of a small block

// The schedule's `held` steps (none made on demand), and the elements and queues of `ranks` ranks
// run with `scratch` elements of scratch among them.
MemoryEstimate proof_state(const Case& shape, const ScheduleSize& held, std::uint64_t ranks, bool on_demand) {
  MemoryEstimate estimate = schedule_memory(held, on_demand);
  const std::uint64_t steps = on_demand ? 0 : held.steps;  // stored: each step's own state too
  // Out of place the input is implicit; every output and scratch element is an Element, and a
  // reduced one may hold a few runs of contributions besides (an allocation of its own).
  const std::uint64_t outputs = saturating_product(
      ranks, shape.in_place ? std::max(input_elements(shape), output_elements(shape)) : output_elements(shape));
  const std::uint64_t elements = saturating_sum(outputs, held.scratch_elements);
  // One run lives in the Element itself; several in a vector of their own (and its heap block).
  const std::uint64_t runs = held.runs_per_reduced_element;
  const std::uint64_t per_element =
      sizeof(Element) +
      (reduces(shape.collective) && runs > 1 ? sizeof(std::vector<Run>) + kHeapBlockOverhead + runs * sizeof(Run) : 0);
  // Sends are buffered: at worst a rank's whole share waits in a queue at once.
  const std::uint64_t queued = saturating_product(
      ranks, saturating_product(std::max(input_elements(shape), output_elements(shape)), sizeof(Element)));
  estimate.add("proof state",
               saturating_sum(saturating_product(elements, per_element),
                              saturating_sum(queued, saturating_product(steps, sizeof(int) + 1))),
               std::to_string(elements) + " elements x " + std::to_string(per_element) + " B, messages queued");
  // Stored steps are validated first: each send's count listed per stream link (a vector that grows
  // to twice its need, a map node per link).
  if (steps > 0 && held.stream_links > 0) {
    constexpr std::uint64_t kPerLink = 128;
    estimate.add("validation",
                 saturating_sum(saturating_product(steps / 2 + 1, 2 * sizeof(std::size_t)),
                                saturating_product(held.stream_links, kPerLink)),
                 std::to_string(held.stream_links) + " stream links' sends listed");
  }
  return estimate;
}

}  // namespace

MemoryEstimate proof_memory(const Case& shape, const ScheduleSize& size, bool on_demand) {
  // Made on demand: made as they are proven, never stored.
  return proof_state(shape, size, static_cast<std::uint64_t>(shape.nranks), on_demand);
}

MemoryEstimate rank0_proof_memory(const Case& shape, const ScheduleSize& size, bool stored) {
  const auto nranks = static_cast<std::uint64_t>(std::max(shape.nranks, 1));
  ScheduleSize rank0 = size;
  if (!stored) {  // made on demand, only rank 0's steps are kept
    rank0.participants = 1;
    rank0.steps = size.steps / nranks + 1;
    rank0.stream_links = 0;  // checked step by step as they are made, no list of sends per link
  }
  rank0.scratch_elements = size.scratch_elements / nranks + 1;
  return proof_state(shape, rank0, 1, false);
}

}  // namespace collcheck
