// The `sim` executor's engine, declared for its files: simulator.cc (the event loop and the step
// runner), sim_memory.cc (guarded buffers), sim_fabric.cc (link timing), sim_link.cc (the link
// protocol over virtual time). Private to impls/sim/.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <queue>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "impls/link/guarded_buffer.h"
#include "impls/link/protocol.h"
#include "impls/sim/simulator.h"

namespace collcheck::sim {

// The engine works as follows. Everything that happens is an `Event` at a virtual time in one
// priority queue; events at the same time are ordered by a tie drawn from the seed, so that a
// seed fixes one interleaving and the trace (a hash of every event in order) names it.
//
// Each participant's steps fall into its streams (Step::stream); a stream runs its steps in
// order, one at a time, each when its `after` steps are done and, for a receive, when its
// message waits in the stream's inbox. Starting a step does its work at once on the real bytes
// (a copy, a reduction, taking a message) and schedules a StepDone after its cost: bytes over
// the fabric's copy bandwidth. A send costs nothing to its sender: the message is handed to the
// link protocol's sender side, which passes it through the hook and books every link of its
// route from when the last of them is free (links serve messages in the order they are sent),
// and it arrives after the route's latency plus its bytes over the narrowest link.
//
// The link protocol (impls/link/protocol.h) runs on virtual time: an Arrival is judged by the
// stream's LinkReceiver; a receive step waiting for its message arms a Timeout (the timeout,
// or reliable the jittered retransmission interval); a request to go back travels to the sender
// on the route's latency as a GoBack event, and a reordered message waits for a Release. A
// fault the protocol cannot survive stops every participant once the news has reached them.
// A run of several calls starts a participant's next call as soon as its last step is done.

enum class EventKind : std::uint8_t { Wake, StepDone, Arrival, GoBack, Timeout, Release };

struct Event {
  double time;
  std::uint64_t tie;       // from the seed: orders events at the same time
  std::uint64_t sequence;  // unique, for a total order
  EventKind kind;
  int participant;
  int step;
  std::size_t message;  // Arrival: into in_flight_; GoBack, Release: into go_back_; Timeout: the call

  bool operator>(const Event& other) const {
    return std::tie(time, tie, sequence) > std::tie(other.time, other.tie, other.sequence);
  }
};

struct Stream {
  std::vector<int> steps;
  std::size_t next = 0;
  bool busy = false;
};

using StreamKey = std::tuple<int, int, int>;  // from, to, channel

// Streams are looked up on every send, arrival and timer, never walked in order: hashed.
struct StreamKeyHash {
  std::size_t operator()(const StreamKey& key) const noexcept {
    const auto [from, to, channel] = key;
    std::uint64_t mixed = (std::uint64_t{static_cast<std::uint32_t>(from)} << 32) ^ static_cast<std::uint32_t>(to);
    mixed ^= std::uint64_t{static_cast<std::uint32_t>(channel)} * 0x9E3779B97F4A7C15ULL;
    return static_cast<std::size_t>(mixed * 0xBF58476D1CE4E5B9ULL >> 17);
  }
};

// One transmission of a message on the wire.
struct InFlight {
  StreamKey key;
  std::uint64_t sequence;
  int attempt;
  std::uint64_t sum;               // the checksum of what the sender meant to send
  std::vector<std::byte> payload;  // what the wire carries
};

// A receiver's end of a stream: the protocol's receiver, and the messages it took, waiting for
// their receive step.
struct Inbox {
  LinkReceiver receiver;
  std::deque<std::vector<std::byte>> waiting;
};

// A sender's end: the protocol's sender, what it sent (kept while reliable, to send again), and a
// message held back by a reorder fault until the next one has been sent.
struct Outbox {
  LinkSender sender;
  std::uint64_t sent = 0;
  std::vector<std::vector<std::byte>> kept;
  std::vector<std::uint64_t> sums;
  std::vector<std::size_t> sizes;
  std::uint64_t per_call = 0;
  double last_arrival = 0;  // the link is FIFO: later messages do not overtake
  bool holding = false;
  InFlight held;
};

struct GoBack {
  StreamKey key;
  std::uint64_t from;  // resend every message from this sequence number on
};

class DefaultHook final : public LinkHook {};

class Simulation {
 public:
  Simulation(const Schedule& schedule, const Topology& topology, const SimulationOptions& options);
  SimulatedRun run();

 private:
  // The step runner (simulator.cc).
  bool place_participants();
  void set_up_participants();
  void push(double time, EventKind kind, int p, int step, std::size_t message);
  void record(const Event& event);
  void handle(const Event& event);
  bool call_finished(std::size_t q) const { return finished_steps_[q] == schedule_.participants[q].steps.size(); }
  std::vector<std::byte> final_output(int rank);
  void next_call(int p);
  void advance(int p);
  bool ready(int p, int k);
  double start(int p, int k);
  void finish(double deadline);

  // Guarded memory (sim_memory.cc).
  void allocate(GuardedBuffer& buffer, std::size_t count);
  std::byte* at(int p, BufferKind buffer, std::size_t offset);
  void reduce(const std::byte* a, const std::byte* b, std::byte* out, std::size_t count);

  // The fabric's timing (sim_fabric.cc).
  double transmit(int from, int to, std::size_t bytes);
  double latency(int from, int to) const;
  double travel_time(int from, int to, std::size_t bytes) const;  // latency plus bytes on the route, idle
  double compute_time(std::size_t elements) const;

  // The link protocol on virtual time (sim_link.cc).
  void set_up_protocol();
  std::string stream_name(const StreamKey& key, std::uint64_t sequence) const;
  void arrive(std::size_t index);
  void ask_again(const StreamKey& key);
  void expire(int p, int k, std::size_t call);
  double wait_interval(int p, int k);
  double message_travel(int p, int k) const;
  bool waits_for_message(int p, int k) const;
  void arm_timers(int p);
  void detect(const StreamKey& key, std::string what);
  void send(int p, const Step& step);
  void transmit_message(const StreamKey& key, std::uint64_t sequence, int attempt, std::size_t bytes, std::uint64_t sum,
                        std::vector<std::byte> payload);
  void release(const GoBack& held);
  void deliver_at(double time, InFlight flight);
  void resend(const GoBack& request);
  void receive(int p, const Step& step);

  const Schedule& schedule_;
  const Topology& topology_;
  const SimulationOptions& options_;
  DefaultHook default_hook_;
  LinkHook& hook_;
  const std::size_t element_;
  SimulatedRun result_;
  double now_ = 0;
  double last_step_ = 0;
  std::uint64_t next_sequence_ = 0;
  std::priority_queue<Event, std::vector<Event>, std::greater<Event>> events_;
  std::vector<int> vertex_;
  std::vector<double> link_free_;
  std::vector<GuardedBuffer> input_, output_, scratch_;
  std::vector<std::vector<Stream>> streams_;
  std::vector<std::size_t> finished_steps_;
  std::vector<int> call_;  // per participant: the call it is running (0-based)
  std::vector<std::vector<bool>> done_;
  std::vector<InFlight> in_flight_;
  LinkSettings protocol_;
  RetransmitJitter timer_jitter_;
  std::unordered_map<StreamKey, Inbox, StreamKeyHash> inbox_;
  std::unordered_map<StreamKey, Outbox, StreamKeyHash> outbox_;
  std::vector<GoBack> go_back_;
  std::vector<std::vector<Inbox*>> step_inbox_;  // per participant and step: a receive's inbox (else null)
  static constexpr double kNoTimer = -1;         // (virtual times are never negative)
  std::vector<std::vector<double>> timer_;       // per participant and step: when its wait timer was armed
};

}  // namespace collcheck::sim
