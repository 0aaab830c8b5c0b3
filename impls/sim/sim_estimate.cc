// What a simulation will hold, estimated before it runs: every participant's guarded buffers,
// the engine's per-step and per-message state, the payloads on the wire and the buffers it
// hands back.
#include "impls/link/guarded_buffer.h"
#include "impls/sim/simulation.h"

namespace collcheck {

MemoryEstimate simulation_memory(const Case& shape, const ScheduleSize& size, const SimulationOptions& options) {
  MemoryEstimate estimate;
  const std::uint64_t element = size_of(shape.dtype);
  const std::uint64_t guard = options.numeric ? options.guard + kBufferAlignment : 0;
  if (options.numeric) {
    estimate.add(case_buffers(shape, guard));
    estimate.add("buffers",
                 saturating_product(saturating_sum(size.scratch_elements, size.participants * guard), element), "");
  }
  // Each step: its place in a stream and whether it is done; each message (a send and its
  // receive): its transmission record and events.
  const std::uint64_t messages = size.steps / 2 + 1;
  const std::uint64_t per_message = sizeof(sim::InFlight) + 2 * sizeof(sim::Event);
  estimate.add(
      "events",
      saturating_sum(saturating_product(size.steps, sizeof(int) + 1), saturating_product(messages, per_message)),
      "up to " + std::to_string(messages) + " messages x " + std::to_string(per_message) + " B");
  if (!options.numeric) return estimate;
  // Sends are buffered: at worst a rank's whole share is on the wire at once; a reliable link
  // also keeps what it sent, to send it again.
  const std::uint64_t share =
      saturating_product(saturating_product(std::max(input_elements(shape), output_elements(shape)), element),
                         static_cast<std::uint64_t>(shape.nranks));
  estimate.add("messages", options.protocol.reliable ? saturating_product(share, 3) : share,
               options.protocol.reliable ? "on the wire and kept to resend" : "on the wire");
  MemoryEstimate results = case_buffers(shape, 0);
  estimate.add("results", results.total(), "every rank's input and output, copied out");
  return estimate;
}

}  // namespace collcheck
