// Schedule helpers, buffer sizes, the in-place layout, the structural validator and the bytes a schedule holds.
#include "impls/schedule/schedule.h"

#include <map>
#include <optional>
#include <tuple>

namespace collcheck {

std::string participant_name(const Schedule& s, int p) {
  if (p >= 0 && p < s.nranks()) return "rank " + std::to_string(p);
  return "switch " + std::to_string(p - s.nranks());
}

namespace {

Error step_error(const Schedule& s, int p, int index, const std::string& message) {
  return Error{"schedule", describe(s, p, index) + ": " + message};
}

bool inside(const BufferSizes& sizes, const Range& range, std::size_t slack) {
  const std::size_t size = sizes.of(range.buffer) + slack;
  return range.offset <= size && range.count <= size - range.offset;
}

std::string show(const Range& range) {
  return std::string(name(range.buffer)) + "[" + std::to_string(range.offset) + ", " +
         std::to_string(range.offset + range.count) + ")";
}

// What is wrong with one step, the first of validate_step's checks it fails: kept apart from the
// words, so that a loop over a billion well-formed steps builds no Status.
enum class Flaw { None, Peer, Wait, From, To, WritesInput, Counts };

// The first of the step's waits that names no earlier step, or none.
const int* bad_wait(const Participant& participant, int index) {
  for (const int& earlier : participant.after(index)) {
    if (earlier < 0 || earlier >= index) return &earlier;
  }
  return nullptr;
}

[[gnu::always_inline]] inline Flaw first_flaw(const Schedule& s, const Participant& participant, int p, int index,
                                              const Step& step, const BufferSizes& sizes, std::size_t slack) {
  if ((step.sends() || step.receives()) && (step.peer < 0 || step.peer >= s.nparticipants() || step.peer == p)) {
    return Flaw::Peer;
  }
  if (!participant.waits.empty() && bad_wait(participant, index) != nullptr) return Flaw::Wait;
  if (step.reads() && !inside(sizes, step.from, slack)) return Flaw::From;
  if (step.writes() && !inside(sizes, step.to, slack)) return Flaw::To;
  if (step.writes() && step.to.buffer == BufferKind::Input && !s.shape.in_place) return Flaw::WritesInput;
  if ((step.kind == StepKind::RecvReduce || step.kind == StepKind::Copy || step.kind == StepKind::Reduce) &&
      step.from.count != step.to.count) {
    return Flaw::Counts;
  }
  return Flaw::None;
}

Status explain(const Schedule& s, const Participant& participant, int p, int index, const Step& step,
               const BufferSizes& sizes, Flaw flaw) {
  const Range& range = flaw == Flaw::From ? step.from : step.to;
  switch (flaw) {
    case Flaw::None: break;
    case Flaw::Peer:
      return step_error(s, p, index, "peer " + std::to_string(step.peer) + " is not another participant");
    case Flaw::Wait:
      return step_error(s, p, index,
                        "waits for step " + std::to_string(*bad_wait(participant, index)) + ", not an earlier step");
    case Flaw::From:
    case Flaw::To:
      return step_error(
          s, p, index,
          show(range) + " lies outside the buffer of " + std::to_string(sizes.of(range.buffer)) + " elements");
    case Flaw::WritesInput: return step_error(s, p, index, "writes the input buffer of an out-of-place call");
    case Flaw::Counts:
      return step_error(
          s, p, index,
          "from has " + std::to_string(step.from.count) + " elements, to has " + std::to_string(step.to.count));
  }
  return Ok{};
}

}  // namespace

BufferSizes buffer_sizes(const Schedule& s, int p) {
  return BufferSizes{s.buffer_size(p, BufferKind::Input), s.buffer_size(p, BufferKind::Output),
                     s.buffer_size(p, BufferKind::Scratch)};
}

Status validate_step(const Schedule& s, int p, int index, const Step& step, std::size_t slack) {
  return validate_step(s, p, index, step, buffer_sizes(s, p), slack);
}

Status validate_step(const Schedule& s, int p, int index, const Step& step, const BufferSizes& sizes,
                     std::size_t slack) {
  const Participant& participant = s.participants[static_cast<std::size_t>(p)];
  return explain(s, participant, p, index, step, sizes, first_flaw(s, participant, p, index, step, sizes, slack));
}

Status validate_steps(const Schedule& s, int p, int first_index, std::span<const Step> steps, const BufferSizes& sizes,
                      std::size_t slack) {
  const Participant& participant = s.participants[static_cast<std::size_t>(p)];
  for (std::size_t i = 0; i < steps.size(); ++i) {
    const int index = first_index + static_cast<int>(i);
    const Flaw flaw = first_flaw(s, participant, p, index, steps[i], sizes, slack);
    if (flaw != Flaw::None) return explain(s, participant, p, index, steps[i], sizes, flaw);
  }
  return Ok{};
}

namespace {

// A schedule made on demand, participant by participant, each step once.
Status validate_on_demand(const Schedule& s, std::size_t slack) {
  for (int p = 0; p < s.nparticipants(); ++p) {
    const Participant& participant = s.participants[static_cast<std::size_t>(p)];
    const BufferSizes sizes = buffer_sizes(s, p);
    int index = 0;
    StepReader steps = s.steps_of(p);
    for (std::span<const Step> batch = steps.next_batch(); !batch.empty(); batch = steps.next_batch()) {
      Status valid = validate_steps(s, p, index, batch, sizes, slack);
      if (!valid) return valid;
      index += static_cast<int>(batch.size());
    }
    if (!participant.waits.empty() && participant.waits.rbegin()->first >= index) {
      return Error{"schedule", participant_name(s, p) + ": step " + std::to_string(participant.waits.rbegin()->first) +
                                   " waits for earlier steps, but there are only " + std::to_string(index) + " steps"};
    }
  }
  return Ok{};
}

// Messages per (from, to, channel), in order: the counts of the sends, or of the receives.
using Messages = std::map<std::tuple<int, int, int>, std::vector<std::size_t>>;

// Every send has a receive of the same count, in order, on its link and channel. `received`
// holds, per link, how many receives there are, and the first whose count differs from its
// send's (or none: the receives are not kept, which halves what a large schedule's check holds).
struct Received {
  std::size_t receives = 0;
  std::optional<std::pair<std::size_t, std::size_t>> mismatch;  // (message, the receive's count)
};
using ReceivedPerLink = std::map<std::tuple<int, int, int>, Received>;

// The receives, once every send is known: each against its send.
ReceivedPerLink receives_against_sends(const Schedule& s, const Messages& sent) {
  ReceivedPerLink received;
  for (int p = 0; p < s.nparticipants(); ++p) {
    for (const Step& step : s.participants[static_cast<std::size_t>(p)].steps) {
      if (!step.receives()) continue;
      const std::tuple<int, int, int> key{step.peer, p, step.channel};
      Received& link = received[key];
      const auto found = sent.find(key);
      if (!link.mismatch && found != sent.end() && link.receives < found->second.size() &&
          found->second[link.receives] != step.to.count) {
        link.mismatch = {link.receives, step.to.count};
      }
      ++link.receives;
    }
  }
  return received;
}

Status validate_sends_received(const Schedule& s, const Messages& sent, const ReceivedPerLink& received) {
  for (const auto& [key, counts] : sent) {
    const auto& [from, to, channel] = key;
    const auto found = received.find(key);
    const Received matched = found == received.end() ? Received{} : found->second;
    const std::string link =
        participant_name(s, from) + " -> " + participant_name(s, to) + " on channel " + std::to_string(channel);
    if (matched.receives != counts.size()) {
      return Error{"schedule", link + ": " + std::to_string(counts.size()) + " sends but " +
                                   std::to_string(matched.receives) + " receives"};
    }
    if (matched.mismatch) {
      const std::size_t k = matched.mismatch->first;
      return Error{"schedule", link + ": message " + std::to_string(k) + " sends " + std::to_string(counts[k]) +
                                   " elements but the receive takes " + std::to_string(matched.mismatch->second)};
    }
  }
  return Ok{};
}

// No receive waits on a link and channel that never sends.
Status validate_receives_sent(const Schedule& s, const Messages& sent, const ReceivedPerLink& received) {
  for (const auto& [key, counts] : received) {
    if (!sent.contains(key) && counts.receives > 0) {
      const auto& [from, to, channel] = key;
      return Error{"schedule", participant_name(s, to) + " receives from " + participant_name(s, from) +
                                   " on channel " + std::to_string(channel) + ", which never sends"};
    }
  }
  return Ok{};
}

}  // namespace

std::string_view name(BufferKind kind) {
  switch (kind) {
    case BufferKind::Input: return "input";
    case BufferKind::Output: return "output";
    default: return "scratch";
  }
}

std::string_view name(StepKind kind) {
  switch (kind) {
    case StepKind::Send: return "send";
    case StepKind::Recv: return "recv";
    case StepKind::RecvReduce: return "recv-reduce";
    case StepKind::Copy: return "copy";
    default: return "reduce";
  }
}

std::size_t Schedule::buffer_size(int p, BufferKind kind) const {
  const Participant& participant = participants.at(static_cast<std::size_t>(p));
  if (kind == BufferKind::Scratch) return participant.scratch;
  if (participant.is_switch) return 0;
  // Per rank: only the root of a reduce has an output; a v-collective's sizes follow its counts.
  if (kind == BufferKind::Input) return input_elements(shape, p);
  return output_elements(shape, p);
}

Step& Schedule::add(int p, Step step) {
  std::vector<Step>& steps = participants.at(static_cast<std::size_t>(p)).steps;
  steps.push_back(step);
  return steps.back();
}

void Schedule::send_recv(int from, Range source, int to, Range destination, int channel) {
  add(from, Step{StepKind::Send, to, source, {}, channel, channel});
  add(to, Step{StepKind::Recv, from, {}, destination, channel, channel});
}

void Schedule::send_recv_reduce(int from, Range source, int to, Range local, Range destination, int channel) {
  add(from, Step{StepKind::Send, to, source, {}, channel, channel});
  add(to, Step{StepKind::RecvReduce, from, local, destination, channel, channel});
}

void Schedule::copy(int p, Range from, Range to, int channel) {
  add(p, Step{StepKind::Copy, -1, from, to, channel, channel});
}

void Schedule::reduce(int p, Range from, Range to, int channel) {
  add(p, Step{StepKind::Reduce, -1, from, to, channel, channel});
}

Alias in_place_alias(const Case& shape, int rank) {
  const InPlaceLayout layout = in_place_layout(shape.collective, shape.count, rank, shape.root);
  return {layout.input_inside ? BufferKind::Input : BufferKind::Output, layout.offset};
}

StepReader Schedule::steps_of(int participant) const {
  if (on_demand()) return StepReader(make_steps(participant));
  return StepReader(participants.at(static_cast<std::size_t>(participant)).steps);
}

std::optional<Step> step_at(const Schedule& s, int participant, int index) {
  if (!s.on_demand()) {
    const std::vector<Step>& steps = s.participants.at(static_cast<std::size_t>(participant)).steps;
    if (index < 0 || index >= static_cast<int>(steps.size())) return std::nullopt;
    return steps[static_cast<std::size_t>(index)];
  }
  StepSequence steps = s.make_steps(participant);
  for (int k = 0; k <= index; ++k) {
    if (!steps.next()) return std::nullopt;
  }
  return index < 0 ? std::nullopt : std::optional<Step>(steps.step());
}

Slice slice(std::size_t count, std::size_t parts, std::size_t index) {
  if (parts == 0) return Slice{0, 0};
  const std::size_t base = count / parts;
  const std::size_t larger = count % parts;  // the first `larger` parts hold one more
  if (index < larger) return Slice{index * (base + 1), base + 1};
  return Slice{larger * (base + 1) + (index - larger) * base, base};
}

std::size_t cover_count(std::size_t count, std::size_t parts, std::size_t nranks) {
  const std::size_t blocks = parts * nranks;
  return blocks == 0 ? 0 : (count + blocks - 1) / blocks * blocks;
}

Schedule stored(Schedule schedule) {
  if (!schedule.on_demand()) return schedule;
  for (int p = 0; p < schedule.nparticipants(); ++p) {
    std::vector<Step>& steps = schedule.participants[static_cast<std::size_t>(p)].steps;
    for (StepSequence sequence = schedule.make_steps(p); sequence.next();) steps.push_back(sequence.step());
    steps.shrink_to_fit();
  }
  schedule.make_steps = {};
  return schedule;
}

Status validate_participants(const Schedule& s) {
  if (s.nparticipants() < s.nranks()) {
    return Error{"schedule",
                 std::to_string(s.nparticipants()) + " participants for " + std::to_string(s.nranks()) + " ranks"};
  }
  for (int p = 0; p < s.nparticipants(); ++p) {
    if ((p < s.nranks()) == s.participants[static_cast<std::size_t>(p)].is_switch) {
      return Error{"schedule", participant_name(s, p) + ": ranks come first, switches after them"};
    }
  }
  return Ok{};
}

Status validate(const Schedule& s, std::size_t slack) {
  Status participants = validate_participants(s);
  if (!participants) return participants;
  if (s.on_demand()) return validate_on_demand(s, slack);
  Messages sent;
  for (int p = 0; p < s.nparticipants(); ++p) {
    const Participant& participant = s.participants[static_cast<std::size_t>(p)];
    if (!participant.waits.empty() && participant.waits.rbegin()->first >= static_cast<int>(participant.steps.size())) {
      return Error{"schedule", participant_name(s, p) + ": step " + std::to_string(participant.waits.rbegin()->first) +
                                   " waits for earlier steps, but there are only " +
                                   std::to_string(participant.steps.size()) + " steps"};
    }
    const BufferSizes sizes = buffer_sizes(s, p);
    for (int index = 0; index < static_cast<int>(participant.steps.size()); ++index) {
      const Step& step = participant.steps[static_cast<std::size_t>(index)];
      Status valid = validate_step(s, p, index, step, sizes, slack);
      if (!valid) return valid;
      if (step.sends()) sent[{p, step.peer, step.channel}].push_back(step.from.count);
    }
  }
  const ReceivedPerLink received = receives_against_sends(s, sent);
  Status matched = validate_sends_received(s, sent, received);
  if (!matched) return matched;
  return validate_receives_sent(s, sent, received);
}

std::string describe(const Schedule& s, int p, int index) {
  std::string out = participant_name(s, p) + " step " + std::to_string(index);
  if (p < 0 || p >= s.nparticipants() || index < 0) return out;
  const std::optional<Step> made = step_at(s, p, index);
  if (!made) return out;
  const Step& step = *made;
  out += " (" + std::string(name(step.kind));
  if (step.sends()) out += " " + show(step.from) + " to " + participant_name(s, step.peer);
  if (step.receives()) out += " from " + participant_name(s, step.peer) + " into " + show(step.to);
  if (step.kind == StepKind::Copy || step.kind == StepKind::Reduce)
    out += " " + show(step.from) + " into " + show(step.to);
  return out + ")";
}

MemoryEstimate schedule_memory(const ScheduleSize& size, bool made_on_demand) {
  const std::uint64_t steps = made_on_demand ? 0 : size.steps;
  MemoryEstimate estimate;
  estimate.add("schedule",
               saturating_sum(saturating_product(steps, sizeof(Step)),
                              saturating_product(size.participants, sizeof(Participant))),
               made_on_demand ? "no steps held (made on demand), " + std::to_string(size.participants) +
                                    " participants x " + std::to_string(sizeof(Participant)) + " B"
                              : std::to_string(steps) + " steps x " + std::to_string(sizeof(Step)) + " B");
  return estimate;
}

}  // namespace collcheck
