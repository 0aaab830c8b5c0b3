// The `sim` executor's engine, declared for its files: simulator.cc (the event loop and the step
// runner), sim_setup.cc (the participants, their streams and stream links, before the run),
// sim_memory.cc (guarded buffers), sim_fabric.cc (link timing), sim_link.cc (the link protocol over
// virtual time). Private to impls/sim/.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <tuple>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

#include "impls/link/guarded_buffer.h"
#include "impls/link/protocol.h"
#include "impls/schedule/step_cursor.h"
#include "impls/sim/event_queue.h"
#include "impls/sim/simulator.h"
#include "impls/sim/timer_queue.h"
#include "reference/cache_asks.h"

namespace collcheck::sim {

// The engine works as follows. Everything that happens is an `Event` at a virtual time in one
// queue (event_queue.h: a FIFO of those pushed in order, buckets by time for the others), wait
// timers in a second one (timer_queue.h) where a timer is cancelled as soon as its receive
// starts (a timer armed waits in arming order, `arming_`, and joins that heap only if still armed
// when it could come first: most are over before, their messages having come); events at the same
// time are ordered by a tie drawn from the seed, so that a seed fixes one interleaving and the trace
// (a hash of every event in order) names it. The records of the events due next are asked for
// early (prefetch_ahead).
//
// Each participant's steps fall into its streams (Step::stream); a stream runs its steps in
// order, one at a time, each when its `after` steps are done and, for a receive, when its
// message waits in the stream's inbox. A stream reads its steps through its StepCursor, which
// holds only the step it stands at: from the stored schedule, or made on demand by the
// participant's step sequence (Schedule::make_steps), so a schedule of a billion steps is never
// held. Before the run every participant's steps are read once: counted per stream, their
// stream links found (a participant keeps its few links as PeerLinks; a stream looks its step's
// up when it comes to it), and, made on demand, each step checked on its own and the sends and
// receives of every link counted to match; a receive checks its message's size as it takes it. Starting a step does its
// work at once on the real bytes (a copy, a reduction, taking a message) and schedules a StepDone after its cost: bytes
// over the fabric's copy bandwidth; a step that costs nothing is done at once, with no event (finish_step), and
// the steps it lets start start then too. A send costs nothing to its sender: the message is handed to the link
// protocol's sender side, which passes it through the hook and books every link of its route from when the last of them
// is free (links serve messages in the order they are sent), and it arrives after the route's latency plus its bytes
// over the narrowest link.
//
// The link protocol (impls/link/protocol.h) runs on virtual time: an Arrival is judged by the
// stream's LinkReceiver; a receive step waiting for its message arms a Timeout (the timeout,
// or reliable the jittered retransmission interval); a request to go back travels to the sender
// on the route's latency as a GoBack event, and a reordered message waits for a Release. A
// reliable sender keeps what it sent until the receiver has taken it and no request to go back
// is on its way (forget_taken). A
// fault the protocol cannot survive stops every participant once the news has reached them.
// A run of several calls starts a participant's next call as soon as its last step is done.

static constexpr std::uint32_t kNoLink = ~std::uint32_t{0};
static constexpr std::size_t kFewPeerLinks = 4;  // prefetch_ahead asks for these links' records

static constexpr double kNoTimer = -1;  // (virtual times are never negative)
// Armed timers held back per stream at most (heap_armed_timers): enough that a lockstep wave's
// receives have all started before their timers' turn comes.
static constexpr std::size_t kArmedPerStream = 4;

// Not aligned to cache lines, nor the transmission's and the participant's records below: aligned,
// each record asked for whole takes fewer lines, but the full run with faults was 2-3 % slower
// side by side (docs/performance.md, 2026-12-07, a fourth session).
struct Stream {
  explicit Stream(StepCursor cursor) : steps(std::move(cursor)) {}
  StepCursor steps;
  bool busy = false;
  std::uint32_t link = kNoLink;  // the current step's stream link, when it sends or receives
  // When the wait timer of its current receive was armed, or kNoTimer, and that timer's slot of
  // the timer heap: here, not in arrays of their own, since every arm and cancel also reads the
  // stream (two cache lines less a message at thousands of ranks).
  double timer_armed = kNoTimer;
  TimerSlot timer;
};

// A wait timer as arm_timers arms it, before it joins the timer heap: its event's number and its
// jitter's draw number taken in turn, its time worked out only if it is still armed when it joins.
struct ArmedTimer {
  double armed = 0;
  std::uint64_t sequence = 0;  // the event's number, its tie's source (push)
  std::uint64_t draw = 0;      // reliable: the jitter's draw number (RetransmitJitter::take_number)
  std::uint32_t slot = 0;
  std::uint32_t generation = 0;  // the stream's timer generation (timer_generations_) when armed
  int participant = 0;
  int step = 0;
  int call = 0;
};

// The timer heap's slots: each stream's own (a stream's place is its timer slot).
struct StreamTimerSlots {
  std::vector<Stream>* streams = nullptr;
  TimerSlot& operator[](std::size_t slot) const { return (*streams)[slot].timer; }
};

// A participant's end of one stream link, found from a step's (peer, channel): a participant
// has few (a ring two), so they are a short sorted list instead of a number per step. Twelve
// bytes, the direction in the link number's top bit (a run has far fewer than 2^31 links), so that
// a ring participant's two fit in its own record (ParticipantState::near_peers); sorted by peer,
// channel, direction, then link.
struct PeerLink {
  static constexpr std::uint32_t kSends = std::uint32_t{1} << 31;
  int peer = 0;
  int channel = 0;
  std::uint32_t sends_and_link = 0;
  static PeerLink make(int peer, int channel, bool sends, std::uint32_t link) {
    return PeerLink{peer, channel, (sends ? kSends : 0) | link};
  }
  bool sends() const { return (sends_and_link & kSends) != 0; }
  std::uint32_t link() const { return sends_and_link & ~kSends; }
  friend auto operator<=>(const PeerLink&, const PeerLink&) = default;
};
static_assert(sizeof(PeerLink) == 12);

using StreamKey = std::tuple<int, int, int>;  // from, to, channel

// Streams are looked up while the engine is set up, never walked in order: hashed.
struct StreamKeyHash {
  std::size_t operator()(const StreamKey& key) const noexcept {
    const auto [from, to, channel] = key;
    std::uint64_t mixed = (std::uint64_t{static_cast<std::uint32_t>(from)} << 32) ^ static_cast<std::uint32_t>(to);
    mixed ^= std::uint64_t{static_cast<std::uint32_t>(channel)} * 0x9E3779B97F4A7C15ULL;
    return static_cast<std::size_t>(mixed * 0xBF58476D1CE4E5B9ULL >> 17);
  }
};

// One transmission of a message on the wire; its record is reused once it has arrived.
struct InFlight {
  std::uint32_t link = 0;  // into links_
  int attempt = 0;
  std::uint64_t sequence = 0;
  std::uint64_t sum = 0;           // the checksum of what the sender meant to send
  std::size_t bytes = 0;           // the message's size
  std::vector<std::byte> payload;  // what the wire carries (timing only: nothing)
};

// A receiver's end of a stream: the protocol's receiver, and the messages it took, waiting for
// their receive step (timing only: counted, not kept); a schedule made on demand also keeps their
// sizes, to check each against its receive (a stored one was checked before the run).
struct Inbox {
  LinkReceiver receiver;
  std::size_t waiting_count = 0;
  std::uint64_t per_call = 0;  // receives of one call
  NearFifo<std::size_t, 2> waiting_bytes;
  Fifo<std::vector<std::byte>> waiting;  // numeric: the payloads taken, oldest first
};

// What a reliable sender keeps of a message it sent, to send it again (numeric: its payload too,
// in the stream link's `kept_payloads`).
struct KeptMessage {
  std::uint64_t sum = 0;
  std::size_t bytes = 0;
};

// A sender's end: the protocol's sender, and what it sent and the receiver has not yet taken (kept
// while reliable, to send again; message `kept_from` first: a link mostly keeps one or two, in its
// own record).
struct Outbox {
  std::uint64_t sent = 0;
  std::uint64_t per_call = 0;
  double last_arrival = 0;  // the link is FIFO: later messages do not overtake
  std::uint64_t kept_from = 0;
  NearFifo<KeptMessage, 2> kept;
  int asks_pending = 0;  // requests to go back on their way: nothing they may ask for is forgotten
  LinkSender sender;
};

// One direction of one channel between two participants: both ends of the link protocol, and the
// route its messages take with what crossing it idle costs (worked out once). Laid out so that a
// send reads the first two cache lines (the route's links, the outbox's counts and its first kept
// messages) and an arrival the second and the inbox's: at thousands of ranks each line is a cache
// miss, and so is every vector's storage, which is why the route's links and the first kept
// messages are copied into the record.
struct alignas(64) StreamLink {
  static constexpr std::size_t kNearHops = 4;
  StreamKey key;
  std::uint16_t hop_count = 0;    // the route's links: none where both ends are on one vertex (65,535: as many or more)
  bool holding = false;           // the outbox's `held` message waits for the next one (a reorder fault)
  int near_hops[kNearHops] = {};  // the route's links where they fit (the route cache's copy is a miss)
  double latency = 0;             // the route's latencies, summed in route order
  double narrowest = 0;           // its narrowest bandwidth
  LinkMemo hook_memo;             // the hook's, handed with every message (first line, with the route)
  Outbox outbox;
  Inbox inbox;
  std::span<const int> route;  // the topology's links in order (kept in its route cache)
  // The route's links, read from this record where they fit.
  std::span<const int> hops() const {
    return hop_count <= kNearHops ? std::span<const int>(near_hops, hop_count) : route;
  }
  InFlight held;  // the outbox's message held back by a reorder fault until the next one is sent
  Fifo<std::vector<std::byte>> kept_payloads;  // numeric: the payloads of the outbox's kept messages
};
// links_ grows by moving its records, not copying them (nothing in one allocates while empty).
static_assert(std::is_nothrow_move_constructible_v<StreamLink>);

// What a message costs the run's memory where it is held (SimulationOptions::message_memory, and
// the estimate before the run): on the wire its transmission record and arrival event; kept by a
// reliable sender its checksum and size, in a list that may have grown to twice its need; taken
// and waiting for its receive step its size (made on demand only, twice as well). A numeric run
// adds the payload, its bytes and its vector, wherever it is.
constexpr std::uint64_t kOnWireCost = sizeof(InFlight) + sizeof(Event);
constexpr std::uint64_t kKeptCost = 2 * sizeof(KeptMessage);
constexpr std::uint64_t kWaitingCost = 2 * sizeof(std::size_t);
constexpr std::uint64_t kPayloadCost = sizeof(std::vector<std::byte>);
// A message taken holds less than it did on the wire: only sending and keeping can reach a new peak.
static_assert(kOnWireCost > kWaitingCost + kPayloadCost);
// A participant's own record (Simulation::ParticipantState), in bytes.
constexpr std::uint64_t kParticipantBytes = 64;

// The bytes the run's messages hold now, where they are.
struct HeldMessages {
  std::uint64_t on_wire = 0;
  std::uint64_t kept = 0;
  std::uint64_t waiting = 0;
  std::uint64_t total() const { return on_wire + kept + waiting; }
};

struct GoBack {
  std::uint32_t link;  // into links_
  std::uint64_t from;  // resend every message from this sequence number on
};

class DefaultHook final : public LinkHook {};

class Simulation {
 public:
  Simulation(const Schedule& schedule, const Topology& topology, const SimulationOptions& options);
  SimulatedRun run();

 private:
  // Set up before the run (sim_setup.cc).
  bool place_participants();
  bool set_up_participants();
  bool set_up_streams(int p);
  void add_streams(int p, const std::map<int, std::size_t>& per_stream, std::map<int, std::vector<int>>& listed);
  bool check_messages_match();
  // The step runner (simulator.cc).
  void settle_link(int p, Stream& stream);
  bool runs_on_to(double time);
  void prefetch_ahead(std::size_t handled);
  enum class LinkLines { Sending, Receiving, Route };
  void prefetch_link(std::uint32_t link, LinkLines lines) const;
  void prefetch_send_links(std::size_t q, LinkLines lines) const;
  void push(double time, EventKind kind, int p, int step, std::size_t message);
  std::uint64_t tie_of(std::uint64_t sequence) const;
  Event timer_event(double time, int p, int step, int call, std::uint64_t sequence) const;
  void record(const Event& event);
  void handle(const Event& event);
  bool call_finished(std::size_t q) const { return participants_[q].finished_steps == participants_[q].step_count; }
  std::vector<std::byte> final_output(int rank);
  void next_call(int p);
  void finish_step(int p, Stream& stream);
  void advance(int p);
  bool ready(int p, const Stream& stream);
  bool waits_done(int p, const Stream& stream) const;
  double start(int p, const Stream& stream);
  void fail(int p, int k, const std::string& what);
  void finish(double deadline);
  void begin_events();
  // Every 16,384 events (the clock read no more often): progress, where asked.
  void every_so_often() {
    if ((result_.events & 0x3FFF) == 0) [[unlikely]]
      report_progress(kAllReady);
  }
  static constexpr std::size_t kAllReady = ~std::size_t{0};
  void report_progress(std::size_t ready);

  // Guarded memory (sim_memory.cc).
  void allocate(GuardedBuffer& buffer, std::size_t count, GuardedBuffer::Start start = GuardedBuffer::Start::Zeroed);
  std::byte* at(int p, BufferKind buffer, std::size_t offset);
  void reduce(const std::byte* a, const std::byte* b, std::byte* out, std::size_t count);

  // The fabric's timing (sim_fabric.cc).
  void set_up_route(StreamLink& link);
  double transmit(StreamLink& link, std::size_t bytes);
  double latency(int from, int to) const;
  double travel_time(int from, int to, std::size_t bytes) const;  // latency plus bytes on the route, idle
  double compute_time(std::size_t elements) const;
  void collect_link_loads();

  // The link protocol on virtual time (sim_link.cc).
  void set_up_protocol();
  std::uint32_t link_of(const StreamKey& key);
  // Whether anything may change a payload on its way: only a hook can. Without one every message
  // arrives as sent, so none is checksummed (it carries empty_sum_) and none is checked.
  bool payloads_may_change() const { return options_.hook != nullptr; }
  std::uint32_t link_of(int p, const Step& step) const;
  std::string stream_name(const StreamLink& link, std::uint64_t sequence) const;
  void arrive(std::size_t index);
  void ask_again(std::uint32_t link);
  void expire(int p, int k, std::size_t call, std::size_t slot);
  double wait_interval(const Stream& stream, std::uint64_t draw) const;
  std::uint64_t next_draw();
  double message_travel(const Stream& stream) const;
  bool waits_for_message(int p, const Stream& stream) const;
  void arm_timers(int p);
  void heap_armed_timers(const Event* first);
  void join_oldest();
  void detect(const StreamKey& key, std::string what);
  void send(int p, const Stream& stream);
  void transmit_message(std::uint32_t link, std::uint64_t sequence, int attempt, std::size_t bytes, std::uint64_t sum,
                        std::vector<std::byte> payload);
  void release(const GoBack& held);
  void deliver_at(double time, InFlight flight);
  void resend(const GoBack& request);
  void receive(int p, const Stream& stream);
  void forget_taken(StreamLink& link);
  std::size_t add_go_back(GoBack request);
  void hold(std::uint64_t& where, std::uint64_t bytes);
  void out_of_memory();

  const Schedule& schedule_;
  const Topology& topology_;
  const SimulationOptions& options_;
  DefaultHook default_hook_;
  LinkHook& hook_;
  const std::size_t element_;
  SimulatedRun result_;
  double now_ = 0;
  double last_step_ = 0;
  // Progress (SimulationOptions::progress): the schedule's messages of every call, when the
  // events began, and when it was last reported.
  std::uint64_t planned_messages_ = 0;
  std::chrono::steady_clock::time_point events_began_, last_report_;
  std::uint64_t next_sequence_ = 0;
  EventQueue events_;
  TimerHeap<StreamTimerSlots> timers_;  // a slot per stream of every participant: its receive's wait timer
  // Timers armed, in the order armed, not yet in timers_: a ring of kArmedPerStream per stream
  // (rounded up to a power of two), the oldest from arming_first_.
  std::vector<ArmedTimer> arming_;
  // Per stream (its slot): receives started so far; a timer armed before one is over. Here, not in
  // the stream's record: joining a timer (join_oldest) reads it, long after the stream was read,
  // and 4 bytes a stream stay in the caches where a stream's line does not.
  std::vector<std::uint32_t> timer_generations_;
  std::size_t arming_first_ = 0;
  std::size_t arming_count_ = 0;
  double least_wait_ = 0;  // the shortest wait any timer is armed for
  std::vector<int> vertex_;
  // Per topology link, together so that booking a hop touches one cache line: when it is free
  // next, its load so far (seconds busy, bytes carried) and its bandwidth.
  struct LinkState {
    double free = 0;
    double busy = 0;
    std::uint64_t bytes = 0;
    double bandwidth = 0;  // the topology link's, here so that a booking reads nothing else
  };
  std::vector<LinkState> link_state_;
  std::vector<GuardedBuffer> input_, output_, scratch_;
  // Per participant, in one record, what its turn reads (at thousands of ranks each separate
  // array was a cache miss of its own): where its streams and its peer links lie in the flat lists
  // below, its steps in one call and those done in this one, the call it is running (0-based), and
  // whether any of its steps waits for others (done_).
  struct ParticipantState {
    std::uint32_t first_slot = 0;  // its streams: streams_[first_slot, end_slot), their timer slots too
    std::uint32_t end_slot = 0;
    std::uint32_t first_peer_link = 0;  // its peer links: peer_links_[first_peer_link, end_peer_link) or near_peers
    std::uint32_t end_peer_link = 0;
    std::size_t step_count = 0;
    std::size_t finished_steps = 0;
    int call = 0;
    bool waits = false;
    // A participant with at most two peer links (a ring's) keeps them here, in the line its turn
    // reads anyway, and none in peer_links_.
    std::uint8_t near_peer_count = 0;
    PeerLink near_peers[2];
  };
  static_assert(sizeof(ParticipantState) == kParticipantBytes);
  std::vector<ParticipantState> participants_;
  std::span<Stream> streams_of(std::size_t q) {
    return {streams_.data() + participants_[q].first_slot, streams_.data() + participants_[q].end_slot};
  }
  std::span<const PeerLink> peer_links_of(std::size_t q) const {
    const ParticipantState& state = participants_[q];
    if (state.near_peer_count > 0) return {state.near_peers, state.near_peer_count};
    return {peer_links_.data() + state.first_peer_link, peer_links_.data() + state.end_peer_link};
  }
  std::vector<Stream> streams_;  // every participant's in turn; a stream's place is its timer slot
  // Per participant whose steps wait for others (Participant::waits), per step: done this call;
  // empty for every other participant (a stream's step is done once the stream is past it).
  std::vector<std::vector<bool>> done_;
  std::vector<std::vector<PeerLink>> peer_links_found_;  // per participant, while setting up
  std::vector<PeerLink> peer_links_;                     // every participant's in turn, each's sorted
  std::vector<InFlight> in_flight_;
  std::vector<std::uint32_t> free_in_flight_;  // records of in_flight_ that have arrived, to reuse
  LinkSettings protocol_;
  RetransmitJitter timer_jitter_;
  std::vector<StreamLink> links_;
  std::unordered_map<StreamKey, std::uint32_t, StreamKeyHash> link_index_;  // while setting up
  HeldMessages held_;
  // What a kept and a waiting message cost besides their payload's bytes (none timing only).
  std::uint64_t kept_cost_ = 0;
  std::uint64_t waiting_cost_ = 0;
  std::uint64_t empty_sum_ = checksum({});  // what every message of a timing-only run carries
  std::vector<GoBack> go_back_;
  std::vector<std::uint32_t> free_go_back_;
};

}  // namespace collcheck::sim
