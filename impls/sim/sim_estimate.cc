// What a simulation will hold, estimated before it runs: every participant's guarded buffers,
// the engine's per-step, per-message and per-stream state, the payloads on the wire and the
// buffers it hands back.
#include <algorithm>
#include <utility>
#include <vector>

#include "impls/link/guarded_buffer.h"
#include "impls/sim/simulation.h"

namespace collcheck {
namespace {

// A schedule made on demand: the messages a stream link is assumed to have on the wire at once,
// and what a participant's sequence holds (a coroutine's frame and what it shares).
constexpr std::uint64_t kOnDemandAhead = 16;
constexpr std::uint64_t kSequenceBytes = 1536;  // the ring all-reduce's frame holds a batch of 16 steps
// The event queue's buckets (event_queue.h): about one per participant's pending time, each kept
// with room for the largest wave it held (at 16,384 ranks 50 MB in 10,134 buckets, 3 KB per rank).
constexpr std::uint64_t kQueueBytes = 4096;

}  // namespace

int participant_vertex(const Topology& topology, const std::vector<int>& switches, int nranks, int p) {
  if (p < nranks) return p < topology.nranks() ? topology.gpus[static_cast<std::size_t>(p)] : -1;
  if (switches.empty()) return -1;
  return switches[static_cast<std::size_t>(p - nranks) % switches.size()];
}

StreamSample sample_streams(const Schedule& schedule, const Topology& topology) {
  constexpr int kSampled = 16;
  const int participants = schedule.nparticipants();
  if (participants == 0 || topology.nranks() < schedule.nranks()) return {};
  const std::vector<int> switches = topology.aggregating_switches();
  const int step = std::max(1, participants / kSampled);
  StreamSample sampled;
  int read = 0;
  std::vector<std::pair<int, int>> streams;  // the participant's (peer, channel) of each send
  for (int p = 0; p < participants; p += step, ++read) {
    streams.clear();
    for (StepReader steps = schedule.steps_of(p); steps.next();) {
      if (steps.step().sends()) streams.emplace_back(steps.step().peer, steps.step().channel);
    }
    std::sort(streams.begin(), streams.end());
    streams.erase(std::unique(streams.begin(), streams.end()), streams.end());
    sampled.links += streams.size();
    const int from = participant_vertex(topology, switches, schedule.nranks(), p);
    for (const auto& [peer, channel] : streams) {
      const int to = participant_vertex(topology, switches, schedule.nranks(), peer);
      if (from >= 0 && to >= 0 && from != to) sampled.route_links += topology.route(from, to).size();
    }
  }
  // Scaled from the participants read to all of them, rounded up.
  const auto all = static_cast<std::uint64_t>(participants);
  const auto scale = [&](std::uint64_t value) {
    return (saturating_product(value, all) + static_cast<std::uint64_t>(read) - 1) / static_cast<std::uint64_t>(read);
  };
  return StreamSample{scale(sampled.links), scale(sampled.route_links)};
}

// A pair's entry in the route cache's hash map (its node, the route's vector, the allocations'
// own overhead) and 6 bytes per link on it: 4, in a vector that grew to up to twice its need as
// the route was read off (1.4 times on average over a ring's routes of every length).
std::uint64_t route_memory(std::uint64_t routes, std::uint64_t route_links) {
  constexpr std::uint64_t kEntryBytes = 128;
  constexpr std::uint64_t kLinkBytes = 6;
  return saturating_sum(saturating_product(routes, kEntryBytes), saturating_product(route_links, kLinkBytes));
}

MemoryEstimate simulation_memory(const Case& shape, const ScheduleSize& size, const SimulationOptions& options,
                                 std::uint64_t links, bool on_demand) {
  MemoryEstimate estimate;
  const std::uint64_t element = size_of(shape.dtype);
  const std::uint64_t guard = options.numeric ? options.guard + kBufferAlignment : 0;
  if (options.numeric) {
    estimate.add(case_buffers(shape, guard));
    estimate.add("buffers",
                 saturating_product(saturating_sum(size.scratch_elements, size.participants * guard), element), "");
  }
  if (links == 0) links = size.stream_links;  // estimate_schedule's bound
  // Each step of a stored schedule: its number in its stream's list (participants with several
  // streams) and whether it is done (only where steps wait for others); made on demand, nothing:
  // a stream holds the step it stands at. Each message (a send and its receive): its transmission
  // record and its arrival, and reliable the sender's copy until the receiver has taken it. A
  // stored schedule's messages may all be on the wire at once (sends are buffered); one made on
  // demand is assumed to have at most kOnDemandAhead per stream link at once, as many as the ring
  // at 1024 to 16,384 ranks with drops had (docs/performance.md), since a schedule that big holds
  // its messages back behind its receives. Each participant: its own record, its wake, a step done
  // per stream, its stream (cursor and wait timer's slot, and its timers' generation) and the timer heap's entry,
  // the wait timers held back before they join it (kArmedPerStream, the ring rounded up to twice
  // that), its share of the event queue's buckets, and its sequence's state.
  const std::uint64_t all_messages = size.steps / 2 + 1;
  const std::uint64_t messages =
      on_demand ? std::min(all_messages, saturating_product(links, kOnDemandAhead)) : all_messages;
  const std::uint64_t per_message = sim::kOnWireCost + (options.protocol.reliable ? sim::kKeptCost : 0) +
                                    (on_demand ? sim::kWaitingCost : 0) + (options.numeric ? 2 * sim::kPayloadCost : 0);
  const std::uint64_t per_step = on_demand ? 0 : sizeof(int);
  const std::uint64_t per_participant = sim::kParticipantBytes + 2 * sizeof(sim::Event) + sizeof(sim::Stream) +
                                        sizeof(std::uint32_t) + sizeof(sim::Event) +
                                        2 * sim::kArmedPerStream * sizeof(sim::ArmedTimer) + sizeof(std::size_t) +
                                        kQueueBytes + (on_demand ? kSequenceBytes : 0);
  estimate.add(
      "events",
      saturating_sum(saturating_product(size.steps, per_step), saturating_product(size.participants, per_participant)),
      "per step and participant");
  // The messages (SimulationOptions::message_memory counts them the same way as the run goes).
  // Sends are buffered: at worst a rank's whole share of data is on the wire at once; a reliable
  // link also keeps what it sent, to send it again.
  const std::uint64_t share =
      options.numeric
          ? saturating_product(saturating_product(std::max(input_elements(shape), output_elements(shape)), element),
                               static_cast<std::uint64_t>(shape.nranks))
          : 0;
  estimate.add(
      "messages",
      saturating_sum(saturating_product(messages, per_message),
                     options.protocol.reliable ? saturating_product(share, 3) : share),
      "up to " + std::to_string(messages) + " messages x " + std::to_string(per_message) + " B" +
          (options.numeric ? std::string(options.protocol.reliable ? ", payloads on the wire and kept to resend"
                                                                   : ", payloads on the wire")
                           : ""));
  // The engine's vector of stream links grows as it finds them: at its last growth it holds the
  // old records and twice as many new ones. Finding them takes an index entry each (a hash node),
  // and each end keeps the link among its participant's peer links.
  constexpr std::uint64_t kGrowth = 3;
  constexpr std::uint64_t kFinding = 96;
  estimate.add("links", saturating_product(links, kGrowth * sizeof(sim::StreamLink) + kFinding),
               std::to_string(links) + " streams x (" + std::to_string(sizeof(sim::StreamLink)) + " B x " +
                   std::to_string(kGrowth) + " as the vector grows, + " + std::to_string(kFinding) +
                   " B to find them)");
  if (!options.numeric) return estimate;
  MemoryEstimate results = case_buffers(shape, 0);
  estimate.add("results", results.total(), "every rank's input and output, copied out");
  return estimate;
}

}  // namespace collcheck
