// The `sim` executor's event loop and step runner (simulation.h says how the engine works): each
// stream's next step started when it is ready, calls run back to back, and the run's outcome
// collected (sim_setup.cc sets the participants up before).
#include "impls/sim/simulator.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <span>

#include "impls/link/reduce_op.h"
#include "impls/sim/simulation.h"
#include "reference/inputs.h"
#include "reference/numbers.h"
#include "reference/random.h"

namespace collcheck {
namespace sim {
Simulation::Simulation(const Schedule& schedule, const Topology& topology, const SimulationOptions& options)
    : schedule_(schedule), topology_(topology), options_(options), hook_(options.hook ? *options.hook : default_hook_),
      element_(size_of(schedule.shape.dtype)), timer_jitter_(options.seed) {}

SimulatedRun Simulation::run() {
  last_report_ = std::chrono::steady_clock::now();
  if (!place_participants() || !set_up_participants() || !check_messages_match()) return std::move(result_);
  set_up_protocol();
  begin_events();
  const double deadline = hook_.deadline();
  while (!result_.detected && result_.error.empty()) {
    const Event* first = events_.empty() ? nullptr : &events_.top();
    heap_armed_timers(first);
    const auto due = timers_.first();
    if (first == nullptr && due.event == nullptr) break;
    const bool timer = due.event != nullptr && (first == nullptr || due.event->before(*first));
    const Event event = timer ? *due.event : *first;
    const std::size_t slot = timer ? due.slot : 0;
    if (event.time > deadline || !runs_on_to(event.time)) break;
    // The events ahead are asked for before the pop, while the queue still knows where its
    // earliest one lies (after a pop it must find that out again); `event` is then the first of them.
    if (timer) {
      timers_.cancel(slot);
      prefetch_ahead(0);
    } else {
      prefetch_ahead(1);
      events_.pop();
    }
    now_ = event.time;
    record(event);
    every_so_often();
    if (timer) {
      expire(event.participant, event.step, event.message, slot);
      advance(event.participant);
    } else {
      handle(event);
    }
  }
  finish(deadline);
  collect_link_loads();
  return std::move(result_);
}

// Every participant wakes at time 0; the schedule's messages of every call are counted (the set-up
// pass counted each stream link's per call) and the clock of the progress reports starts.
void Simulation::begin_events() {
  for (const StreamLink& link : links_) planned_messages_ += link.outbox.per_call;
  planned_messages_ *= static_cast<std::uint64_t>(std::max(options_.calls, 1));
  events_began_ = std::chrono::steady_clock::now();
  for (int p = 0; p < schedule_.nparticipants(); ++p) push(0, EventKind::Wake, p, -1, 0);
}

// Tells the caller how far the run has come, where asked and progress_every has passed since it
// last did (or since the run began): every 256 participants set up (`ready` of them), then every
// 16,384 events (`ready` kAllReady).
void Simulation::report_progress(std::size_t ready) {
  if (!options_.progress) return;
  const auto now = std::chrono::steady_clock::now();
  if (std::chrono::duration<double>(now - last_report_).count() < options_.progress_every) return;
  last_report_ = now;
  SimulationProgress progress;
  progress.participants = participants_.size();
  progress.setting_up = ready != kAllReady;
  progress.ready = progress.setting_up ? ready : progress.participants;
  if (!progress.setting_up) {
    progress.events = result_.events;
    progress.sent = result_.messages - result_.retransmissions;
    progress.planned = planned_messages_;
    progress.retransmissions = result_.retransmissions;
    progress.virtual_time = now_;
    progress.wall_seconds = std::chrono::duration<double>(now - events_began_).count();
  }
  options_.progress(progress);
}

// Virtual time never runs back: a timer that joined its heap too late (heap_armed_timers) would
// come after events later than it, and the run would be another run. It ends, saying so.
bool Simulation::runs_on_to(double time) {
  if (time >= now_) [[likely]]
    return true;
  result_.error = "the simulator's engine went back in time, from " + std::to_string(now_) + " s to " +
                  std::to_string(time) + " s (a bug of the engine's, not of the schedule)";
  return false;
}

// Events come in an order drawn from the seed (or, once faults have spread a ring's ranks apart
// in time, in an order of their own), so at thousands of ranks each one's records are far from
// the last one's and miss the cache. The queue knows the events next in line: their records are
// asked for a few events ahead, each from what an earlier ask brought: the participant's streams
// and peer links twelve events ahead; then its first stream's record whole (a visit reads all of
// it), the peer links and the lines of an arrival's stream link that its receiver reads; then each
// stream's current step and the one after it, whole (a receive leads straight to the send after it),
// and the lines of the stream links the participant sends on that a send reads (asking for every
// line of those records was slower: the asks crowd out each other); then the fabric's links on
// their routes. The send links only where a participant has a few (kFewPeerLinks; a ring's two): an
// all-to-all's rank has thousands.
// `handled`: the queue's first events that are being handled now (the one about to be popped).
void Simulation::prefetch_ahead(std::size_t handled) {
  std::span<const Event> ahead = events_.ahead();
  ahead = ahead.subspan(std::min(handled, ahead.size()));
  if (ahead.size() > 12) {
    const Event& far = ahead[12];
    ask_for(&participants_[static_cast<std::size_t>(far.participant)]);
    if (far.kind == EventKind::Arrival) prefetch_whole(&in_flight_[far.message], sizeof(InFlight));
  }
  if (ahead.size() > 8) {
    const Event& near = ahead[8];
    const auto q = static_cast<std::size_t>(near.participant);
    prefetch_whole(streams_.data() + participants_[q].first_slot, sizeof(Stream));
    if (participants_[q].near_peer_count == 0) ask_for(peer_links_.data() + participants_[q].first_peer_link);
    if (near.kind == EventKind::Arrival) prefetch_link(in_flight_[near.message].link, LinkLines::Receiving);
  }
  if (ahead.size() > 4) {
    const auto q = static_cast<std::size_t>(ahead[4].participant);
    // The two steps after the current one (a ring's arrival ends a receive, sends, and waits on
    // the next receive): made on demand, the next in its batch; stored, the next of the
    // participant's.
    for (const Stream& stream : streams_of(q)) {
      if (stream.steps.finished()) continue;
      prefetch_whole(&stream.steps.step(), 3 * sizeof(Step));
      const std::span<const Step> batch = stream.steps.batch_to_come();
      if (!batch.empty()) {
        prefetch_whole(batch.data(), batch.size_bytes());
        prefetch_whole(stream.steps.frame(), 256);
      }
    }
    prefetch_send_links(q, LinkLines::Sending);
  }
  if (ahead.size() > 2) prefetch_send_links(static_cast<std::size_t>(ahead[2].participant), LinkLines::Route);
}

// The lines of the stream link's record that a send reads (up to the messages it keeps, but for
// those beyond the first few), or those an arrival reads (from what the sender keeps to the sizes
// the inbox keeps, likewise), or (`route`) the fabric's links on its route.
void Simulation::prefetch_link(std::uint32_t link, LinkLines lines) const {
  const StreamLink& record = links_[link];
  if (lines == LinkLines::Route) {
    for (int hop : record.hops()) ask_for(&link_state_[static_cast<std::size_t>(hop)]);
    return;
  }
  const bool sending = lines == LinkLines::Sending;
  const char* first =
      sending ? reinterpret_cast<const char*>(&record.key) : reinterpret_cast<const char*>(&record.outbox.kept_from);
  const char* end = sending ? reinterpret_cast<const char*>(&record.outbox.kept.far)
                            : reinterpret_cast<const char*>(&record.inbox.waiting_bytes.far);
  prefetch_whole(first, static_cast<std::size_t>(end - first));
}

void Simulation::prefetch_send_links(std::size_t q, LinkLines lines) const {
  const std::span<const PeerLink> peers = peer_links_of(q);
  if (peers.size() > kFewPeerLinks) return;
  for (const PeerLink& peer : peers) {
    if (peer.sends()) prefetch_link(peer.link(), lines);
  }
}

// The stream's current step's link, looked up once when the stream comes to the step.
void Simulation::settle_link(int p, Stream& stream) {
  stream.link = kNoLink;
  if (stream.steps.finished()) return;
  const Step& step = stream.steps.step();
  if (step.sends() || step.receives()) stream.link = link_of(p, step);
}

// An event's tie, from its number (events are numbered in turn, timers as they are armed).
std::uint64_t Simulation::tie_of(std::uint64_t sequence) const { return mix64(options_.seed ^ mix64(sequence)); }

void Simulation::push(double time, EventKind kind, int p, int step, std::size_t message) {
  events_.push(Event{time, tie_of(next_sequence_++), p, step, static_cast<std::uint32_t>(message), kind});
}

// A wait timer's event, its number `sequence` taken when it was armed.
Event Simulation::timer_event(double time, int p, int step, int call, std::uint64_t sequence) const {
  return Event{time, tie_of(sequence), p, step, static_cast<std::uint32_t>(call), EventKind::Timeout};
}

void Simulation::record(const Event& event) {
  ++result_.events;
  const std::uint64_t fields = (static_cast<std::uint64_t>(event.kind) << 56) ^
                               (static_cast<std::uint64_t>(event.participant) << 32) ^
                               static_cast<std::uint32_t>(event.step);
  result_.trace = mix64(result_.trace ^ mix64(std::bit_cast<std::uint64_t>(event.time) ^ mix64(fields)));
}

void Simulation::handle(const Event& event) {
  const auto q = static_cast<std::size_t>(event.participant);
  switch (event.kind) {
    case EventKind::Wake: break;
    case EventKind::StepDone: {
      for (Stream& stream : streams_of(q)) {
        if (stream.busy && stream.steps.index() == event.step) finish_step(event.participant, stream);
      }
      break;
    }
    case EventKind::Arrival: arrive(event.message); break;
    // By value: resending may add to go_back_ (a reorder's release), moving its elements.
    case EventKind::GoBack: {
      const GoBack request = go_back_[event.message];
      free_go_back_.push_back(event.message);
      resend(request);
      return;
    }
    case EventKind::Release: {
      const GoBack held = go_back_[event.message];
      free_go_back_.push_back(event.message);
      release(held);
      return;
    }
    case EventKind::Timeout: break;  // timers come from timers_
  }
  advance(event.participant);
}

// The rank's output of the call that just ended, finished as the collective requires (avg).
std::vector<std::byte> Simulation::final_output(int rank) {
  const std::size_t count = schedule_.buffer_size(rank, BufferKind::Output);
  if (count == 0) return {};
  std::byte* output = at(rank, BufferKind::Output, 0);
  if (schedule_.shape.op == RedOp::Avg && reduces(schedule_.shape.collective)) {
    auto finish = options_.reduction.finish_average ? options_.reduction.finish_average : &finish_average;
    finish(schedule_.shape.dtype, output, count, schedule_.nranks());
  }
  return {output, output + count * element_};
}

// Ends participant p's current call and starts its next one at once: keep the rank's
// output, write the next call's inputs, and run the script again from the top.
void Simulation::next_call(int p) {
  const auto q = static_cast<std::size_t>(p);
  const int call = participants_[q].call++;
  if (options_.numeric && p < schedule_.nranks()) {
    result_.earlier_outputs[static_cast<std::size_t>(call)][q] = final_output(p);
    Case next = schedule_.shape;
    next.seed = schedule_.shape.seed + static_cast<std::uint64_t>(call + 1) * options_.call_seed_step;
    const std::size_t count = schedule_.buffer_size(p, BufferKind::Input);
    if (count > 0) InputGenerator(next).fill(p, 0, {at(p, BufferKind::Input, 0), count * element_});
  }
  participants_[q].finished_steps = 0;
  if (participants_[q].waits) done_[q].assign(done_[q].size(), false);
  for (Stream& stream : streams_of(q)) {
    stream.steps.restart();
    stream.busy = false;
    settle_link(p, stream);
  }
}

// The stream's current step is done now: the stream moves on to its next one.
void Simulation::finish_step(int p, Stream& stream) {
  const auto q = static_cast<std::size_t>(p);
  last_step_ = now_;
  ParticipantState& state = participants_[q];
  if (state.waits) done_[q][static_cast<std::size_t>(stream.steps.index())] = true;
  ++state.finished_steps;
  stream.busy = false;
  stream.steps.next();
  settle_link(p, stream);
}

// Starts every step of p that can start; one that takes no time (a send: the fabric carries it
// on) is done at once, with no event of its own, and what it lets start starts too.
void Simulation::advance(int p) {
  const auto q = static_cast<std::size_t>(p);
  for (bool moved = true; moved;) {
    moved = false;
    const ParticipantState& state = participants_[q];
    while (call_finished(q) && state.call + 1 < options_.calls && state.step_count > 0) next_call(p);
    if (state.step_count == 0) {
      while (state.call + 1 < options_.calls) next_call(p);
    }
    for (std::size_t slot = state.first_slot; slot < state.end_slot; ++slot) {
      Stream& stream = streams_[slot];
      while (!stream.busy && !stream.steps.finished() && ready(p, stream)) {
        stream.busy = true;
        // A receive that starts has its message: its wait timer is over.
        timers_.cancel(slot);
        stream.timer_armed = kNoTimer;
        ++timer_generations_[slot];
        const double took = start(p, stream);
        if (took > 0) {
          push(now_ + took, EventKind::StepDone, p, stream.steps.index(), 0);
          break;
        }
        finish_step(p, stream);
        moved = true;
      }
    }
    // One stream that has stopped moving stays stopped: nothing else of p can start it again,
    // unless its call is over and another one starts.
    if (state.end_slot - state.first_slot == 1 && !(call_finished(q) && state.call + 1 < options_.calls)) break;
  }
  arm_timers(p);
}

bool Simulation::ready(int p, const Stream& stream) {
  if (participants_[static_cast<std::size_t>(p)].waits && !waits_done(p, stream)) return false;
  if (!stream.steps.step().receives()) return true;
  return links_[stream.link].inbox.waiting_count > 0;
}

// Whether the steps the stream's current step waits for are done. Only participants with waits
// keep done_ (the schedule's Participant, a cache miss at thousands of ranks, is read only then).
bool Simulation::waits_done(int p, const Stream& stream) const {
  const auto q = static_cast<std::size_t>(p);
  if (!participants_[q].waits) return true;
  for (int earlier : schedule_.participants[q].after(stream.steps.index())) {
    if (!done_[q][static_cast<std::size_t>(earlier)]) return false;
  }
  return true;
}

// Starts the stream's current step now; returns how long it takes.
double Simulation::start(int p, const Stream& stream) {
  const Step& step = stream.steps.step();
  switch (step.kind) {
    case StepKind::Send: send(p, stream); return 0;  // buffered: the fabric carries it on
    case StepKind::Recv:
    case StepKind::RecvReduce: receive(p, stream); return compute_time(step.to.count);
    case StepKind::Copy:
      if (options_.numeric && step.to.count > 0) {
        std::memmove(at(p, step.to.buffer, step.to.offset), at(p, step.from.buffer, step.from.offset),
                     step.to.count * element_);
      }
      return compute_time(step.to.count);
    case StepKind::Reduce:
      if (options_.numeric && step.to.count > 0) {
        std::byte* to = at(p, step.to.buffer, step.to.offset);
        reduce(to, at(p, step.from.buffer, step.from.offset), to, step.to.count);
      }
      return compute_time(step.to.count);
  }
  return 0;
}

void Simulation::finish(double deadline) {
  if (result_.detected) {
    result_.time = result_.detected_at;
    return;
  }
  if (!result_.error.empty()) return;  // the schedule was wrong (fail)
  for (int p = 0; p < schedule_.nparticipants(); ++p) {
    const auto q = static_cast<std::size_t>(p);
    if (call_finished(q) && participants_[q].call + 1 >= options_.calls) continue;
    int first = static_cast<int>(participants_[q].step_count);
    for (const Stream& stream : streams_of(q)) {
      if (!stream.steps.finished()) first = std::min(first, stream.steps.index());
    }
    result_.error =
        describe(schedule_, p, first) + " was still waiting at the deadline (" + std::to_string(deadline) + " s)";
    result_.time = deadline;
    return;
  }
  result_.completed = true;
  result_.time = last_step_;  // not the protocol's timers, which may run on after the last step
  if (!options_.numeric) return;
  for (int rank = 0; rank < schedule_.nranks(); ++rank) {
    result_.outputs.push_back(final_output(rank));
    const std::size_t inputs = schedule_.buffer_size(rank, BufferKind::Input);
    const std::byte* input = inputs > 0 ? at(rank, BufferKind::Input, 0) : nullptr;
    result_.inputs.emplace_back(input, input + inputs * element_);
    const auto q = static_cast<std::size_t>(rank);
    result_.guards_intact.push_back(input_[q].intact() && output_[q].intact() && scratch_[q].intact());
  }
}

// The schedule run ends at p's step k, which the schedule got wrong.
void Simulation::fail(int p, int k, const std::string& what) {
  if (result_.error.empty()) result_.error = describe(schedule_, p, k) + ": " + what;
}

}  // namespace sim

std::string message_amount(std::uint64_t value) {
  return value < 10'000'000 ? std::to_string(value) : printf_text("%.1f", static_cast<double>(value) / 1e6) + " M";
}

std::string millions_per_second(std::uint64_t count, double seconds) {
  return printf_text("%.2f", seconds > 0 ? static_cast<double>(count) / seconds / 1e6 : 0) + " M";
}

std::string progress_text(const SimulationProgress& progress) {
  if (progress.setting_up) {
    return "setting up, the steps of " + std::to_string(progress.ready) + " of " +
           std::to_string(progress.participants) + " participants read and checked";
  }
  const double sent = static_cast<double>(progress.sent);
  const double share = progress.planned > 0 ? 100 * sent / static_cast<double>(progress.planned) : 0;
  std::string line = message_amount(progress.sent) + " of " + message_amount(progress.planned) + " messages sent (" +
                     printf_text("%.1f", share) + " %)";
  if (progress.retransmissions > 0) line += ", " + std::to_string(progress.retransmissions) + " sent again";
  line += ", virtual time " + printf_text("%.3f", progress.virtual_time * 1e3) + " ms, " +
          millions_per_second(progress.sent + progress.retransmissions, progress.wall_seconds) + " messages/s";
  if (progress.sent > 0 && progress.planned > progress.sent) {
    const double left = progress.wall_seconds * static_cast<double>(progress.planned - progress.sent) / sent;
    line += left < 1 ? ", under a second left" : ", about " + printf_text("%.0f", left) + " s left";
  }
  return line;
}

SimulatedRun simulate(const Schedule& schedule, const Topology& topology, const SimulationOptions& options) {
  // Made on demand: checked participant by participant as the engine reads it first.
  Status valid = schedule.on_demand() || options.validated ? Status(Ok{}) : validate(schedule, options.guard);
  if (!valid) {
    SimulatedRun run;
    run.error = valid.error().message;
    return run;
  }
  return sim::Simulation(schedule, topology, options).run();
}

}  // namespace collcheck
