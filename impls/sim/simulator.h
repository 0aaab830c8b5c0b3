// The `sim` transport: runs a schedule's participants under a seeded deterministic scheduler
// on virtual time over a Topology, moving and reducing real data, and hashes the event trace.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "impls/link/hook.h"
#include "impls/schedule/schedule.h"
#include "impls/sim/topology.h"

namespace collcheck {

// A replacement for the reduction-op contract (reduce_op.h), for deliberately broken variants.
struct ReductionOverride {
  void (*reduce)(DType, RedOp, const std::byte* a, const std::byte* b, std::byte* out, std::size_t count) = nullptr;
  void (*finish_average)(DType, std::byte* data, std::size_t count, int nranks) = nullptr;
};

// How far a run has come, for a caller that reports it while the run goes on
// (SimulationOptions::progress): nothing the run's outcome depends on.
struct SimulationProgress {
  // Before the events: the set-up pass reads and checks every participant's steps (at 16,384
  // ranks a billion, some seconds); `ready` of the `participants` are done.
  bool setting_up = false;
  std::uint64_t ready = 0;
  std::uint64_t participants = 0;
  std::uint64_t events = 0;
  std::uint64_t sent = 0;     // the schedule's messages sent so far, each once (retransmissions apart)
  std::uint64_t planned = 0;  // the schedule's messages of every call
  std::uint64_t retransmissions = 0;
  double virtual_time = 0;  // seconds
  double wall_seconds = 0;  // since the events began (the set-up before them not counted); 0 while setting up
};

// How far a run has come, in words: `setting up, the steps of 256 of 16384 participants read and
// checked`, or `12.3 M of 536.8 M messages sent (2.3 %), 41 sent again, virtual time 0.700 ms,
// 1.14 M messages/s, about 460 s left` (the rate so far, and the wall time left at that rate).
std::string progress_text(const SimulationProgress& progress);
// A count of messages: as it is below ten million, else millions with one decimal (`245.1 M`).
std::string message_amount(std::uint64_t value);
// Millions a second, two decimals: `3.02 M` (0 where no time has passed).
std::string millions_per_second(std::uint64_t count, double seconds);

struct SimulationOptions {
  explicit SimulationOptions(std::uint64_t schedule_seed = 0, LinkHook* link_hook = nullptr, bool numbers = true)
      : seed(schedule_seed), hook(link_hook), numeric(numbers) {}

  std::uint64_t seed = 0;    // orders simultaneous events; the inputs come from the case's seed
  LinkHook* hook = nullptr;  // null: every message delivered, deadline 60 s
  bool numeric = true;       // move and reduce real data; false: timing only
  // Elements of guard zone after every buffer (and at least as many before it, laid out as
  // impls/link/guarded_buffer.h says, the case's offset included), filled with a pattern and
  // checked afterwards; schedules may address them (validate's slack) and are reported.
  std::size_t guard = 0;
  // The caller has validated the schedule with this guard (validate) and it passed: simulate does
  // not validate it again (a backend running one case's schedule many times validates it once).
  bool validated = false;
  ReductionOverride reduction;  // null members: the standard contract
  // Given inputs, rank by rank (each exactly the rank's input buffer, packed), instead of the
  // case's generated ones: to feed one collective's outputs into another.
  const std::vector<std::vector<std::byte>>* inputs = nullptr;
  // A training loop: every participant runs its script `calls` times back to back with no
  // barrier in between. As soon as a rank's call k has finished it writes the inputs of call
  // k+1 (the case with seed + (k+1) * call_seed_step) into its buffers and starts again, while
  // its neighbours may still be busy with call k. Scratch keeps whatever the last call left.
  int calls = 1;
  std::uint64_t call_seed_step = 1;
  // Checksums, sequence numbers, timeouts and retransmission (hook.h). On `sim` the timeout is
  // virtual; 0 means the smaller of 0.5 s and half the hook's deadline. Acknowledgements and
  // requests to go back travel beside the data, on the route's latency, and are never faulted.
  LinkProtocol protocol;
  // The most bytes the run's messages may hold at once: on the wire, kept by a reliable sender to
  // send again, taken and waiting for their receive step (0: no limit). The estimate before the
  // run (simulation_memory) assumes a bound on them that a reliable sender far ahead of a
  // receiver waiting for a lost message can outgrow; past this the run stops (out_of_memory)
  // instead of being killed for memory.
  std::uint64_t message_memory = 0;
  // Called while the run goes on, every `progress_every` seconds of wall time (the clock is read
  // every 16,384 events); empty: never. A long run at thousands of ranks says how far it is.
  std::function<void(const SimulationProgress&)> progress;
  double progress_every = 10;
};

struct SimulatedRun {
  bool completed = false;
  // The link protocol saw a fault it could not survive (a checksum, a gap, a timeout, too many
  // retransmissions) and stopped every participant: `error` names who saw what.
  bool detected = false;
  std::string error;                // why not, naming the participant and step
  double detected_at = 0;           // detected: virtual seconds when the last participant was told
  std::size_t retransmissions = 0;  // reliable: messages sent again
  std::size_t discarded = 0;        // arrivals dropped by the receiver: duplicates, damaged, out of order
  double time = 0;                  // virtual seconds until the last participant finished
  std::uint64_t trace = 0;          // hash of every event in order: equal seeds, equal traces
  std::size_t events = 0;
  std::size_t messages = 0;  // transmissions, retransmissions included
  // The most bytes its messages held at once (as SimulationOptions::message_memory counts them);
  // out_of_memory: they outgrew message_memory and the run stopped there (`error` says when).
  std::uint64_t peak_message_memory = 0;
  bool out_of_memory = false;
  // Link loads, per topology link (Topology::links): bytes carried and seconds busy carrying them.
  std::vector<std::uint64_t> link_bytes;
  std::vector<double> link_busy;
  std::vector<std::vector<std::byte>> outputs;  // per rank, its output (empty: reduce non-root), last call
  std::vector<std::vector<std::vector<std::byte>>> earlier_outputs;  // [call][rank], the calls before the last
  std::vector<std::vector<std::byte>> inputs;                        // per rank, its input buffer after the run
  std::vector<bool> guards_intact;                                   // per rank: its guard zones still hold the pattern
};

// What simulate() will hold for a schedule of that size and the case's buffers (`shape` carries
// the case), estimated before it runs: buffers, engine state, messages, the results.
// `links`: the schedule's stream links (sample_streams), 0 before it is built (then the size's
// bound, ScheduleSize::stream_links; check again with the count once built). The topology's
// routes are route_memory's.
// `on_demand`: the schedule is made on demand (its steps are not held, by it nor by the engine).
MemoryEstimate simulation_memory(const Case& shape, const ScheduleSize&, const SimulationOptions& = SimulationOptions(),
                                 std::uint64_t links = 0, bool on_demand = false);

// A schedule's stream links and the topology links on their routes, over every participant,
// estimated from the sends of a sample of participants spread over the ranks (every one when
// fewer than 32): what the engine will keep per stream link and its topology's cache of routes.
struct StreamSample {
  std::uint64_t links = 0;
  std::uint64_t route_links = 0;
};
StreamSample sample_streams(const Schedule&, const Topology&);
// The topology's cache of routes for `routes` pairs with `route_links` links on them in all.
std::uint64_t route_memory(std::uint64_t routes, std::uint64_t route_links);

// Where participant p runs: rank r on GPU r, switch participants on the topology's aggregating
// switches (`switches`) in turn; -1 where there is no such vertex.
int participant_vertex(const Topology&, const std::vector<int>& switches, int nranks, int p);

// Runs `schedule` (its shape carries the case: dtype, op, values, seed) on `topology`: rank r
// on GPU r, switch participants on the aggregating switches in turn. A message occupies every
// link of its route for bytes / bandwidth, links serve messages in the order they are sent,
// and it arrives after the route's latency plus its bytes over the narrowest link (cut-through).
// Local copies and reductions take bytes / copy_bandwidth.
SimulatedRun simulate(const Schedule& schedule, const Topology& topology,
                      const SimulationOptions& = SimulationOptions());

}  // namespace collcheck
