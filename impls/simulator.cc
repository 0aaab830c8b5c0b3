// The discrete-event core of `sim`: a priority queue of timed events whose ties are broken by
// the seed, participants that start a stream's next step when it is ready, and links that
// serve messages in turn.
#include "impls/simulator.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <deque>
#include <map>
#include <queue>
#include <tuple>

#include "impls/reduce_op.h"
#include "reference/inputs.h"
#include "reference/random.h"

namespace collcheck {
namespace {

enum class EventKind : std::uint8_t { Wake, StepDone, Arrival };

struct Event {
  double time;
  std::uint64_t tie;       // from the seed: orders events at the same time
  std::uint64_t sequence;  // unique, for a total order
  EventKind kind;
  int participant;
  int step;
  std::size_t message;     // Arrival: index into the in-flight payloads

  bool operator>(const Event& other) const {
    return std::tie(time, tie, sequence) > std::tie(other.time, other.tie, other.sequence);
  }
};

struct Stream {
  std::vector<int> steps;
  std::size_t next = 0;
  bool busy = false;
};

struct InFlight {
  std::tuple<int, int, int> key;  // from, to, channel
  std::uint64_t sequence;
  std::vector<std::byte> payload;
};

class DefaultHook final : public LinkHook {};

class Simulation {
 public:
  Simulation(const Schedule& s, const Topology& t, const SimulationOptions& options)
      : s_(s), t_(t), options_(options), hook_(options.hook ? *options.hook : default_hook_),
        element_(size_of(s.shape.dtype)) {}

  SimulatedRun run() {
    if (!place_participants()) return std::move(result_);
    set_up_participants();
    for (int p = 0; p < s_.nparticipants(); ++p) push(0, EventKind::Wake, p, -1, 0);
    const double deadline = hook_.deadline();
    while (!events_.empty()) {
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
    }
    advance(event.participant);
  }

  void arrive(std::size_t index) {
    InFlight& message = in_flight_[index];
    auto& [waiting, expected] = arrived_[message.key];
    held_[message.key][message.sequence] = std::move(message.payload);
    // Deliver in sequence order, holding back any message that overtook an earlier one.
    auto& held = held_[message.key];
    while (!held.empty() && held.begin()->first == expected) {
      waiting.push_back(std::move(held.begin()->second));
      held.erase(held.begin());
      ++expected;
    }
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
  }

  bool ready(int p, int k) {
    const auto q = static_cast<std::size_t>(p);
    const Step& step = s_.participants[q].steps[static_cast<std::size_t>(k)];
    for (int earlier : step.after) {
      if (!done_[q][static_cast<std::size_t>(earlier)]) return false;
    }
    if (!step.receives()) return true;
    auto found = arrived_.find({step.peer, p, step.channel});
    return found != arrived_.end() && !found->second.first.empty();
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

  void send(int p, const Step& step) {
    const std::tuple<int, int, int> key{p, step.peer, step.channel};
    Message message{p, step.peer, step.channel, sent_[key]++, step.from.count * element_, now_};
    std::vector<std::byte> payload;
    if (options_.numeric && step.from.count > 0) {
      const std::byte* from = at(p, step.from.buffer, step.from.offset);
      payload.assign(from, from + message.bytes);
    }
    const SendDecision decision = hook_.on_send(message, payload);
    ++result_.messages;
    if (decision.drop) return;
    const double arrival = transmit(vertex_[static_cast<std::size_t>(p)], vertex_[static_cast<std::size_t>(step.peer)],
                                    message.bytes) + decision.delay;
    in_flight_.push_back(InFlight{key, message.sequence, std::move(payload)});
    push(arrival, EventKind::Arrival, step.peer, -1, in_flight_.size() - 1);
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
    auto& waiting = arrived_[{step.peer, p, step.channel}].first;
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
    result_.time = now_;
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
  std::uint64_t next_sequence_ = 0;
  std::priority_queue<Event, std::vector<Event>, std::greater<Event>> events_;
  std::vector<int> vertex_;
  std::vector<double> link_free_;
  std::vector<std::vector<std::byte>> input_, output_, scratch_;
  std::vector<std::vector<Stream>> streams_;
  std::vector<std::size_t> finished_steps_;
  std::vector<int> call_;  // per participant: the call it is running (0-based)
  std::vector<std::vector<bool>> done_;
  std::map<std::tuple<int, int, int>, std::uint64_t> sent_;
  std::vector<InFlight> in_flight_;
  std::map<std::tuple<int, int, int>, std::pair<std::deque<std::vector<std::byte>>, std::uint64_t>> arrived_;
  std::map<std::tuple<int, int, int>, std::map<std::uint64_t, std::vector<std::byte>>> held_;
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
