// The `sim` executor's link protocol on virtual time: the shared receiver and sender
// (impls/link/protocol.h) with arrivals, requests to go back, timers and reorder releases as
// events, and a fault the protocol cannot survive told to every participant.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>

#include "impls/sim/simulation.h"

namespace collcheck::sim {
namespace {

std::string seconds(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.6g", value);
  return text;
}

}  // namespace

void Simulation::set_up_protocol() {
  protocol_ = resolve(options_.protocol, kVirtualClock, hook_.deadline());
  for (int p = 0; p < schedule_.nparticipants(); ++p) {
    for (const Step& step : schedule_.participants[static_cast<std::size_t>(p)].steps) {
      if (step.sends()) ++outbox_[{p, step.peer, step.channel}].per_call;
    }
  }
  // Every receive step's inbox, looked up once: the event loop asks for it on every event.
  step_inbox_.resize(static_cast<std::size_t>(schedule_.nparticipants()));
  timer_.resize(step_inbox_.size());
  for (int p = 0; p < schedule_.nparticipants(); ++p) {
    const auto q = static_cast<std::size_t>(p);
    const auto& steps = schedule_.participants[q].steps;
    step_inbox_[q].assign(steps.size(), nullptr);
    timer_[q].assign(steps.size(), kNoTimer);
    for (std::size_t k = 0; k < steps.size(); ++k) {
      if (steps[k].receives()) step_inbox_[q][k] = &inbox_[{steps[k].peer, p, steps[k].channel}];
    }
  }
}

// A stream as a link fault names it, at message `sequence` (of call sequence / per_call).
std::string Simulation::stream_name(const StreamKey& key, std::uint64_t sequence) const {
  const auto [from, to, channel] = key;
  const auto found = outbox_.find(key);
  const std::uint64_t per_call = found == outbox_.end() ? 0 : found->second.per_call;
  return link_stream_text(participant_name(schedule_, to), participant_name(schedule_, from), channel,
                          per_call == 0 ? 0 : sequence / per_call);
}

// An arrival, judged by the stream's receiver: taken in sequence, a duplicate dropped; a damaged
// or out-of-order one ends the run, or, when reliable, makes the receiver ask the sender to go back.
void Simulation::arrive(std::size_t index) {
  InFlight& message = in_flight_[index];
  Inbox& inbox = inbox_[message.key];
  LinkReceiver& receiver = inbox.receiver;
  receiver.heard(now_);
  const PieceLabel piece{message.sequence, 0, message.payload.size(), message.sum,
                         static_cast<std::uint32_t>(message.attempt)};
  LinkSettings settings = protocol_;
  settings.checksums = protocol_.checks(message.sequence, outbox_[message.key].per_call);
  const Verdict verdict = receiver.judge(piece, message.payload, message.payload.size(), settings);
  if (verdict == Verdict::Take) {
    receiver.take(message.payload.size(), message.payload.size(), now_);
    inbox.waiting.push_back(std::move(message.payload));
    return;
  }
  ++result_.discarded;
  if (verdict == Verdict::Duplicate) return;
  if (!protocol_.reliable) {
    return detect(message.key, stream_name(message.key, receiver.due_message()) + ": " +
                                   link_fault_text(verdict, piece, receiver, message.payload.size()));
  }
  if (receiver.ask(now_, protocol_, nullptr)) ask_again(message.key);
}

// Reliable: the receiver's request to send everything again from the message it expects travels
// to the sender.
void Simulation::ask_again(const StreamKey& key) {
  const auto [from, to, channel] = key;
  go_back_.push_back(GoBack{key, inbox_[key].receiver.due_message()});
  push(now_ + latency(to, from), EventKind::GoBack, from, -1, go_back_.size() - 1);
}

// A wait timer of participant p's receive step k (armed in `advance`) ran out: if the stream
// has been quiet for a whole interval, the run ends (or, when reliable, the receiver asks
// again); otherwise the timer runs on from the last arrival.
void Simulation::expire(int p, int k, std::size_t call) {
  const auto q = static_cast<std::size_t>(p);
  double& armed_at = timer_[q][static_cast<std::size_t>(k)];
  if (armed_at == kNoTimer) return;
  if (static_cast<std::size_t>(call_[q]) != call || done_[q][static_cast<std::size_t>(k)]) {
    armed_at = kNoTimer;
    return;
  }
  const Step& step = schedule_.participants[q].steps[static_cast<std::size_t>(k)];
  const StreamKey key{step.peer, p, step.channel};
  if (!waits_for_message(p, k)) {
    armed_at = kNoTimer;
    return;
  }
  const double interval = wait_interval(p, k);
  Inbox& inbox = *step_inbox_[q][static_cast<std::size_t>(k)];
  const double quiet_since = std::max(armed_at, inbox.receiver.quiet_since());
  if (now_ < quiet_since + interval * (1 - 1e-9)) {
    push(quiet_since + interval, EventKind::Timeout, p, k, call);
    return;
  }
  if (!protocol_.reliable) {
    const double travel = message_travel(p, k);
    return detect(key, describe(schedule_, p, k) + ": no message for " + seconds(protocol_.timeout) +
                           " s (the link timeout)" +
                           (travel > 0 ? " beyond the " + seconds(travel) + " s it needs on its route" : ""));
  }
  armed_at = now_;
  inbox.receiver.ask_anyway(now_, protocol_, nullptr);  // a timer asks whenever it runs out
  ask_again(key);
  push(now_ + interval, EventKind::Timeout, p, k, call);
}

// How long receive step k of p stays quiet before it acts: the timeout, or when reliable the
// retransmission interval, jittered (drawn from the seed); either plus what its message needs on
// its route (LinkSettings::timeout_for), so that a large message on a slow link is waited for.
double Simulation::wait_interval(int p, int k) {
  const double travel = message_travel(p, k);
  if (!protocol_.reliable) return protocol_.timeout_for(travel);
  return timer_jitter_.draw(protocol_.retransmit) + travel;
}

// What the message of receive step k of p needs on its route, the route idle.
double Simulation::message_travel(int p, int k) const {
  const Step& step = schedule_.participants[static_cast<std::size_t>(p)].steps[static_cast<std::size_t>(k)];
  return travel_time(step.peer, p, step.to.count * element_);
}

// Whether receive step k of p could start but for its message.
bool Simulation::waits_for_message(int p, int k) const {
  const auto q = static_cast<std::size_t>(p);
  for (int earlier : schedule_.participants[q].after(k)) {
    if (!done_[q][static_cast<std::size_t>(earlier)]) return false;
  }
  return step_inbox_[q][static_cast<std::size_t>(k)]->waiting.empty();
}

// Arms a timer for every receive step of p that is waiting for its message.
void Simulation::arm_timers(int p) {
  if (protocol_.forever) return;
  const auto q = static_cast<std::size_t>(p);
  for (const Stream& stream : streams_[q]) {
    if (stream.busy || stream.next == stream.steps.size()) continue;
    const int k = stream.steps[stream.next];
    const Step& step = schedule_.participants[q].steps[static_cast<std::size_t>(k)];
    double& armed_at = timer_[q][static_cast<std::size_t>(k)];
    if (!step.receives() || armed_at != kNoTimer || !waits_for_message(p, k)) continue;
    armed_at = now_;
    push(now_ + wait_interval(p, k), EventKind::Timeout, p, k, static_cast<std::size_t>(call_[q]));
  }
}

// The run ends: the participant that saw the fault tells every other one, which stop.
void Simulation::detect(const StreamKey& key, std::string what) {
  if (result_.detected) return;
  const int seen_by = std::get<1>(key);
  double told = now_;
  for (int p = 0; p < schedule_.nparticipants(); ++p) told = std::max(told, now_ + latency(seen_by, p));
  result_.detected = true;
  result_.detected_at = told;
  result_.error = std::move(what) + "; every participant stopped by " + seconds(told) + " s";
}

void Simulation::send(int p, const Step& step) {
  const StreamKey key{p, step.peer, step.channel};
  Outbox& outbox = outbox_[key];
  const std::uint64_t sequence = outbox.sent++;
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
  }
  transmit_message(key, sequence, 0, bytes, sum, std::move(payload));
}

// One transmission through the hook: dropped, delayed, duplicated, held back behind the next
// message (reorder), or changed on the way (the checksum was taken before).
void Simulation::transmit_message(const StreamKey& key, std::uint64_t sequence, int attempt, std::size_t bytes,
                                  std::uint64_t sum, std::vector<std::byte> payload) {
  const auto [from, to, channel] = key;
  Outbox& outbox = outbox_[key];
  const Message message{from, to, channel, sequence, bytes, now_, attempt, outbox.per_call};
  const SendDecision decision = hook_.on_send(message, payload);
  ++result_.messages;
  InFlight flight{key, sequence, attempt, sum, std::move(payload)};
  const double wire = transmit(vertex_[static_cast<std::size_t>(from)], vertex_[static_cast<std::size_t>(to)], bytes);
  double arrival = wire + decision.delay;
  if (!decision.drop && decision.reorder && LinkSender::may_hold(sequence, outbox.per_call) && !outbox.holding) {
    outbox.holding = true;
    outbox.held = std::move(flight);
    go_back_.push_back(GoBack{key, sequence});
    push(now_ + protocol_.reorder_window, EventKind::Release, from, -1, go_back_.size() - 1);
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
void Simulation::release(const GoBack& held) {
  Outbox& outbox = outbox_[held.key];
  if (!outbox.holding || outbox.held.sequence != held.from) return;
  outbox.holding = false;
  const double arrival = std::max(now_, std::nextafter(outbox.last_arrival, now_ + 1));
  outbox.last_arrival = arrival;
  deliver_at(arrival, std::move(outbox.held));
}

void Simulation::deliver_at(double time, InFlight flight) {
  const int to = std::get<1>(flight.key);
  in_flight_.push_back(std::move(flight));
  push(time, EventKind::Arrival, to, -1, in_flight_.size() - 1);
}

// Reliable: the sender goes back to `from` and sends every later message again, each as one
// more attempt. The message asked for `retries` times more without getting through ends the
// run; the ones after it are only resent along (their own losses are counted when asked for).
void Simulation::resend(const GoBack& request) {
  Outbox& outbox = outbox_[request.key];
  const std::uint64_t sent = outbox.sent;
  if (request.from < sent && !outbox.sender.asked_again(request.from, protocol_)) {
    return detect(request.key,
                  stream_name(request.key, request.from) + ": " + link_gave_up_text(request.from, protocol_));
  }
  for (std::uint64_t sequence = request.from; sequence < sent && !result_.detected; ++sequence) {
    const auto index = static_cast<std::size_t>(sequence);
    const auto attempt = static_cast<int>(outbox.sender.retransmit(sequence));
    ++result_.retransmissions;
    transmit_message(request.key, sequence, attempt, outbox.sizes[index], outbox.sums[index], outbox.kept[index]);
  }
}

void Simulation::receive(int p, const Step& step) {
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

}  // namespace collcheck::sim
