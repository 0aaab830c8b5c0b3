// The discrete-event core of `sim`: a priority queue of timed events whose ties are broken by
// the seed, participants that start a stream's next step when it is ready, links that serve
// messages in turn, and the link protocol (checksums, sequence numbers, timeouts, go-back-N).
#include "impls/sim/simulator.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <deque>
#include <map>
#include <queue>
#include <tuple>

#include "impls/link/reduce_op.h"
#include "reference/inputs.h"
#include "reference/random.h"

namespace collcheck {
namespace {

enum class EventKind : std::uint8_t { Wake, StepDone, Arrival, GoBack, Timeout, Release };

struct Event {
  double time;
  std::uint64_t tie;       // from the seed: orders events at the same time
  std::uint64_t sequence;  // unique, for a total order
  EventKind kind;
  int participant;
  int step;
  std::size_t message;     // Arrival: into in_flight_; GoBack, Release: into go_back_; Timeout: the call

  bool operator>(const Event& other) const {
    return std::tie(time, tie, sequence) > std::tie(other.time, other.tie, other.sequence);
  }
};

struct Stream {
  std::vector<int> steps;
  std::size_t next = 0;
  bool busy = false;
};

using Key = std::tuple<int, int, int>;  // from, to, channel

struct InFlight {
  Key key;
  std::uint64_t sequence;
  int attempt;
  std::uint64_t sum;               // the checksum of what the sender meant to send
  std::vector<std::byte> payload;  // what the wire carries
};

// A receiver's end of a stream: messages taken in sequence, waiting for their receive step.
struct Inbox {
  std::deque<std::vector<std::byte>> waiting;
  std::uint64_t expected = 0;    // the next sequence number to take
  double last = 0;               // when anything last arrived
  bool asked = false;            // reliable: a go-back to `expected` is outstanding
};

// A sender's end: what it sent (kept while reliable, to send again), each message's attempts,
// and a message held back by a reorder fault until the next one has been sent.
struct Outbox {
  std::vector<std::vector<std::byte>> kept;
  std::vector<std::uint64_t> sums;
  std::vector<std::size_t> sizes;
  std::vector<int> attempts;     // transmissions so far, less one
  std::vector<int> asked;        // times the receiver asked for it again
  std::uint64_t per_call = 0;
  double last_arrival = 0;       // the link is FIFO: later messages do not overtake
  bool holding = false;
  InFlight held;
};

struct GoBack {
  Key key;
  std::uint64_t from;            // resend every message from this sequence number on
};

// A reordered message waits behind the stream's next message at most this long (virtual
// seconds): the next one may itself wait for the held one's effects downstream.
constexpr double kReorderWindow = 0.001;

class DefaultHook final : public LinkHook {};

class Simulation {
 public:
  Simulation(const Schedule& s, const Topology& t, const SimulationOptions& options)
      : s_(s), t_(t), options_(options), hook_(options.hook ? *options.hook : default_hook_),
        element_(size_of(s.shape.dtype)) {}

  SimulatedRun run() {
    if (!place_participants()) return std::move(result_);
    set_up_participants();
    set_up_protocol();
    for (int p = 0; p < s_.nparticipants(); ++p) push(0, EventKind::Wake, p, -1, 0);
    const double deadline = hook_.deadline();
    while (!events_.empty() && !result_.detected) {
      const Event event = events_.top();
      events_.pop();
      if (event.time > deadline) break;
      now_ = event.time;
      record(event);
      handle(event);
    }
    finish(deadline);
    return std::move(result_);
  }

 private:
  bool place_participants() {
    if (t_.nranks() < s_.nranks()) {
      result_.error = "topology " + t_.name + " has " + std::to_string(t_.nranks()) + " GPUs; the case needs " +
                      std::to_string(s_.nranks()) + " ranks";
      return false;
    }
    const std::vector<int> switches = t_.aggregating_switches();
    for (int p = 0; p < s_.nparticipants(); ++p) {
      if (p < s_.nranks()) {
        vertex_.push_back(t_.gpus[static_cast<std::size_t>(p)]);
        continue;
      }
      if (switches.empty()) {
        result_.error = "topology " + t_.name + " has no aggregating switch for " + s_.algorithm + "'s switch nodes";
        return false;
      }
      vertex_.push_back(switches[static_cast<std::size_t>(p - s_.nranks()) % switches.size()]);
    }
    link_free_.assign(t_.links.size(), 0.0);
    return true;
  }

  void set_up_participants() {
    const auto n = static_cast<std::size_t>(s_.nparticipants());
    input_.resize(n);
    output_.resize(n);
    scratch_.resize(n);
    streams_.resize(n);
    finished_steps_.assign(n, 0);
    call_.assign(n, 0);
    result_.earlier_outputs.assign(static_cast<std::size_t>(std::max(options_.calls, 1) - 1),
                                   std::vector<std::vector<std::byte>>(static_cast<std::size_t>(s_.nranks())));
    done_.resize(n);
    const InputGenerator inputs(s_.shape);
    for (int p = 0; p < s_.nparticipants(); ++p) {
      const auto q = static_cast<std::size_t>(p);
      const auto& steps = s_.participants[q].steps;
      done_[q].assign(steps.size(), false);
      std::map<int, std::vector<int>> by_stream;
      for (int k = 0; k < static_cast<int>(steps.size()); ++k) by_stream[steps[static_cast<std::size_t>(k)].stream].push_back(k);
      for (auto& entry : by_stream) streams_[q].push_back(Stream{std::move(entry.second), 0, false});
      if (!options_.numeric) continue;
      allocate(scratch_[q], s_.buffer_size(p, BufferKind::Scratch));
      if (s_.participants[q].is_switch) continue;
      allocate(output_[q], s_.buffer_size(p, BufferKind::Output));
      const bool input_stored = !s_.shape.in_place || in_place_alias(s_.shape, p).inside == BufferKind::Output;
      if (input_stored) allocate(input_[q], s_.buffer_size(p, BufferKind::Input));
      const std::size_t count = s_.buffer_size(p, BufferKind::Input);
      std::byte* input = at(p, BufferKind::Input, 0);
      if (options_.inputs == nullptr) {
        inputs.fill(p, 0, {input, count * element_});
      } else {
        const std::vector<std::byte>& given = options_.inputs->at(q);
        std::copy_n(given.begin(), std::min(given.size(), count * element_), input);
      }
    }
  }

  static constexpr std::byte kGuardPattern{0xa5};

  // A buffer of `count` elements between two guard zones.
  void allocate(std::vector<std::byte>& buffer, std::size_t count) {
    buffer.assign((count + 2 * options_.guard) * element_, std::byte{0});
    std::fill(buffer.begin(), buffer.begin() + static_cast<std::ptrdiff_t>(options_.guard * element_), kGuardPattern);
    std::fill(buffer.end() - static_cast<std::ptrdiff_t>(options_.guard * element_), buffer.end(), kGuardPattern);
  }

  bool guards_intact(const std::vector<std::byte>& buffer) const {
    if (buffer.empty()) return true;
    const std::size_t bytes = options_.guard * element_;
    auto is_pattern = [](std::byte b) { return b == kGuardPattern; };
    return std::all_of(buffer.begin(), buffer.begin() + static_cast<std::ptrdiff_t>(bytes), is_pattern) &&
           std::all_of(buffer.end() - static_cast<std::ptrdiff_t>(bytes), buffer.end(), is_pattern);
  }

  std::byte* base(std::vector<std::byte>& buffer) { return buffer.data() + options_.guard * element_; }

  // The memory behind element `offset` of a buffer of p, after in-place aliasing.
  std::byte* at(int p, BufferKind buffer, std::size_t offset) {
    const auto q = static_cast<std::size_t>(p);
    if (buffer == BufferKind::Scratch) return base(scratch_[q]) + offset * element_;
    if (s_.shape.in_place && !s_.participants[q].is_switch) {
      const Alias alias = in_place_alias(s_.shape, p);
      if (alias.inside == BufferKind::Input && buffer == BufferKind::Input) {
        return base(output_[q]) + (alias.offset + offset) * element_;
      }
      if (alias.inside == BufferKind::Output && buffer == BufferKind::Output) {
        return base(input_[q]) + (alias.offset + offset) * element_;
      }
    }
    return base(buffer == BufferKind::Input ? input_[q] : output_[q]) + offset * element_;
  }

  void reduce(const std::byte* a, const std::byte* b, std::byte* out, std::size_t count) {
    auto apply = options_.reduction.reduce ? options_.reduction.reduce : &reduce_elements_fast;
    apply(s_.shape.dtype, s_.shape.op, a, b, out, count);
  }

  void push(double time, EventKind kind, int p, int step, std::size_t message) {
    const std::uint64_t sequence = next_sequence_++;
    events_.push(Event{time, mix64(options_.seed ^ mix64(sequence)), sequence, kind, p, step, message});
  }

  void record(const Event& event) {
    ++result_.events;
    const std::uint64_t fields = (static_cast<std::uint64_t>(event.kind) << 56) ^
                                 (static_cast<std::uint64_t>(event.participant) << 32) ^
                                 static_cast<std::uint32_t>(event.step);
    result_.trace = mix64(result_.trace ^ mix64(std::bit_cast<std::uint64_t>(event.time) ^ mix64(fields)));
  }

  void handle(const Event& event) {
    const auto q = static_cast<std::size_t>(event.participant);
    switch (event.kind) {
      case EventKind::Wake: break;
      case EventKind::StepDone: {
        last_step_ = now_;
        done_[q][static_cast<std::size_t>(event.step)] = true;
        ++finished_steps_[q];
        for (Stream& stream : streams_[q]) {
          if (stream.busy && stream.steps[stream.next] == event.step) {
            stream.busy = false;
            ++stream.next;
          }
        }
        break;
      }
      case EventKind::Arrival: arrive(event.message); break;
      // By value: resending may add to go_back_ (a reorder's release), moving its elements.
      case EventKind::GoBack: resend(GoBack(go_back_[event.message])); return;
      case EventKind::Release: release(GoBack(go_back_[event.message])); return;
      case EventKind::Timeout: expire(event.participant, event.step, event.message); break;
    }
    advance(event.participant);
  }

  // ----- The link protocol (hook.h): the receiver's side -----

  void set_up_protocol() {
    protocol_ = options_.protocol;
    if (protocol_.timeout == 0) protocol_.timeout = std::min(0.5, hook_.deadline() / 2);
    // Retransmission timers are jittered by up to a quarter (so that they cannot keep landing in
    // the down half of a flapping link), and all of them together stay within the timeout.
    if (protocol_.retransmit <= 0) protocol_.retransmit = protocol_.timeout / (protocol_.retries + 3);
    for (int p = 0; p < s_.nparticipants(); ++p) {
      for (const Step& step : s_.participants[static_cast<std::size_t>(p)].steps) {
        if (step.sends()) ++outbox_[{p, step.peer, step.channel}].per_call;
      }
    }
    timer_.assign(static_cast<std::size_t>(s_.nparticipants()), {});
  }

  std::string stream_name(const Key& key) const {
    const auto [from, to, channel] = key;
    return participant_name(to) + ": message from " + participant_name(from) + " on channel " + std::to_string(channel);
  }

  std::string participant_name(int p) const {
    return p < s_.nranks() ? "rank " + std::to_string(p) : "switch " + std::to_string(p - s_.nranks());
  }

  // Takes an arrival in sequence; a duplicate is dropped; a damaged or out-of-order one ends the
  // run, or, when reliable, makes the receiver ask the sender to go back.
  void arrive(std::size_t index) {
    InFlight& message = in_flight_[index];
    Inbox& inbox = inbox_[message.key];
    inbox.last = now_;
    if (message.sequence < inbox.expected) {
      ++result_.discarded;
      return;
    }
    const bool intact = !protocol_.checksums || checksum(message.payload) == message.sum;
    if (message.sequence == inbox.expected && intact) {
      inbox.waiting.push_back(std::move(message.payload));
      ++inbox.expected;
      inbox.asked = false;
      return;
    }
    ++result_.discarded;
    const std::string what = intact ? "message " + std::to_string(message.sequence) + " arrived where message " +
                                          std::to_string(inbox.expected) + " was due (one is missing)"
                                    : "message " + std::to_string(message.sequence) + " (attempt " +
                                          std::to_string(message.attempt) + ") failed its checksum";
    if (!protocol_.reliable) return detect(message.key, stream_name(message.key) + ": " + what);
    if (!inbox.asked) ask_again(message.key);
  }

  // Reliable: the receiver asks the sender to send everything again from the message it expects.
  void ask_again(const Key& key) {
    Inbox& inbox = inbox_[key];
    inbox.asked = true;
    const auto [from, to, channel] = key;
    go_back_.push_back(GoBack{key, inbox.expected});
    push(now_ + latency(to, from), EventKind::GoBack, from, -1, go_back_.size() - 1);
  }

  // A wait timer of participant p's receive step k (armed in `advance`) ran out: if the stream
  // has been quiet for a whole interval, the run ends (or, when reliable, the receiver asks
  // again); otherwise the timer runs on from the last arrival.
  void expire(int p, int k, std::size_t call) {
    const auto q = static_cast<std::size_t>(p);
    auto& timer = timer_[q];
    const auto found = timer.find(k);
    if (found == timer.end()) return;
    if (static_cast<std::size_t>(call_[q]) != call || done_[q][static_cast<std::size_t>(k)]) {
      timer.erase(found);
      return;
    }
    const Step& step = s_.participants[q].steps[static_cast<std::size_t>(k)];
    const Key key{step.peer, p, step.channel};
    if (!waits_for_message(p, k)) {
      timer.erase(found);
      return;
    }
    const double interval = wait_interval();
    const double quiet_since = std::max(found->second, inbox_[key].last);
    if (now_ < quiet_since + interval * (1 - 1e-9)) {
      push(quiet_since + interval, EventKind::Timeout, p, k, call);
      return;
    }
    if (!protocol_.reliable) {
      return detect(key, describe(s_, p, k) + ": no message for " + seconds(protocol_.timeout) + " s (timeout)");
    }
    found->second = now_;
    ask_again(key);
    push(now_ + interval, EventKind::Timeout, p, k, call);
  }

  // How long a waiting receiver stays quiet before it acts: the timeout, or when reliable the
  // retransmission interval, jittered between 0.75 and 1.25 of it (drawn from the seed).
  double wait_interval() {
    if (!protocol_.reliable) return protocol_.timeout;
    return protocol_.retransmit * (0.75 + 0.5 * unit_interval(mix64(options_.seed ^ mix64(++timers_armed_))));
  }

  // Whether receive step k of p could start but for its message.
  bool waits_for_message(int p, int k) const {
    const auto q = static_cast<std::size_t>(p);
    const Step& step = s_.participants[q].steps[static_cast<std::size_t>(k)];
    for (int earlier : step.after) {
      if (!done_[q][static_cast<std::size_t>(earlier)]) return false;
    }
    const auto found = inbox_.find({step.peer, p, step.channel});
    return found == inbox_.end() || found->second.waiting.empty();
  }

  // Arms a timer for every receive step of p that is waiting for its message.
  void arm_timers(int p) {
    if (protocol_.timeout < 0 || options_.protocol.timeout < 0) return;
    const auto q = static_cast<std::size_t>(p);
    for (const Stream& stream : streams_[q]) {
      if (stream.busy || stream.next == stream.steps.size()) continue;
      const int k = stream.steps[stream.next];
      const Step& step = s_.participants[q].steps[static_cast<std::size_t>(k)];
      if (!step.receives() || timer_[q].count(k) > 0 || !waits_for_message(p, k)) continue;
      timer_[q][k] = now_;
      push(now_ + wait_interval(), EventKind::Timeout, p, k, static_cast<std::size_t>(call_[q]));
    }
  }

  // The run ends: the participant that saw the fault tells every other one, which stop.
  void detect(const Key& key, std::string what) {
    if (result_.detected) return;
    const int seen_by = std::get<1>(key);
    double told = now_;
    for (int p = 0; p < s_.nparticipants(); ++p) told = std::max(told, now_ + latency(seen_by, p));
    result_.detected = true;
    result_.detected_at = told;
    result_.error = std::move(what) + "; every participant stopped by " + seconds(told) + " s";
  }

  double latency(int from, int to) const {
    const int a = vertex_[static_cast<std::size_t>(from)], b = vertex_[static_cast<std::size_t>(to)];
    return a == b ? 0 : transfer_time(t_, t_.route(a, b), 0);
  }

  static std::string seconds(double value) {
    char text[32];
    std::snprintf(text, sizeof text, "%.6g", value);
    return text;
  }

  bool call_finished(std::size_t q) const { return finished_steps_[q] == s_.participants[q].steps.size(); }

  // The rank's output of the call that just ended, finished as the collective requires (avg).
  std::vector<std::byte> final_output(int rank) {
    const std::size_t count = s_.buffer_size(rank, BufferKind::Output);
    if (count == 0) return {};
    std::byte* output = at(rank, BufferKind::Output, 0);
    if (s_.shape.op == RedOp::Avg && reduces(s_.shape.collective)) {
      auto finish = options_.reduction.finish_average ? options_.reduction.finish_average : &finish_average;
      finish(s_.shape.dtype, output, count, s_.nranks());
    }
    return {output, output + count * element_};
  }

  // Ends participant p's current call and starts its next one at once: keep the rank's
  // output, write the next call's inputs, and run the script again from the top.
  void next_call(int p) {
    const auto q = static_cast<std::size_t>(p);
    const int call = call_[q]++;
    if (options_.numeric && p < s_.nranks()) {
      result_.earlier_outputs[static_cast<std::size_t>(call)][q] = final_output(p);
      Case next = s_.shape;
      next.seed = s_.shape.seed + static_cast<std::uint64_t>(call + 1) * options_.call_seed_step;
      const std::size_t count = s_.buffer_size(p, BufferKind::Input);
      if (count > 0) InputGenerator(next).fill(p, 0, {at(p, BufferKind::Input, 0), count * element_});
    }
    finished_steps_[q] = 0;
    done_[q].assign(done_[q].size(), false);
    for (Stream& stream : streams_[q]) {
      stream.next = 0;
      stream.busy = false;
    }
  }

  void advance(int p) {
    const auto q = static_cast<std::size_t>(p);
    while (call_finished(q) && call_[q] + 1 < options_.calls && !s_.participants[q].steps.empty()) next_call(p);
    if (s_.participants[q].steps.empty()) {
      while (call_[q] + 1 < options_.calls) next_call(p);
    }
    for (Stream& stream : streams_[q]) {
      if (stream.busy || stream.next == stream.steps.size()) continue;
      const int k = stream.steps[stream.next];
      if (!ready(p, k)) continue;
      stream.busy = true;
      push(now_ + start(p, k), EventKind::StepDone, p, k, 0);
    }
    arm_timers(p);
  }

  bool ready(int p, int k) {
    const auto q = static_cast<std::size_t>(p);
    const Step& step = s_.participants[q].steps[static_cast<std::size_t>(k)];
    for (int earlier : step.after) {
      if (!done_[q][static_cast<std::size_t>(earlier)]) return false;
    }
    if (!step.receives()) return true;
    const auto found = inbox_.find({step.peer, p, step.channel});
    return found != inbox_.end() && !found->second.waiting.empty();
  }

  double compute_time(std::size_t elements) const {
    return t_.copy_bandwidth > 0 ? static_cast<double>(elements * element_) / t_.copy_bandwidth : 0;
  }

  // Starts step k of p now; returns how long it takes.
  double start(int p, int k) {
    const Step& step = s_.participants[static_cast<std::size_t>(p)].steps[static_cast<std::size_t>(k)];
    switch (step.kind) {
      case StepKind::Send: send(p, step); return 0;  // buffered: the fabric carries it on
      case StepKind::Recv:
      case StepKind::RecvReduce: receive(p, step); return compute_time(step.to.count);
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

  // ----- The link protocol: the sender's side -----

  void send(int p, const Step& step) {
    const Key key{p, step.peer, step.channel};
    Outbox& outbox = outbox_[key];
    const std::uint64_t sequence = sent_[key]++;
    std::vector<std::byte> payload;
    if (options_.numeric && step.from.count > 0) {
      const std::byte* from = at(p, step.from.buffer, step.from.offset);
      payload.assign(from, from + step.from.count * element_);
    }
    const std::size_t bytes = step.from.count * element_;
    const std::uint64_t sum = checksum(payload);
    if (protocol_.reliable) {
      outbox.kept.push_back(payload);
      outbox.sums.push_back(sum);
      outbox.sizes.push_back(bytes);
      outbox.attempts.push_back(0);
      outbox.asked.push_back(0);
    }
    transmit_message(key, sequence, 0, bytes, sum, std::move(payload));
  }

  // One transmission through the hook: dropped, delayed, duplicated, held back behind the next
  // message (reorder), or changed on the way (the checksum was taken before).
  void transmit_message(const Key& key, std::uint64_t sequence, int attempt, std::size_t bytes, std::uint64_t sum,
                        std::vector<std::byte> payload) {
    const auto [from, to, channel] = key;
    Outbox& outbox = outbox_[key];
    const Message message{from, to, channel, sequence, bytes, now_, attempt};
    const SendDecision decision = hook_.on_send(message, payload);
    ++result_.messages;
    InFlight flight{key, sequence, attempt, sum, std::move(payload)};
    const double wire = transmit(vertex_[static_cast<std::size_t>(from)], vertex_[static_cast<std::size_t>(to)], bytes);
    const bool last = sequence + 1 >= outbox.per_call * static_cast<std::uint64_t>(std::max(options_.calls, 1));
    double arrival = wire + decision.delay;
    if (!decision.drop && decision.reorder && !last && !outbox.holding) {
      outbox.holding = true;
      outbox.held = std::move(flight);
      go_back_.push_back(GoBack{key, sequence});
      push(now_ + kReorderWindow, EventKind::Release, from, -1, go_back_.size() - 1);
      return;
    }
    if (!decision.drop) {
      arrival = std::max(arrival, std::nextafter(outbox.last_arrival, arrival + 1));
      outbox.last_arrival = arrival;
      for (int copy = 0; copy < decision.duplicates; ++copy) {
        arrival = std::nextafter(arrival, arrival + 1);
        deliver_at(arrival, flight);
      }
      deliver_at(outbox.last_arrival, std::move(flight));
    }
    if (outbox.holding && !(outbox.held.sequence == sequence && outbox.held.attempt == attempt)) {
      outbox.holding = false;
      const double later = std::nextafter(std::max(arrival, outbox.last_arrival), arrival + 1);
      deliver_at(later, std::move(outbox.held));
    }
  }

  // A held message whose next one has not come within the reorder window goes on its own.
  void release(const GoBack& held) {
    Outbox& outbox = outbox_[held.key];
    if (!outbox.holding || outbox.held.sequence != held.from) return;
    outbox.holding = false;
    const double arrival = std::max(now_, std::nextafter(outbox.last_arrival, now_ + 1));
    outbox.last_arrival = arrival;
    deliver_at(arrival, std::move(outbox.held));
  }

  void deliver_at(double time, InFlight flight) {
    const int to = std::get<1>(flight.key);
    in_flight_.push_back(std::move(flight));
    push(time, EventKind::Arrival, to, -1, in_flight_.size() - 1);
  }

  // Reliable: the sender goes back to `from` and sends every later message again, each as one
  // more attempt. The message asked for `retries` times more without getting through ends the
  // run; the ones after it are only resent along (their own losses are counted when asked for).
  void resend(const GoBack& request) {
    Outbox& outbox = outbox_[request.key];
    const std::uint64_t sent = sent_[request.key];
    if (request.from < sent && ++outbox.asked[static_cast<std::size_t>(request.from)] > protocol_.retries) {
      return detect(request.key, stream_name(request.key) + ": message " + std::to_string(request.from) + " lost after " +
                                     std::to_string(protocol_.retries) + " retransmissions");
    }
    for (std::uint64_t sequence = request.from; sequence < sent && !result_.detected; ++sequence) {
      const auto index = static_cast<std::size_t>(sequence);
      ++outbox.attempts[index];
      ++result_.retransmissions;
      transmit_message(request.key, sequence, outbox.attempts[index], outbox.sizes[index], outbox.sums[index],
                       outbox.kept[index]);
    }
  }

  // Reserves the route's links from now and returns the arrival time.
  double transmit(int from, int to, std::size_t bytes) {
    if (from == to) return now_;
    const std::vector<int>& route = t_.route(from, to);
    double begin = now_;
    for (int link : route) begin = std::max(begin, link_free_[static_cast<std::size_t>(link)]);
    for (int link : route) {
      const Link& l = t_.links[static_cast<std::size_t>(link)];
      link_free_[static_cast<std::size_t>(link)] = begin + static_cast<double>(bytes) / l.bandwidth;
    }
    return begin + transfer_time(t_, route, bytes);
  }

  void receive(int p, const Step& step) {
    auto& waiting = inbox_[{step.peer, p, step.channel}].waiting;
    std::vector<std::byte> payload = std::move(waiting.front());
    waiting.pop_front();
    if (!options_.numeric || step.to.count == 0) return;
    std::byte* to = at(p, step.to.buffer, step.to.offset);
    if (step.kind == StepKind::Recv) {
      std::memcpy(to, payload.data(), payload.size());
      return;
    }
    reduce(at(p, step.from.buffer, step.from.offset), payload.data(), to, step.to.count);
  }

  void finish(double deadline) {
    if (result_.detected) {
      result_.time = result_.detected_at;
      return;
    }
    for (int p = 0; p < s_.nparticipants(); ++p) {
      const auto q = static_cast<std::size_t>(p);
      if (call_finished(q) && call_[q] + 1 >= options_.calls) continue;
      const auto first = std::find(done_[q].begin(), done_[q].end(), false);
      result_.error = describe(s_, p, static_cast<int>(first - done_[q].begin())) + " was still waiting at the deadline (" +
                      std::to_string(deadline) + " s)";
      result_.time = deadline;
      return;
    }
    result_.completed = true;
    result_.time = last_step_;  // not the protocol's timers, which may run on after the last step
    if (!options_.numeric) return;
    for (int rank = 0; rank < s_.nranks(); ++rank) {
      result_.outputs.push_back(final_output(rank));
      const std::size_t inputs = s_.buffer_size(rank, BufferKind::Input);
      const std::byte* input = inputs > 0 ? at(rank, BufferKind::Input, 0) : nullptr;
      result_.inputs.emplace_back(input, input + inputs * element_);
      const auto q = static_cast<std::size_t>(rank);
      result_.guards_intact.push_back(guards_intact(input_[q]) && guards_intact(output_[q]) &&
                                      guards_intact(scratch_[q]));
    }
  }

  const Schedule& s_;
  const Topology& t_;
  const SimulationOptions& options_;
  DefaultHook default_hook_;
  LinkHook& hook_;
  const std::size_t element_;
  SimulatedRun result_;
  double now_ = 0;
  double last_step_ = 0;
  std::uint64_t timers_armed_ = 0;
  std::uint64_t next_sequence_ = 0;
  std::priority_queue<Event, std::vector<Event>, std::greater<Event>> events_;
  std::vector<int> vertex_;
  std::vector<double> link_free_;
  std::vector<std::vector<std::byte>> input_, output_, scratch_;
  std::vector<std::vector<Stream>> streams_;
  std::vector<std::size_t> finished_steps_;
  std::vector<int> call_;  // per participant: the call it is running (0-based)
  std::vector<std::vector<bool>> done_;
  std::map<Key, std::uint64_t> sent_;
  std::vector<InFlight> in_flight_;
  LinkProtocol protocol_;
  std::map<Key, Inbox> inbox_;
  std::map<Key, Outbox> outbox_;
  std::vector<GoBack> go_back_;
  std::vector<std::map<int, double>> timer_;  // per participant: waiting receive step -> armed at
};

}  // namespace

SimulatedRun simulate(const Schedule& schedule, const Topology& topology, const SimulationOptions& options) {
  Status valid = validate(schedule, options.guard);
  if (!valid) {
    SimulatedRun run;
    run.error = valid.error().message;
    return run;
  }
  return Simulation(schedule, topology, options).run();
}

}  // namespace collcheck
