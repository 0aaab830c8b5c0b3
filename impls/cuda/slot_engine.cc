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

#include "impls/cuda/engine.h"
#include "impls/cuda/host_kernels.h"
#include "impls/cuda/ib_rings.h"
#include "impls/link/guarded_buffer.h"
#include "reference/inputs.h"

namespace collcheck::cuda {

// How long a process that stopped a run waits for the others, stopped too, to be done with its memory.
constexpr double kStoppedOthersSeconds = 2;

RingShape ring_shape(std::size_t rings, std::size_t ring_bytes, std::size_t largest_slot) {
  RingShape shape;
  shape.slot_bytes = std::max<std::size_t>(largest_slot, 1024);
  if (rings == 0) return shape;
  const std::size_t room = ring_bytes / rings;
  while (shape.slots * shape.slot_bytes > room && shape.slots > 4) shape.slots /= 2;
  while (shape.slots * shape.slot_bytes > room && shape.slot_bytes > 1024) shape.slot_bytes /= 2;
  while (shape.slots * shape.slot_bytes > room && shape.slots > 2) shape.slots /= 2;
  return shape;
}

EngineRun Engine::run() {
  start_ = Clock::now();
  deadline_ = start_ + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(options_.deadline));
  if (options_.world != nullptr && options_.rdma) across_ = std::make_unique<IbRings>(*options_.world, *options_.rdma);
  else if (options_.world != nullptr) across_ = std::make_unique<ProcessRings>(*options_.world);
  set_up();
  result_.call_ends.assign(static_cast<std::size_t>(std::max(options_.calls, 1)), 0.0);
  running_since_ = Clock::now();
  std::vector<std::thread> threads;
  threads.reserve(participants_.size());
  for (ParticipantState& state : participants_) {
    if (!hosted(state.participant)) continue;
    threads.emplace_back([this, &state] {
      try {
        participant_main(state);
      } catch (const std::exception& failure) {  // a device's error: the run ends, naming it
        stop(false, false, participant_name(schedule_, state.participant) + ": " + failure.what());
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  // Another process ended the run: this one says so, unless it had a reason of its own.
  if (result_.error.empty() && halted()) {
    const std::string why = across_ != nullptr ? across_->why_stopped() : std::string();
    stop(true, false, why.empty() ? "stopped: another rank ended the run" : why);
  }
  if (!result_.error.empty()) {
    finish_across();
    return std::move(result_);
  }
  result_.completed = true;
  for (int rank = 0; rank < schedule_.nranks(); ++rank) {
    ParticipantState& state = participants_[static_cast<std::size_t>(rank)];
    if (!hosted(rank)) {
      result_.outputs.emplace_back();
      result_.inputs.emplace_back();
      result_.guards_intact.push_back(true);
      continue;
    }
    result_.outputs.push_back(final_output(state));
    std::vector<std::byte> input(schedule_.buffer_size(rank, BufferKind::Input) * element_);
    state.device->read(input.data(), at(state, BufferKind::Input, 0), input.size());
    result_.inputs.push_back(std::move(input));
    Device& device = *state.device;
    result_.guards_intact.push_back(state.input.intact(device) && state.output.intact(device) &&
                                    state.scratch.intact(device));
  }
  finish_across();
  return std::move(result_);
}

// Across processes, the end: every process done with the others' memory. After a failure the
// others were stopped and end within moments, unless one is gone (a fault plan killed it) or stuck:
// then the world is not used again. A run that completed waits up to its deadline.
void Engine::finish_across() {
  if (across_ == nullptr) return;
  const double left = seconds_between(Clock::now(), deadline_);
  const double patience = result_.error.empty() ? std::max(left, 1.0) : kStoppedOthersSeconds;
  if (!across_->finish(patience)) result_.world_broken = true;
}

void Engine::set_up() {
  const auto n = static_cast<std::size_t>(schedule_.nparticipants());
  participants_.resize(n);
  result_.earlier_outputs.assign(static_cast<std::size_t>(std::max(options_.calls, 1) - 1),
                                 std::vector<std::vector<std::byte>>(static_cast<std::size_t>(schedule_.nranks())));
  RingIndex links;
  for (std::size_t q = 0; q < n; ++q) {
    ParticipantState& state = participants_[q];
    state.participant = static_cast<int>(q);
    state.patience = RetransmitJitter(q);
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
    if (hosted(state.participant)) set_up_buffers(state);
  }
  place_rings();
}

// Every ring's slots in its receiver's device memory, its headers and control words beside them
// (host memory); across processes where both ends reach them (process_rings.h).
void Engine::place_rings() {
  const RingShape shape = ring_shape(rings_.size(), options_.ring_bytes, options_.largest_slot);
  for (std::unique_ptr<SlotRing>& ring : rings_) ring->shape = shape;
  if (across_ != nullptr) {
    std::vector<Device*> devices;
    for (ParticipantState& state : participants_) devices.push_back(state.device.get());
    across_->place(rings_, schedule_.nranks(), devices);
    return;
  }
  for (std::unique_ptr<SlotRing>& ring : rings_)
    ring->place_here(*participants_[static_cast<std::size_t>(ring->to)].device);
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
  state.device = options_.make_device(p);
  state.staging = std::make_unique<StagingPool>(*state.device);
  const auto allocate = [&](DeviceGuardedBuffer& buffer, BufferKind kind) {
    buffer = DeviceGuardedBuffer(*state.device, schedule_.buffer_size(p, kind), element_, schedule_.shape.offset,
                                 options_.guard);
  };
  allocate(state.scratch, BufferKind::Scratch);
  if (schedule_.participants[static_cast<std::size_t>(p)].is_switch) return;
  allocate(state.output, BufferKind::Output);
  if (!schedule_.shape.in_place || in_place_alias(schedule_.shape, p).inside == BufferKind::Output) {
    allocate(state.input, BufferKind::Input);
  }
  const std::size_t bytes = schedule_.buffer_size(p, BufferKind::Input) * element_;
  std::vector<std::byte> input(bytes);
  if (options_.inputs == nullptr) {
    InputGenerator(schedule_.shape).fill(p, 0, input);
  } else {
    const std::vector<std::byte>& given = options_.inputs->at(static_cast<std::size_t>(p));
    std::copy_n(given.begin(), std::min(given.size(), bytes), input.begin());
  }
  state.device->write(at(state, BufferKind::Input, 0), input.data(), bytes);
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

// A variant's own reduction (a mutant's) runs on the host, where the host device's memory is.
void Engine::reduce(Device& device, const std::byte* a, const std::byte* b, std::byte* out, std::size_t count) const {
  if (options_.reduction.reduce != nullptr) {
    options_.reduction.reduce(schedule_.shape.dtype, schedule_.shape.op, a, b, out, count);
  } else {
    device.reduce(schedule_.shape.dtype, schedule_.shape.op, a, b, out, count);
  }
}

// A copy step's ranges may overlap without being the same (a rotation within one buffer): then
// through a copy aside.
void Engine::copy(Device& device, std::byte* to, const std::byte* from, std::size_t bytes) const {
  if (to == from || bytes == 0) return;
  const auto first = reinterpret_cast<std::uintptr_t>(to), second = reinterpret_cast<std::uintptr_t>(from);
  if (first + bytes <= second || second + bytes <= first) {
    device.copy(to, from, bytes);
    return;
  }
  const DeviceBytes aside(device, bytes);
  device.copy(aside.data(), from, bytes);
  device.copy(to, aside.data(), bytes);
}

void Engine::stop(bool detected, bool hang, const std::string& error) {
  const std::lock_guard<std::mutex> lock(error_mutex_);
  if (!result_.error.empty()) return;
  result_.error = error;
  result_.detected = detected;
  result_.hang = hang;
  stopped_.store(true, std::memory_order_release);
  if (across_ != nullptr) across_->stop_everyone();
}

// A rank has run every step of its current call: the call's end is the slowest rank's.
void Engine::record_return(ParticipantState& state) {
  state.returned = state.call;
  if (state.participant >= schedule_.nranks()) return;
  const double seconds = seconds_between(running_since_, Clock::now()) - state.between_calls;
  const std::lock_guard<std::mutex> lock(error_mutex_);
  double& end = result_.call_ends[static_cast<std::size_t>(state.call)];
  end = std::max(end, seconds);
}

void Engine::participant_main(ParticipantState& state) {
  while (!halted()) {
    bool moved = false;
    if (state.remaining == 0 && state.returned < state.call) record_return(state);
    if (state.remaining == 0 && state.call + 1 < options_.calls) {
      next_call(state);
      moved = true;
    }
    for (StreamState& stream : state.streams) moved = advance(state, stream) || moved;
    for (int ring : state.outbound) moved = pump(*state.device, *rings_[static_cast<std::size_t>(ring)]) || moved;
    if (state.remaining == 0 && state.returned < state.call) record_return(state);
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
  while (!halted() && Clock::now() < grace) std::this_thread::yield();
  if (halted()) return;
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
  return std::all_of(state.outbound.begin(), state.outbound.end(), [&](int ring) {
    const SlotRing& outbound = *rings_[static_cast<std::size_t>(ring)];
    return outbound.outbox.empty() && outbound.sent.empty();  // reliable: until every message is taken
  });
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
      copy(*state.device, at(state, step.to.buffer, step.to.offset), at(state, step.from.buffer, step.from.offset),
           step.from.count * element_);
      return Progress::Done;
    case StepKind::Reduce: {
      std::byte* to = at(state, step.to.buffer, step.to.offset);
      reduce(*state.device, to, at(state, step.from.buffer, step.from.offset), to, step.from.count);
      return Progress::Done;
    }
  }
  return Progress::Done;
}

// The rank's output of the call that just ended, finished as the collective requires (avg), read
// back from its device.
std::vector<std::byte> Engine::final_output(ParticipantState& state) {
  const std::size_t count = schedule_.buffer_size(state.participant, BufferKind::Output);
  if (count == 0) return {};
  std::byte* output = at(state, BufferKind::Output, 0);
  if (schedule_.shape.op == RedOp::Avg && reduces(schedule_.shape.collective)) {
    if (options_.reduction.finish_average != nullptr) {
      options_.reduction.finish_average(schedule_.shape.dtype, output, count, schedule_.nranks());
    } else {
      state.device->finish_average(schedule_.shape.dtype, output, count, schedule_.nranks());
    }
  }
  std::vector<std::byte> out(count * element_);
  state.device->read(out.data(), output, out.size());
  return out;
}

// Ends the participant's call and starts its next one: keep a rank's output (where earlier outputs
// are wanted), write the next call's inputs (unless they are written once), and run the script
// again from the top.
void Engine::next_call(ParticipantState& state) {
  const int call = state.call++;
  const int p = state.participant;
  if (p < schedule_.nranks() && options_.earlier_outputs) {
    const Clock::time_point began = Clock::now();
    result_.earlier_outputs[static_cast<std::size_t>(call)][static_cast<std::size_t>(p)] = final_output(state);
    state.between_calls += seconds_between(began, Clock::now());
  }
  if (p < schedule_.nranks() && !options_.inputs_once) {
    Case next = schedule_.shape;
    next.seed = schedule_.shape.seed + static_cast<std::uint64_t>(call + 1) * options_.call_seed_step;
    const std::size_t count = schedule_.buffer_size(p, BufferKind::Input);
    std::vector<std::byte> input(count * element_);
    InputGenerator(next).fill(p, 0, input);
    state.device->write(at(state, BufferKind::Input, 0), input.data(), input.size());
  }
  std::fill(state.done.begin(), state.done.end(), 0);
  state.remaining = state.done.size();
  for (StreamState& stream : state.streams) {
    stream.next = 0;
    stream.waiting = false;
  }
}

EngineRun run_engine(const Schedule& schedule, const EngineOptions& options) {
  Status valid = validate(schedule, options.guard);
  if (valid && options.peer_reads && options.world != nullptr)
    valid = Error{"p2p", "peer reads need every participant in one address space, not processes of a world"};
  if (!valid) {
    EngineRun run;
    run.error = valid.error().message;
    return run;
  }
  return Engine(schedule, options).run();
}

}  // namespace collcheck::cuda
