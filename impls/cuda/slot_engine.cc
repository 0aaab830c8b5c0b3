// The `cuda` transport's engine (slot_engine.h says how it works): participants on threads,
// receiver-side rings of slots with completion flags, the link protocol's judgement of every piece.
#include "impls/cuda/slot_engine.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <thread>
#include <tuple>

#include "impls/cuda/host_kernels.h"
#include "impls/cuda/slot_ring.h"
#include "impls/link/guarded_buffer.h"
#include "reference/inputs.h"

namespace collcheck::cuda {

RingShape ring_shape(std::size_t rings, std::size_t ring_bytes) {
  RingShape shape;
  if (rings == 0) return shape;
  const std::size_t room = ring_bytes / rings;
  while (shape.slots * shape.slot_bytes > room && shape.slots > 4) shape.slots /= 2;
  while (shape.slots * shape.slot_bytes > room && shape.slot_bytes > 1024) shape.slot_bytes /= 2;
  while (shape.slots * shape.slot_bytes > room && shape.slots > 2) shape.slots /= 2;
  return shape;
}

namespace {

double seconds_between(Clock::time_point from, Clock::time_point to) {
  return std::chrono::duration<double>(to - from).count();
}

struct StreamState {
  std::vector<int> steps;
  std::size_t next = 0;
  bool waiting = false;
  Clock::time_point quiet_since;  // when the step it waits on last heard anything
};

struct ParticipantState {
  int participant = 0;
  std::vector<StreamState> streams;
  std::vector<StepLink> links;  // per step
  std::vector<std::uint8_t> done;
  std::size_t remaining = 0;
  std::vector<int> outbound;  // the rings it sends on
  int call = 0;
  GuardedBuffer input, output, scratch;
};

enum class Progress { Done, Waiting, Failed };

// The rings found so far while the participants' steps are read, and each participant's sends and
// receives counted per ring.
struct RingIndex {
  std::map<std::tuple<int, int, int>, int> ring_of;              // (from, to, channel)
  std::map<std::pair<int, int>, std::uint64_t> sends, receives;  // (ring, participant): steps so far
};

class Engine {
 public:
  Engine(const Schedule& schedule, const EngineOptions& options)
      : schedule_(schedule), options_(options), element_(size_of(schedule.shape.dtype)),
        settings_(resolve(options.protocol, kRealClock, options.deadline)) {}

  EngineRun run() {
    start_ = Clock::now();
    deadline_ = start_ + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(options_.deadline));
    set_up();
    std::vector<std::thread> threads;
    threads.reserve(participants_.size());
    for (ParticipantState& state : participants_) threads.emplace_back([this, &state] { participant_main(state); });
    for (std::thread& thread : threads) thread.join();
    if (!result_.error.empty()) return std::move(result_);
    result_.completed = true;
    for (int rank = 0; rank < schedule_.nranks(); ++rank) {
      ParticipantState& state = participants_[static_cast<std::size_t>(rank)];
      result_.outputs.push_back(final_output(state));
      const std::size_t count = schedule_.buffer_size(rank, BufferKind::Input);
      const std::byte* input = count > 0 ? at(state, BufferKind::Input, 0) : nullptr;
      result_.inputs.emplace_back(input, input + count * element_);
      result_.guards_intact.push_back(state.input.intact() && state.output.intact() && state.scratch.intact());
    }
    return std::move(result_);
  }

 private:
  void set_up();
  void link_step(ParticipantState& state, std::size_t k, const Step& step, RingIndex& links);
  void set_up_buffers(ParticipantState& state);
  void stop_at_deadline(ParticipantState& state);
  void participant_main(ParticipantState& state);
  bool advance(ParticipantState& state, StreamState& stream);
  Progress run_step(ParticipantState& state, StreamState& stream, int index);
  Progress receive(ParticipantState& state, StreamState& stream, int index, const Step& step);
  void post(ParticipantState& state, int index, const Step& step);
  bool pump(SlotRing& ring);
  void next_call(ParticipantState& state);
  bool finished(const ParticipantState& state) const;
  std::vector<std::byte> final_output(ParticipantState& state);
  std::byte* at(ParticipantState& state, BufferKind buffer, std::size_t offset);
  void reduce(const std::byte* a, const std::byte* b, std::byte* out, std::size_t count) const;
  // Ends the run for every participant, with the first error given.
  void stop(bool detected, bool hang, const std::string& error);
  std::string stream_text(const SlotRing& ring, std::uint64_t sequence) const {
    return link_stream_text(participant_name(schedule_, ring.to), participant_name(schedule_, ring.from), ring.channel,
                            ring.per_call == 0 ? 0 : sequence / ring.per_call);
  }

  const Schedule& schedule_;
  const EngineOptions& options_;
  const std::size_t element_;
  const LinkSettings settings_;
  Clock::time_point start_, deadline_;
  std::vector<ParticipantState> participants_;
  std::vector<std::unique_ptr<SlotRing>> rings_;
  std::atomic<bool> stopped_{false};
  std::mutex error_mutex_;
  EngineRun result_;
};

void Engine::set_up() {
  const auto n = static_cast<std::size_t>(schedule_.nparticipants());
  participants_.resize(n);
  result_.earlier_outputs.assign(static_cast<std::size_t>(std::max(options_.calls, 1) - 1),
                                 std::vector<std::vector<std::byte>>(static_cast<std::size_t>(schedule_.nranks())));
  RingIndex links;
  for (std::size_t q = 0; q < n; ++q) {
    ParticipantState& state = participants_[q];
    state.participant = static_cast<int>(q);
    const std::vector<Step>& steps = schedule_.participants[q].steps;
    state.links.resize(steps.size());
    state.done.assign(steps.size(), 0);
    std::map<int, std::size_t> stream_index;
    for (std::size_t k = 0; k < steps.size(); ++k) {
      const Step& step = steps[k];
      auto [where, added] = stream_index.emplace(step.stream, state.streams.size());
      if (added) state.streams.emplace_back();
      state.streams[where->second].steps.push_back(static_cast<int>(k));
      if (step.sends() || step.receives()) link_step(state, k, step, links);
    }
    state.remaining = steps.size();
    set_up_buffers(state);
  }
  const RingShape shape = ring_shape(rings_.size(), options_.ring_bytes);
  for (std::unique_ptr<SlotRing>& ring : rings_) {
    ring->shape = shape;
    ring->payload.resize(shape.slots * shape.slot_bytes);
    ring->headers = std::make_unique<SlotHeader[]>(shape.slots);
  }
}

// Step k's ring (made on first use) and its ordinal among the participant's sends or receives there.
void Engine::link_step(ParticipantState& state, std::size_t k, const Step& step, RingIndex& links) {
  const int from = step.sends() ? state.participant : step.peer;
  const int to = step.sends() ? step.peer : state.participant;
  auto [found, created] =
      links.ring_of.emplace(std::make_tuple(from, to, step.channel), static_cast<int>(rings_.size()));
  if (created) {
    rings_.push_back(std::make_unique<SlotRing>());
    rings_.back()->from = from;
    rings_.back()->to = to;
    rings_.back()->channel = step.channel;
  }
  const int ring = found->second;
  auto& counted = step.sends() ? links.sends : links.receives;
  state.links[k] = StepLink{ring, counted[{ring, state.participant}]++};
  if (!step.sends()) return;
  rings_[static_cast<std::size_t>(ring)]->per_call++;
  if (std::find(state.outbound.begin(), state.outbound.end(), ring) == state.outbound.end()) {
    state.outbound.push_back(ring);
  }
}

void Engine::set_up_buffers(ParticipantState& state) {
  const int p = state.participant;
  const auto allocate = [&](GuardedBuffer& buffer, BufferKind kind) {
    buffer = GuardedBuffer(schedule_.buffer_size(p, kind), element_, schedule_.shape.offset, options_.guard);
  };
  allocate(state.scratch, BufferKind::Scratch);
  if (schedule_.participants[static_cast<std::size_t>(p)].is_switch) return;
  allocate(state.output, BufferKind::Output);
  if (!schedule_.shape.in_place || in_place_alias(schedule_.shape, p).inside == BufferKind::Output) {
    allocate(state.input, BufferKind::Input);
  }
  const std::size_t count = schedule_.buffer_size(p, BufferKind::Input);
  std::byte* input = at(state, BufferKind::Input, 0);
  if (options_.inputs == nullptr) {
    InputGenerator(schedule_.shape).fill(p, 0, {input, count * element_});
  } else {
    const std::vector<std::byte>& given = options_.inputs->at(static_cast<std::size_t>(p));
    std::copy_n(given.begin(), std::min(given.size(), count * element_), input);
  }
}

std::byte* Engine::at(ParticipantState& state, BufferKind buffer, std::size_t offset) {
  if (buffer == BufferKind::Scratch) return state.scratch.data() + offset * element_;
  if (schedule_.shape.in_place && !schedule_.participants[static_cast<std::size_t>(state.participant)].is_switch) {
    const Alias alias = in_place_alias(schedule_.shape, state.participant);
    if (alias.inside == BufferKind::Input && buffer == BufferKind::Input) {
      return state.output.data() + (alias.offset + offset) * element_;
    }
    if (alias.inside == BufferKind::Output && buffer == BufferKind::Output) {
      return state.input.data() + (alias.offset + offset) * element_;
    }
  }
  return (buffer == BufferKind::Input ? state.input : state.output).data() + offset * element_;
}

void Engine::reduce(const std::byte* a, const std::byte* b, std::byte* out, std::size_t count) const {
  const auto apply = options_.reduction.reduce != nullptr ? options_.reduction.reduce : &reduce_on_host;
  apply(schedule_.shape.dtype, schedule_.shape.op, a, b, out, count);
}

void Engine::stop(bool detected, bool hang, const std::string& error) {
  const std::lock_guard<std::mutex> lock(error_mutex_);
  if (!result_.error.empty()) return;
  result_.error = error;
  result_.detected = detected;
  result_.hang = hang;
  stopped_.store(true, std::memory_order_release);
}

void Engine::participant_main(ParticipantState& state) {
  while (!stopped_.load(std::memory_order_acquire)) {
    bool moved = false;
    if (state.remaining == 0 && state.call + 1 < options_.calls) {
      next_call(state);
      moved = true;
    }
    for (StreamState& stream : state.streams) moved = advance(state, stream) || moved;
    for (int ring : state.outbound) moved = pump(*rings_[static_cast<std::size_t>(ring)]) || moved;
    if (finished(state)) return;
    if (moved) continue;
    if (Clock::now() > deadline_) {
      stop_at_deadline(state);
      return;
    }
    std::this_thread::yield();
  }
}

// The deadline passed with the participant still waiting. A receive waiting on the link then ends
// the run `detected` (its timeout is clamped below the deadline): its streams are advanced once
// more, and every other participant gives the receivers a grace period to say so first. Only a
// run nobody detected (waits that never time out) is a hang, named by the participant's first
// unfinished step, or by its sends still staged.
void Engine::stop_at_deadline(ParticipantState& state) {
  for (StreamState& stream : state.streams) advance(state, stream);
  const Clock::time_point grace = Clock::now() + std::chrono::milliseconds(200);
  while (!stopped_.load(std::memory_order_acquire) && Clock::now() < grace) std::this_thread::yield();
  if (stopped_.load(std::memory_order_acquire)) return;
  int first = static_cast<int>(state.done.size());
  for (const StreamState& stream : state.streams) {
    if (stream.next < stream.steps.size()) first = std::min(first, stream.steps[stream.next]);
  }
  const std::string what = first < static_cast<int>(state.done.size())
                               ? describe(schedule_, state.participant, first)
                               : participant_name(schedule_, state.participant) + " sending";
  stop(false, true, what + " was still waiting at the deadline (" + std::to_string(options_.deadline) + " s)");
}

bool Engine::finished(const ParticipantState& state) const {
  if (state.remaining != 0 || state.call + 1 < options_.calls) return false;
  return std::all_of(state.outbound.begin(), state.outbound.end(),
                     [&](int ring) { return rings_[static_cast<std::size_t>(ring)]->outbox.empty(); });
}

bool Engine::advance(ParticipantState& state, StreamState& stream) {
  bool moved = false;
  const Participant& participant = schedule_.participants[static_cast<std::size_t>(state.participant)];
  while (stream.next < stream.steps.size()) {
    const int index = stream.steps[stream.next];
    for (int earlier : participant.after(index)) {
      if (state.done[static_cast<std::size_t>(earlier)] == 0) return moved;
    }
    const Progress progress = run_step(state, stream, index);
    if (progress != Progress::Done) return moved;
    state.done[static_cast<std::size_t>(index)] = 1;
    --state.remaining;
    ++stream.next;
    stream.waiting = false;
    moved = true;
  }
  return moved;
}

Progress Engine::run_step(ParticipantState& state, StreamState& stream, int index) {
  const Step& step =
      schedule_.participants[static_cast<std::size_t>(state.participant)].steps[static_cast<std::size_t>(index)];
  switch (step.kind) {
    case StepKind::Send: post(state, index, step); return Progress::Done;
    case StepKind::Recv:
    case StepKind::RecvReduce: return receive(state, stream, index, step);
    case StepKind::Copy:
      std::memmove(at(state, step.to.buffer, step.to.offset), at(state, step.from.buffer, step.from.offset),
                   step.from.count * element_);
      return Progress::Done;
    case StepKind::Reduce: {
      std::byte* to = at(state, step.to.buffer, step.to.offset);
      reduce(to, at(state, step.from.buffer, step.from.offset), to, step.from.count);
      return Progress::Done;
    }
  }
  return Progress::Done;
}

void Engine::post(ParticipantState& state, int index, const Step& step) {
  const StepLink link = state.links[static_cast<std::size_t>(index)];
  SlotRing& ring = *rings_[static_cast<std::size_t>(link.ring)];
  Outgoing out;
  out.sequence = static_cast<std::uint64_t>(state.call) * ring.per_call + link.ordinal;
  const std::size_t bytes = step.from.count * element_;
  const std::byte* source = at(state, step.from.buffer, step.from.offset);
  out.bytes.resize(bytes);
  const std::size_t pieces = ring.pieces(bytes);
  for (std::size_t piece = 0; piece < pieces; ++piece) {
    const std::size_t offset = piece * ring.shape.slot_bytes;
    const std::size_t length = std::min(ring.shape.slot_bytes, bytes - offset);
    out.sums.push_back(copy_with_checksum(out.bytes.data() + offset, {source + offset, length}));
  }
  const Clock::time_point now = Clock::now();
  out.not_before = now;
  if (options_.hook != nullptr) {
    Message message;
    message.from = ring.from;
    message.to = ring.to;
    message.channel = ring.channel;
    message.sequence = out.sequence;
    message.bytes = bytes;
    message.time = seconds_between(start_, now);
    message.per_call = ring.per_call;
    const SendDecision decision = options_.hook->on_send(message, out.bytes);
    out.dropped = decision.drop;
    out.duplicates = decision.duplicates;
    // The rings keep order: a message held back behind its successor is late by the reorder window.
    const double late =
        decision.delay +
        (decision.reorder && LinkSender::may_hold(out.sequence, ring.per_call) ? settings_.reorder_window : 0.0);
    out.not_before = now + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(late));
  }
  const auto later = std::upper_bound(ring.outbox.begin(), ring.outbox.end(), out.sequence,
                                      [](std::uint64_t sequence, const Outgoing& o) { return sequence < o.sequence; });
  ring.outbox.insert(later, std::move(out));
}

// Pushes the ring's staged pieces in sequence into free slots; whether any moved.
bool Engine::pump(SlotRing& ring) {
  bool moved = false;
  while (!ring.outbox.empty()) {
    Outgoing& front = ring.outbox.front();
    if (front.sequence != ring.next_sequence || Clock::now() < front.not_before) return moved;
    const std::size_t pieces = ring.pieces(front.bytes.size());
    const std::size_t transmissions = front.dropped ? 0 : pieces * static_cast<std::size_t>(1 + front.duplicates);
    while (front.next_piece < transmissions) {
      if (ring.pushed - ring.taken.load(std::memory_order_acquire) >= ring.shape.slots) return moved;
      const std::size_t piece = front.next_piece % pieces;
      const std::size_t offset = piece * ring.shape.slot_bytes;
      const std::size_t length =
          std::min(ring.shape.slot_bytes, front.bytes.size() - std::min(offset, front.bytes.size()));
      std::memcpy(ring.slot(ring.pushed), front.bytes.data() + offset, length);
      SlotHeader& header = ring.header(ring.pushed);
      header.label = PieceLabel{front.sequence, offset, length, front.sums[piece], 0};
      header.ready.store(ring.pushed + 1, std::memory_order_release);
      ++ring.pushed;
      ++front.next_piece;
      moved = true;
    }
    ring.outbox.pop_front();
    ++ring.next_sequence;
    moved = true;
  }
  return moved;
}

Progress Engine::receive(ParticipantState& state, StreamState& stream, int index, const Step& step) {
  const StepLink link = state.links[static_cast<std::size_t>(index)];
  SlotRing& ring = *rings_[static_cast<std::size_t>(link.ring)];
  LinkReceiver& receiver = ring.receiver;
  const Clock::time_point now = Clock::now();
  if (!stream.waiting) {
    stream.waiting = true;
    stream.quiet_since = now;
  }
  const std::uint64_t wanted = static_cast<std::uint64_t>(state.call) * ring.per_call + link.ordinal;
  const std::size_t bytes = step.to.count * element_;
  while (receiver.due_message() == wanted) {
    const std::uint64_t piece = ring.taken.load(std::memory_order_relaxed);
    SlotHeader& header = ring.header(piece);
    if (header.ready.load(std::memory_order_acquire) != piece + 1) break;
    const PieceLabel label = header.label;
    const std::span<const std::byte> data(ring.slot(piece), std::min(label.bytes, ring.shape.slot_bytes));
    LinkSettings checks = settings_;
    checks.checksums = settings_.checks(label.sequence, ring.per_call);
    const Verdict verdict = receiver.judge(label, data, bytes, checks);
    if (verdict != Verdict::Take && verdict != Verdict::Duplicate) {
      stop(true, false, stream_text(ring, wanted) + ": " + link_fault_text(verdict, label, receiver, bytes));
      return Progress::Failed;
    }
    if (verdict == Verdict::Take) {
      const std::size_t first = label.offset / element_, count = label.bytes / element_;
      std::byte* to = at(state, step.to.buffer, step.to.offset + first);
      if (step.kind == StepKind::Recv) {
        std::memcpy(to, data.data(), label.bytes);
      } else {
        reduce(at(state, step.from.buffer, step.from.offset + first), data.data(), to, count);
      }
    }
    stream.quiet_since = now;
    const bool complete = verdict == Verdict::Take && receiver.take(label.bytes, bytes, 0);
    ring.taken.store(piece + 1, std::memory_order_release);
    if (complete) return Progress::Done;
  }
  // The timeout is clamped below the deadline (resolve()): a wait the deadline ends is the link's.
  if (!settings_.forever && (seconds_between(stream.quiet_since, now) > settings_.timeout || now >= deadline_)) {
    stop(true, false,
         stream_text(ring, wanted) + ": message " + std::to_string(wanted) +
             " did not arrive within the link timeout (" + std::to_string(settings_.timeout) + " s)");
    return Progress::Failed;
  }
  return Progress::Waiting;
}

// The rank's output of the call that just ended, finished as the collective requires (avg).
std::vector<std::byte> Engine::final_output(ParticipantState& state) {
  const std::size_t count = schedule_.buffer_size(state.participant, BufferKind::Output);
  if (count == 0) return {};
  std::byte* output = at(state, BufferKind::Output, 0);
  if (schedule_.shape.op == RedOp::Avg && reduces(schedule_.shape.collective)) {
    const auto finish =
        options_.reduction.finish_average != nullptr ? options_.reduction.finish_average : &finish_average_on_host;
    finish(schedule_.shape.dtype, output, count, schedule_.nranks());
  }
  return {output, output + count * element_};
}

// Ends the participant's call and starts its next one: keep a rank's output, write the next
// call's inputs, and run the script again from the top.
void Engine::next_call(ParticipantState& state) {
  const int call = state.call++;
  const int p = state.participant;
  if (p < schedule_.nranks()) {
    result_.earlier_outputs[static_cast<std::size_t>(call)][static_cast<std::size_t>(p)] = final_output(state);
    Case next = schedule_.shape;
    next.seed = schedule_.shape.seed + static_cast<std::uint64_t>(call + 1) * options_.call_seed_step;
    const std::size_t count = schedule_.buffer_size(p, BufferKind::Input);
    if (count > 0) InputGenerator(next).fill(p, 0, {at(state, BufferKind::Input, 0), count * element_});
  }
  std::fill(state.done.begin(), state.done.end(), 0);
  state.remaining = state.done.size();
  for (StreamState& stream : state.streams) {
    stream.next = 0;
    stream.waiting = false;
  }
}

}  // namespace

EngineRun run_engine(const Schedule& schedule, const EngineOptions& options) {
  Status valid = validate(schedule, options.guard);
  if (!valid) {
    EngineRun run;
    run.error = valid.error().message;
    return run;
  }
  return Engine(schedule, options).run();
}

}  // namespace collcheck::cuda
