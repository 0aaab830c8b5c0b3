// The fault injector: for each message, which faults of the plan hit it (target, trigger,
// probability) and what they do to it, drawing every random choice from the seed and the message.
#include "faults/injector.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "reference/random.h"

namespace collcheck {
namespace {

// What each random draw is for, so that draws for one message stay independent.
// The j-th flipped bit draws with Bit + 8 * j, so Place never meets one of them.
enum Purpose : std::uint64_t { Chance = 1, Jitter = 2, Bit = 3, Place = 4 };

bool on_target(const Target& target, const Message& m) {
  switch (target.scope) {
    case Target::Scope::All: return true;
    case Target::Scope::Link: return m.from == target.from && m.to == target.to;
    case Target::Scope::Rank: return m.from == target.rank;
  }
  return false;
}

// Whether the message stands where `position` asks in its stream's call. Without a count per
// call (sockets), the first is the stream's first message and no message is known to be last.
bool at_position(StreamPosition position, const Message& m) {
  if (position == StreamPosition::Any) return true;
  if (m.per_call == 0) return position == StreamPosition::First && m.sequence == 0;
  const std::uint64_t within = m.sequence % m.per_call;
  return position == StreamPosition::First ? within == 0 : within + 1 == m.per_call;
}

// The bytes [first, end) of a payload of `size` bytes (size > 0) where `place` puts a corruption;
// `random` chooses the power of two of a boundary.
std::pair<std::uint64_t, std::uint64_t> place_bytes(BytePlace place, std::uint64_t size, std::uint64_t random) {
  switch (place) {
    case BytePlace::Any: break;
    case BytePlace::First: return {0, 1};
    case BytePlace::Last: return {size - 1, size};
    case BytePlace::Tail: return {size - std::max<std::uint64_t>(size % 8, 1), size};
    case BytePlace::Boundary: {
      std::uint64_t powers = 0;  // powers of two from 8 below size
      for (std::uint64_t power = 8; power < size; power *= 2) ++powers;
      if (powers == 0) break;
      const std::uint64_t power = std::uint64_t{8} << below(random, powers);
      return {power - 1, power + 1};
    }
  }
  return {0, size};
}

// A flapping link is down for the first half of each period from `at`, then up for the second.
bool flap_down(const Fault& f, double time) {
  const double half = f.period / 2000;  // milliseconds to seconds, halved
  const double phase = std::floor((time - f.trigger.at) / half);
  return std::fmod(phase, 2) == 0;
}

// What each fault's random draws depend on: its kind, its target and how many faults of that
// kind and target come before it, never its place in the plan or its triggers and parameters.
// So the shrinker removing another fault, or making this one milder (a lower p hits a subset of
// the messages it hit), leaves the rest of what happens as it was.
std::vector<std::uint64_t> fault_keys(const FaultPlan& plan) {
  std::vector<std::uint64_t> kinds_and_targets, keys;
  for (const Fault& f : plan.faults) {
    const auto scope = static_cast<std::uint64_t>(f.target.scope);
    const auto from = static_cast<std::uint64_t>(f.target.scope == Target::Scope::Rank ? f.target.rank : f.target.from);
    const auto to = static_cast<std::uint64_t>(f.target.scope == Target::Scope::Link ? f.target.to : 0);
    std::uint64_t key = mix64(static_cast<std::uint64_t>(f.kind));
    if (f.target.scope != Target::Scope::All) key = mix64(key ^ mix64(scope ^ mix64(from ^ mix64(to))));
    const auto earlier =
        static_cast<std::uint64_t>(std::count(kinds_and_targets.begin(), kinds_and_targets.end(), key));
    kinds_and_targets.push_back(key);
    keys.push_back(mix64(key + earlier));
  }
  return keys;
}

}  // namespace

bool injectable(FaultKind) { return true; }

FaultInjector::FaultInjector(FaultPlan plan, std::uint64_t seed, double deadline, double link_bandwidth)
    : plan_(std::move(plan)), deadline_(deadline), link_bandwidth_(link_bandwidth), states_(plan_.faults.size()) {
  for (std::uint64_t key : fault_keys(plan_)) bases_.push_back(mix64(seed ^ key));
}

SendDecision FaultInjector::on_send(const Message& message, std::span<std::byte> payload) {
  std::unique_lock<std::mutex> lock(mutex_, std::defer_lock);
  if (!one_thread_) lock.lock();
  SendDecision decision;
  // Faults apply in plan order and compose: any drop drops, delays add, corruptions stack.
  for (std::size_t i = 0; i < plan_.faults.size(); ++i) {
    if (fires(i, message)) apply(i, message, payload, decision);
  }
  return decision;
}

// Whether fault `index` hits this message; counts the target's traffic either way. On `proc`
// each process counts the messages it sends, which for a link or rank target is all of them.
bool FaultInjector::fires(std::size_t index, const Message& message) {
  const Fault& f = plan_.faults[index];
  if (!injectable(f.kind) || !on_target(f.target, message)) return false;
  State& state = states_[index];
  const std::uint64_t number = state.messages++;
  const std::uint64_t offset = state.bytes;
  state.bytes += message.bytes;
  const Trigger& t = f.trigger;
  if (message.time < t.at || number < t.after || (t.offset > 0 && offset + message.bytes <= t.offset)) return false;
  if (t.times != 0 && state.affected >= t.times) return false;
  if (!at_position(t.message, message)) return false;
  if (f.kind == FaultKind::LinkFlap && !flap_down(f, message.time)) return false;
  return t.p >= 1 || unit_interval(draw(index, message, Chance)) < t.p;
}

void FaultInjector::apply(std::size_t index, const Message& message, std::span<std::byte> payload,
                          SendDecision& decision) {
  const Fault& f = plan_.faults[index];
  State& state = states_[index];
  switch (f.kind) {
    case FaultKind::Drop:
    case FaultKind::LinkDown:
    case FaultKind::LinkFlap:
    // On `sim` a stopped or killed rank is one whose messages never leave it; on `proc` these
    // become SIGSTOP and SIGKILL that the launched rank's process raises on itself.
    case FaultKind::Stop:
    case FaultKind::Kill: decision.drop = true; break;
    case FaultKind::Delay:
      decision.delay += (f.ms + f.jitter * unit_interval(draw(index, message, Jitter))) / 1000;
      break;
    case FaultKind::Straggler:
      // `factor` times as long to send: (factor - 1) transfer times more, plus a fixed delay.
      decision.delay += (f.factor - 1) * static_cast<double>(message.bytes) / link_bandwidth_ + f.ms / 1000;
      break;
    case FaultKind::Corrupt:
      if (payload.empty()) return;  // nothing to flip (timing-only runs, empty messages)
      corrupt(index, message, payload);
      break;
    case FaultKind::Duplicate: ++decision.duplicates; break;
    case FaultKind::Reorder: decision.reorder = true; break;
  }
  ++state.affected;
}

// Flips `bits` distinct bits (as many as the bytes `where` names have, at most) at drawn positions
// among those bytes.
void FaultInjector::corrupt(std::size_t index, const Message& message, std::span<std::byte> payload) {
  const Fault& f = plan_.faults[index];
  const auto [first, end] = place_bytes(f.where, payload.size(), draw(index, message, Place));
  const std::uint64_t size = (end - first) * 8;
  const std::uint64_t flips = std::min<std::uint64_t>(static_cast<std::uint64_t>(f.bits), size);
  std::vector<std::uint64_t> flipped;
  for (std::uint64_t j = 0; j < flips; ++j) {
    std::uint64_t bit = below(draw(index, message, Bit + 8 * j), size);
    // A repeated position would undo a flip: take the next unflipped bit instead.
    while (std::find(flipped.begin(), flipped.end(), bit) != flipped.end()) bit = (bit + 1) % size;
    flipped.push_back(bit);
    payload[first + bit / 8] ^= static_cast<std::byte>(1u << (bit % 8));
  }
}

// 64 random bits from the seed, the fault's key, the message's identity (a retransmission is another
// attempt, drawn afresh) and the purpose: the same on every run and in every process, whatever
// order messages are sent in.
std::uint64_t FaultInjector::draw(std::size_t index, const Message& m, std::uint64_t purpose) {
  // Written out, not a loop over a list of the parts: a simulator draws for every message.
  std::uint64_t x = mix64(link_start(index, m) ^ m.sequence);
  x = mix64(x ^ static_cast<std::uint64_t>(m.attempt));
  return mix64(x ^ purpose);
}

// The first three of draw's mixes, which depend on the link alone: for the plan's first fault, kept
// in the sender's memo for the link where it gives one (at 16,384 ranks a simulator draws for half
// a billion messages on 16,384 links). A start that is 0 is worked out again each time (one link
// in 2^64: the same draws).
std::uint64_t FaultInjector::link_start(std::size_t index, const Message& m) {
  const auto work_out = [&] {
    std::uint64_t x = mix64(bases_[index] ^ static_cast<std::uint64_t>(m.from));
    x = mix64(x ^ static_cast<std::uint64_t>(m.to));
    return mix64(x ^ static_cast<std::uint64_t>(m.channel));
  };
  if (m.link_memo == nullptr || index != 0) return work_out();
  std::uint64_t& kept = m.link_memo->word;
  if (kept == 0) kept = work_out();
  return kept;
}

std::vector<std::uint64_t> FaultInjector::affected_per_fault() const {
  const std::lock_guard<std::mutex> lock(mutex_);
  std::vector<std::uint64_t> counts;
  for (const State& state : states_) counts.push_back(state.affected);
  return counts;
}

std::array<std::uint64_t, fault_kind_count> FaultInjector::affected_per_kind() const {
  const std::vector<std::uint64_t> per_fault = affected_per_fault();
  std::array<std::uint64_t, fault_kind_count> counts{};
  for (std::size_t i = 0; i < per_fault.size(); ++i)
    counts[static_cast<std::size_t>(plan_.faults[i].kind)] += per_fault[i];
  return counts;
}

std::vector<Fault> FaultInjector::not_injected() const {
  std::vector<Fault> faults;
  for (const Fault& f : plan_.faults) {
    if (!injectable(f.kind)) faults.push_back(f);
  }
  return faults;
}

std::string FaultInjector::summary() const {
  const std::array<std::uint64_t, fault_kind_count> counts = affected_per_kind();
  std::string text;
  for (FaultKind kind : all_fault_kinds()) {
    const std::uint64_t n = counts[static_cast<std::size_t>(kind)];
    if (n > 0) text += (text.empty() ? "" : ", ") + std::string(to_string(kind)) + " " + std::to_string(n);
  }
  return text.empty() ? "nothing" : text;
}

}  // namespace collcheck
