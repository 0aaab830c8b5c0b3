// The `sim` executor's link protocol on virtual time: the shared receiver and sender
// (impls/link/protocol.h) with arrivals, requests to go back, timers and reorder releases as
// events, and a fault the protocol cannot survive told to every participant.
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>

#include "impls/sim/simulation.h"
#include "reference/memory.h"
#include "reference/numbers.h"

namespace collcheck::sim {
namespace {

std::string seconds(double value) { return printf_text("%.6g", value); }

// The first virtual time after `time` (times are never negative): what a message arrives at to
// come after one arriving at `time`, however far ahead of the others that one is.
double just_after(double time) { return std::bit_cast<double>(std::bit_cast<std::uint64_t>(time) + 1); }

}  // namespace

void Simulation::set_up_protocol() {
  protocol_ = resolve(options_.protocol, kVirtualClock, hook_.deadline());
  arming_.resize(std::bit_ceil(kArmedPerStream * streams_.size() + 1));
  least_wait_ = protocol_.reliable ? RetransmitJitter::least(protocol_.retransmit) : protocol_.timeout;
  kept_cost_ = kKeptCost + (options_.numeric ? kPayloadCost : 0);
  waiting_cost_ = (schedule_.on_demand() ? kWaitingCost : 0) + (options_.numeric ? kPayloadCost : 0);
  // Source by source, so that the topology works out each source's routes together (its cache
  // of shortest-path trees is bounded, see topology.h).
  std::vector<std::uint32_t> by_source(links_.size());
  for (std::uint32_t l = 0; l < by_source.size(); ++l) by_source[l] = l;
  std::stable_sort(by_source.begin(), by_source.end(), [&](std::uint32_t a, std::uint32_t b) {
    return vertex_[static_cast<std::size_t>(std::get<0>(links_[a].key))] <
           vertex_[static_cast<std::size_t>(std::get<0>(links_[b].key))];
  });
  for (std::uint32_t l : by_source) set_up_route(links_[l]);
}

// The stream's place in links_, added when new.
std::uint32_t Simulation::link_of(const StreamKey& key) {
  const auto [found, added] = link_index_.emplace(key, static_cast<std::uint32_t>(links_.size()));
  if (added) {
    links_.emplace_back();
    links_.back().key = key;
    const auto [from, to, channel] = key;
    peer_links_found_[static_cast<std::size_t>(from)].push_back(PeerLink::make(to, channel, true, found->second));
    peer_links_found_[static_cast<std::size_t>(to)].push_back(PeerLink::make(from, channel, false, found->second));
  }
  return found->second;
}

// The link of p's send or receive `step`, from p's few links (sorted: searched by halves when many).
std::uint32_t Simulation::link_of(int p, const Step& step) const {
  const std::span<const PeerLink> links = peer_links_of(static_cast<std::size_t>(p));
  const PeerLink wanted = PeerLink::make(step.peer, step.channel, step.sends(), 0);
  auto same = [&wanted](const PeerLink& link) {
    return link.peer == wanted.peer && link.channel == wanted.channel && link.sends() == wanted.sends();
  };
  if (links.size() <= 8) {
    for (const PeerLink& link : links) {
      if (same(link)) return link.link();
    }
    return kNoLink;
  }
  const auto found = std::lower_bound(links.begin(), links.end(), wanted);
  return found != links.end() && same(*found) ? found->link() : kNoLink;
}

// A stream as a link fault names it, at message `sequence` (of call sequence / per_call).
std::string Simulation::stream_name(const StreamLink& link, std::uint64_t sequence) const {
  const auto [from, to, channel] = link.key;
  const std::uint64_t per_call = link.outbox.per_call;
  return link_stream_text(participant_name(schedule_, to), participant_name(schedule_, from), channel,
                          per_call == 0 ? 0 : sequence / per_call);
}

// An arrival, judged by the stream's receiver: taken in sequence, a duplicate dropped; a damaged
// or out-of-order one ends the run, or, when reliable, makes the receiver ask the sender to go back.
void Simulation::arrive(std::size_t index) {
  InFlight message = std::move(in_flight_[index]);
  free_in_flight_.push_back(static_cast<std::uint32_t>(index));
  held_.on_wire -= kOnWireCost + message.payload.size();
  StreamLink& link = links_[message.link];
  Inbox& inbox = link.inbox;
  LinkReceiver& receiver = inbox.receiver;
  receiver.heard(now_);
  const std::size_t bytes = message.payload.size();
  const PieceLabel piece{message.sequence, 0, bytes, message.sum, static_cast<std::uint32_t>(message.attempt)};
  LinkSettings settings = protocol_;
  // As many as the sender's; none where nothing may have changed the payload (payloads_may_change).
  settings.checksums = payloads_may_change() && protocol_.checks(message.sequence, inbox.per_call);
  const PieceVerdict verdict = receiver.judge(piece, message.payload, bytes, settings);
  if (verdict == PieceVerdict::Take) {
    receiver.take(bytes, bytes, now_);
    ++inbox.waiting_count;
    held_.waiting += waiting_cost_ + message.payload.size();  // less than it held on the wire
    if (schedule_.on_demand()) inbox.waiting_bytes.push(message.bytes);
    if (options_.numeric) inbox.waiting.push(std::move(message.payload));
    forget_taken(link);
    return;
  }
  ++result_.discarded;
  if (verdict == PieceVerdict::Duplicate) return;
  if (!protocol_.reliable) {
    return detect(link.key,
                  stream_name(link, receiver.due_message()) + ": " + link_fault_text(verdict, piece, receiver, bytes));
  }
  if (receiver.ask(now_, protocol_, nullptr)) ask_again(message.link);
}

// Reliable: the receiver's request to send everything again from the message it expects travels
// to the sender.
void Simulation::ask_again(std::uint32_t link) {
  const auto [from, to, channel] = links_[link].key;
  ++links_[link].outbox.asks_pending;
  const std::size_t request = add_go_back(GoBack{link, links_[link].inbox.receiver.due_message()});
  push(now_ + latency(to, from), EventKind::GoBack, from, -1, request);
}

// A record of go_back_ for a request or a held message, reusing one that has been handled.
std::size_t Simulation::add_go_back(GoBack request) {
  if (free_go_back_.empty()) {
    go_back_.push_back(request);
    return go_back_.size() - 1;
  }
  const std::uint32_t index = free_go_back_.back();
  free_go_back_.pop_back();
  go_back_[index] = request;
  return index;
}

// A wait timer of participant p's receive step k (armed in `advance`) ran out: if the stream
// has been quiet for a whole interval, the run ends (or, when reliable, the receiver asks
// again); otherwise the timer runs on from the last arrival.
void Simulation::expire(int p, int k, std::size_t call, std::size_t slot) {
  const auto q = static_cast<std::size_t>(p);
  Stream& stream = streams_[slot];
  double& armed_at = stream.timer_armed;
  if (armed_at == kNoTimer) return;
  // Another call, or the stream has moved on from the step: the timer is over.
  if (static_cast<std::size_t>(participants_[q].call) != call || stream.busy || stream.steps.finished() ||
      stream.steps.index() != k || !waits_for_message(p, stream)) {
    armed_at = kNoTimer;
    return;
  }
  const Step& step = stream.steps.step();
  const StreamKey key{step.peer, p, step.channel};
  const double interval = wait_interval(stream, next_draw());
  Inbox& inbox = links_[stream.link].inbox;
  const double quiet_since = std::max(armed_at, inbox.receiver.quiet_since());
  if (now_ < quiet_since + interval * (1 - 1e-9)) {
    timers_.arm(slot, timer_event(quiet_since + interval, p, k, static_cast<int>(call), next_sequence_++));
    return;
  }
  if (!protocol_.reliable) {
    const double travel = message_travel(stream);
    return detect(key, describe(schedule_, p, k) + ": no message for " + seconds(protocol_.timeout) +
                           " s (the link timeout)" +
                           (travel > 0 ? " beyond the " + seconds(travel) + " s it needs on its route" : ""));
  }
  armed_at = now_;
  inbox.receiver.ask_anyway(now_, protocol_, nullptr);  // a timer asks whenever it runs out
  ask_again(stream.link);
  timers_.arm(slot, timer_event(now_ + interval, p, k, static_cast<int>(call), next_sequence_++));
}

// How long the stream's receive stays quiet before it acts: the timeout, or when reliable the
// retransmission interval, jittered (the jitter's draw number `draw`, from next_draw); either
// plus what its message needs on its route (LinkSettings::timeout_for), so that a large message
// on a slow link is waited for.
double Simulation::wait_interval(const Stream& stream, std::uint64_t draw) const {
  const double travel = message_travel(stream);
  if (!protocol_.reliable) return protocol_.timeout_for(travel);
  return timer_jitter_.drawn(draw, protocol_.retransmit) + travel;
}

// The jitter's next draw number, taken in turn with every timer armed (none when unreliable).
std::uint64_t Simulation::next_draw() { return protocol_.reliable ? timer_jitter_.take_number() : 0; }

// What the message of receive step k of p needs on its route, the route idle.
double Simulation::message_travel(const Stream& stream) const {
  const Step& step = stream.steps.step();
  const StreamLink& link = links_[stream.link];
  return link.hop_count == 0 ? 0 : link.latency + static_cast<double>(step.to.count * element_) / link.narrowest;
}

// Whether receive step k of p could start but for its message.
bool Simulation::waits_for_message(int p, const Stream& stream) const {
  return waits_done(p, stream) && links_[stream.link].inbox.waiting_count == 0;
}

// Arms a timer for every receive step of p that is waiting for its message.
void Simulation::arm_timers(int p) {
  if (protocol_.forever) return;
  const auto q = static_cast<std::size_t>(p);
  const ParticipantState& state = participants_[q];
  for (std::size_t slot = state.first_slot; slot < state.end_slot; ++slot) {
    Stream& stream = streams_[slot];
    if (stream.busy || stream.steps.finished()) continue;
    if (!stream.steps.step().receives() || stream.timer_armed != kNoTimer || !waits_for_message(p, stream)) continue;
    stream.timer_armed = now_;
    if (arming_count_ == arming_.size()) join_oldest();
    arming_[(arming_first_ + arming_count_++) & (arming_.size() - 1)] =
        ArmedTimer{now_, next_sequence_++,     next_draw(), static_cast<std::uint32_t>(slot), timer_generations_[slot],
                   p,    stream.steps.index(), state.call};
  }
}

// Timers armed join the heap, oldest first, once they could come before the `first` event (none
// comes sooner than least_wait_ after it was armed; all of them when no event is left), or once
// the ring of those held is full (arm_timers). Most are over by then, their receive started (a
// message mostly comes long before its timer could run out), so the heap sees few.
void Simulation::heap_armed_timers(const Event* first) {
  const double time = first != nullptr ? first->time : std::numeric_limits<double>::infinity();
  while (arming_count_ > 0 && arming_[arming_first_].armed + least_wait_ <= time) join_oldest();
}

// The oldest timer held back joins the heap with the time, tie and jitter it would have had
// joining when armed, unless its receive has started since: nothing changes but where it waited.
void Simulation::join_oldest() {
  const ArmedTimer armed = arming_[arming_first_];
  arming_first_ = (arming_first_ + 1) & (arming_.size() - 1);
  --arming_count_;
  if (timer_generations_[armed.slot] != armed.generation) return;
  const Stream& stream = streams_[armed.slot];
  timers_.arm(armed.slot, timer_event(armed.armed + wait_interval(stream, armed.draw), armed.participant, armed.step,
                                      armed.call, armed.sequence));
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

void Simulation::send(int p, const Stream& stream) {
  const Step& step = stream.steps.step();
  const std::uint32_t link = stream.link;
  StreamLink& record = links_[link];
  Outbox& outbox = record.outbox;
  const std::uint64_t sequence = outbox.sent++;
  std::vector<std::byte> payload;
  if (options_.numeric && step.from.count > 0) {
    const std::byte* from = at(p, step.from.buffer, step.from.offset);
    payload.assign(from, from + step.from.count * element_);
  }
  const std::size_t bytes = step.from.count * element_;
  const std::uint64_t sum = payload.empty() || !payloads_may_change() ? empty_sum_ : checksum(payload);
  if (protocol_.reliable) {
    hold(held_.kept, kept_cost_ + payload.size());
    outbox.kept.push(KeptMessage{sum, bytes});
    if (options_.numeric) record.kept_payloads.push(payload);
  }
  transmit_message(link, sequence, 0, bytes, sum, std::move(payload));
}

// One transmission through the hook: dropped, delayed, duplicated, held back behind the next
// message (reorder), or changed on the way (the checksum was taken before).
void Simulation::transmit_message(std::uint32_t link, std::uint64_t sequence, int attempt, std::size_t bytes,
                                  std::uint64_t sum, std::vector<std::byte> payload) {
  StreamLink& stream = links_[link];
  const auto [from, to, channel] = stream.key;
  Outbox& outbox = stream.outbox;
  const Message message{from, to, channel, sequence, bytes, now_, attempt, outbox.per_call, &stream.hook_memo};
  const SendDecision decision = hook_.on_send(message, payload);
  ++result_.messages;
  InFlight flight{link, attempt, sequence, sum, bytes, std::move(payload)};
  const double wire = transmit(stream, bytes);
  double arrival = wire + decision.delay;
  if (!decision.drop && decision.reorder && LinkSender::may_hold(sequence, outbox.per_call) && !stream.holding) {
    stream.holding = true;
    stream.held = std::move(flight);
    const std::size_t held = add_go_back(GoBack{link, sequence});
    push(now_ + protocol_.reorder_window, EventKind::Release, from, -1, held);
    return;
  }
  if (!decision.drop) {
    arrival = std::max(arrival, just_after(outbox.last_arrival));
    outbox.last_arrival = arrival;
    for (int copy = 0; copy < decision.duplicates; ++copy) {
      arrival = just_after(arrival);
      deliver_at(arrival, flight);
    }
    deliver_at(outbox.last_arrival, std::move(flight));
  }
  if (stream.holding && !(stream.held.sequence == sequence && stream.held.attempt == attempt)) {
    stream.holding = false;
    const double later = just_after(std::max(arrival, outbox.last_arrival));
    deliver_at(later, std::move(stream.held));
  }
}

// A held message whose next one has not come within the reorder window goes on its own.
void Simulation::release(const GoBack& held) {
  StreamLink& link = links_[held.link];
  Outbox& outbox = link.outbox;
  if (!link.holding || link.held.sequence != held.from) return;
  link.holding = false;
  const double arrival = std::max(now_, just_after(outbox.last_arrival));
  outbox.last_arrival = arrival;
  deliver_at(arrival, std::move(link.held));
}

void Simulation::deliver_at(double time, InFlight flight) {
  const int to = std::get<1>(links_[flight.link].key);
  hold(held_.on_wire, kOnWireCost + flight.payload.size());
  std::size_t index = in_flight_.size();
  if (free_in_flight_.empty()) {
    in_flight_.push_back(std::move(flight));
  } else {
    index = free_in_flight_.back();
    free_in_flight_.pop_back();
    in_flight_[index] = std::move(flight);
  }
  push(time, EventKind::Arrival, to, -1, index);
}

// Reliable: the sender goes back to `from` and sends every later message again, each as one
// more attempt. The message asked for `retries` times more without getting through ends the
// run; the ones after it are only resent along (their own losses are counted when asked for).
void Simulation::resend(const GoBack& request) {
  StreamLink& link = links_[request.link];
  Outbox& outbox = link.outbox;
  --outbox.asks_pending;
  const std::uint64_t sent = outbox.sent;
  if (request.from < sent && !outbox.sender.asked_again(request.from, protocol_)) {
    return detect(link.key, stream_name(link, request.from) + ": " + link_gave_up_text(request.from, protocol_));
  }
  for (std::uint64_t sequence = request.from; sequence < sent && !result_.detected; ++sequence) {
    const auto attempt = static_cast<int>(outbox.sender.retransmit(sequence));
    ++result_.retransmissions;
    const auto place = static_cast<std::size_t>(sequence - outbox.kept_from);
    const KeptMessage& kept = outbox.kept[place];
    transmit_message(request.link, sequence, attempt, kept.bytes, kept.sum,
                     options_.numeric ? link.kept_payloads[place] : std::vector<std::byte>{});
  }
}

void Simulation::receive(int p, const Stream& stream) {
  const Step& step = stream.steps.step();
  Inbox& inbox = links_[stream.link].inbox;
  --inbox.waiting_count;
  held_.waiting -= waiting_cost_;
  // Made on demand: the k-th receive takes the k-th message of its link, which must fit it.
  if (schedule_.on_demand()) {
    const std::size_t bytes = inbox.waiting_bytes.pop();
    if (bytes != step.to.count * element_) {
      const auto [from, to, channel] = links_[stream.link].key;
      fail(p, stream.steps.index(),
           "takes " + std::to_string(step.to.count) + " elements but the message from " +
               participant_name(schedule_, from) + " on channel " + std::to_string(channel) + " has " +
               std::to_string(bytes / element_));
    }
  }
  if (!options_.numeric) return;
  std::vector<std::byte> payload = inbox.waiting.pop();
  held_.waiting -= payload.size();
  if (step.to.count == 0 || payload.size() != step.to.count * element_) return;
  std::byte* to = at(p, step.to.buffer, step.to.offset);
  if (step.kind == StepKind::Recv) {
    std::memcpy(to, payload.data(), payload.size());
    return;
  }
  reduce(at(p, step.from.buffer, step.from.offset), payload.data(), to, step.to.count);
}

// Reliable: what the receiver has taken will never be asked for again, unless a request to go
// back is on its way; the sender forgets it (a run keeps only the messages not yet taken).
void Simulation::forget_taken(StreamLink& link) {
  Outbox& outbox = link.outbox;
  if (!protocol_.reliable || outbox.asks_pending > 0) return;
  const std::uint64_t taken = link.inbox.receiver.due_message();
  if (taken <= outbox.kept_from) return;
  const std::uint64_t forget = std::min<std::uint64_t>(taken - outbox.kept_from, outbox.kept.size());
  held_.kept -= forget * kept_cost_;
  for (std::size_t k = 0; options_.numeric && k < forget; ++k) held_.kept -= link.kept_payloads[k].size();
  outbox.kept.drop(static_cast<std::size_t>(forget));
  if (options_.numeric) link.kept_payloads.drop(static_cast<std::size_t>(forget));
  outbox.kept_from += forget;
  outbox.sender.acknowledged(outbox.kept_from);
}

// Counts `bytes` more of the run's messages held `where`; past SimulationOptions::message_memory
// the run stops.
void Simulation::hold(std::uint64_t& where, std::uint64_t bytes) {
  where += bytes;
  const std::uint64_t total = held_.total();
  if (total <= result_.peak_message_memory) return;
  result_.peak_message_memory = total;
  if (options_.message_memory != 0 && total > options_.message_memory && !result_.out_of_memory) [[unlikely]] {
    out_of_memory();
  }
}

// The run stops, saying where its messages were.
void Simulation::out_of_memory() {
  result_.out_of_memory = true;
  if (!result_.error.empty()) return;
  result_.error = "stopped at " + seconds(now_) + " s of virtual time: its messages held " +
                  format_bytes(held_.total()) + " (" + format_bytes(held_.on_wire) + " on the wire, " +
                  format_bytes(held_.kept) + " kept to send again, " + format_bytes(held_.waiting) +
                  " waiting for their receive), more than the " + format_bytes(options_.message_memory) +
                  " left to them";
}

}  // namespace collcheck::sim
