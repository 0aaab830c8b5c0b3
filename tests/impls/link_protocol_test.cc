// The link protocol's two sides (impls/link/protocol.h) driven directly over a toy wire that drops,
// damages and repeats transmissions: in order, duplicates, gaps, checksums, silence, go-back-N with
// bounded retries; each check is also run on a deliberately broken receiver to show it can fail.
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <limits>
#include <set>
#include <utility>
#include <vector>

#include "impls/link/protocol.h"

namespace collcheck {
namespace {

using Transmission = std::pair<std::uint64_t, std::uint32_t>;  // (message, attempt)

// What the toy wire does to transmissions: dropped, damaged (a byte flipped after the checksum
// was taken), or followed by a copy. `always_drop`: every transmission of that message is lost.
struct Wire {
  std::set<Transmission> drop, damage, duplicate;
  std::set<std::uint64_t> always_drop;
};

// A judge: the receiver's own, or a broken one.
using Judge = std::function<PieceVerdict(const LinkReceiver&, const PieceLabel&, std::span<const std::byte>,
                                         std::size_t, const LinkSettings&)>;

PieceVerdict honest(const LinkReceiver& receiver, const PieceLabel& piece, std::span<const std::byte> data,
                    std::size_t bytes, const LinkSettings& settings) {
  return receiver.judge(piece, data, bytes, settings);
}

// Broken receivers: one that takes a duplicate again, one that takes whatever comes next.
PieceVerdict takes_duplicates(const LinkReceiver& receiver, const PieceLabel& piece, std::span<const std::byte> data,
                              std::size_t bytes, const LinkSettings& settings) {
  const PieceVerdict verdict = receiver.judge(piece, data, bytes, settings);
  return verdict == PieceVerdict::Duplicate ? PieceVerdict::Take : verdict;
}
PieceVerdict ignores_gaps(const LinkReceiver& receiver, const PieceLabel& piece, std::span<const std::byte> data,
                          std::size_t bytes, const LinkSettings& settings) {
  const PieceVerdict verdict = receiver.judge(piece, data, bytes, settings);
  return verdict == PieceVerdict::OutOfOrder ? PieceVerdict::Take : verdict;
}

struct Outcome {
  std::vector<std::uint64_t> taken;  // the first byte of every message taken, in order
  bool detected = false;             // unreliable: the receiver saw a fault and stopped
  bool gave_up = false;              // reliable: a message outlasted its retries
  int retransmissions = 0;
  bool right(std::uint64_t messages) const {
    if (detected || gave_up || taken.size() != messages) return false;
    for (std::uint64_t i = 0; i < messages; ++i) {
      if (taken[i] != i) return false;
    }
    return true;
  }
};

LinkSettings settings_of(bool reliable, bool checksums = true) {
  LinkProtocol protocol;
  protocol.reliable = reliable;
  protocol.checksums = checksums;
  protocol.retries = 3;
  protocol.timeout = 4;  // one round of the toy wire is one second: a retransmission interval of 4 / 6
  return resolve(protocol, kVirtualClock, 60);
}

// Sends `messages` one-piece messages (message m: 8 bytes of value m) from a LinkSender to a
// LinkReceiver over `wire`, one round per second: the sender transmits what it owes, the receiver
// judges every arrival, and, reliable, asks to go back on a gap, damage, or silence beyond its
// patience; the sender goes back (go-back-N) unless the message has been asked for too often.
using Arrivals = std::deque<std::pair<PieceLabel, std::vector<std::byte>>>;

// The two sides of the toy link and what has happened on it.
struct ToyLink {
  LinkSender sender;
  LinkReceiver receiver;
  RetransmitJitter jitter{1};
  Outcome outcome;
  std::uint64_t next = 0;  // the sender's next message to transmit

  // The sender transmits every message it owes; what the wire lets through arrives.
  Arrivals transmit(const Wire& wire, std::uint64_t messages) {
    Arrivals arrivals;
    for (; next < messages; ++next) {
      std::vector<std::byte> payload(8, static_cast<std::byte>(next));
      const Transmission transmission{next, sender.attempt(next)};
      const PieceLabel label{next, 0, payload.size(), checksum(payload), transmission.second};
      if (wire.drop.count(transmission) > 0 || wire.always_drop.count(next) > 0) continue;
      if (wire.damage.count(transmission) > 0) payload[0] ^= std::byte{0x10};
      arrivals.emplace_back(label, payload);
      if (wire.duplicate.count(transmission) > 0) arrivals.emplace_back(label, payload);
    }
    return arrivals;
  }

  // The receiver judges every arrival; true when it asked the sender to go back. Unreliable, the
  // first fault ends the run (outcome.detected).
  bool receive(const Arrivals& arrivals, const Judge& judge, const LinkSettings& settings, double now) {
    bool asked = false;
    for (const auto& [label, payload] : arrivals) {
      const PieceVerdict verdict = judge(receiver, label, payload, payload.size(), settings);
      if (verdict == PieceVerdict::Duplicate) continue;
      if (verdict == PieceVerdict::Take) {
        receiver.take(label.bytes, payload.size(), now);
        outcome.taken.push_back(static_cast<std::uint64_t>(payload[0]));
        continue;
      }
      if (!settings.reliable) {
        outcome.detected = true;
        return false;
      }
      asked = receiver.ask(now, settings, &jitter) || asked;
    }
    return asked;
  }

  // Go-back-N to the message the receiver asked for; false when that one has been asked for too
  // often (outcome.gave_up).
  bool go_back(const LinkSettings& settings) {
    const std::uint64_t from = receiver.due_message();
    if (!sender.asked_again(from, settings)) {
      outcome.gave_up = true;
      return false;
    }
    for (std::uint64_t sequence = from; sequence < next; ++sequence) {
      sender.retransmit(sequence);
      ++outcome.retransmissions;
    }
    next = from;
    return true;
  }
};

Outcome run_link(const Wire& wire, const LinkSettings& settings, std::uint64_t messages, const Judge& judge = honest) {
  ToyLink link;
  for (int round = 0; round < 100 && link.receiver.due_message() < messages; ++round) {
    const double now = round;
    const Arrivals arrivals = link.transmit(wire, messages);
    bool asked = link.receive(arrivals, judge, settings, now);
    if (link.outcome.detected) return link.outcome;
    if (!settings.reliable) continue;
    if (!asked && link.receiver.due_message() < messages && arrivals.empty() &&
        link.receiver.impatient(now, settings)) {
      asked = link.receiver.ask(now, settings, &link.jitter);
    }
    if (asked && !link.go_back(settings)) return link.outcome;
  }
  return link.outcome;
}

TEST(LinkProtocol, TakesMessagesInOrder) {
  const Outcome outcome = run_link(Wire{}, settings_of(false), 6);
  EXPECT_TRUE(outcome.right(6));
  EXPECT_EQ(outcome.retransmissions, 0);
}

// Catches a receiver that takes a repeated message twice.
TEST(LinkProtocol, DropsDuplicates) {
  Wire wire;
  wire.duplicate = {{1, 0}, {4, 0}};
  EXPECT_TRUE(run_link(wire, settings_of(false), 6).right(6));
  EXPECT_FALSE(run_link(wire, settings_of(false), 6, takes_duplicates).right(6));
}

// Catches a receiver that does not notice a missing message.
TEST(LinkProtocol, DetectsAGap) {
  Wire wire;
  wire.drop = {{2, 0}};
  const Outcome outcome = run_link(wire, settings_of(false), 6);
  EXPECT_TRUE(outcome.detected);
  EXPECT_EQ(outcome.taken, (std::vector<std::uint64_t>{0, 1}));
  const Outcome broken = run_link(wire, settings_of(false), 6, ignores_gaps);
  EXPECT_FALSE(broken.detected);
  EXPECT_FALSE(broken.right(6));
}

// Catches a receiver that uses bytes unchecked (the mutant no-checksum).
TEST(LinkProtocol, DetectsABadChecksum) {
  Wire wire;
  wire.damage = {{3, 0}};
  EXPECT_TRUE(run_link(wire, settings_of(false), 6).detected);
  const Outcome unchecked = run_link(wire, settings_of(false, false), 6);
  EXPECT_FALSE(unchecked.detected);
  EXPECT_FALSE(unchecked.right(6));
}

// Go-back-N: a lost, a damaged and a repeated message all end right, by retransmission.
TEST(LinkProtocol, RecoversByGoingBack) {
  Wire wire;
  wire.drop = {{1, 0}};
  wire.damage = {{3, 0}, {3, 1}};
  wire.duplicate = {{2, 1}};
  const Outcome outcome = run_link(wire, settings_of(true), 6);
  EXPECT_TRUE(outcome.right(6));
  EXPECT_GT(outcome.retransmissions, 0);
  EXPECT_FALSE(run_link(wire, settings_of(true), 6, takes_duplicates).right(6));
}

// The last message lost: nothing arrives to show the gap, so the receiver's patience runs out.
TEST(LinkProtocol, AsksAgainAfterSilence) {
  Wire wire;
  wire.drop = {{5, 0}};
  EXPECT_TRUE(run_link(wire, settings_of(true), 6).right(6));
  EXPECT_FALSE(run_link(wire, settings_of(false), 6).right(6));  // unreliable: the timeout's (executor's) case
}

// A message that never gets through: the sender gives up after `retries` requests, not before.
TEST(LinkProtocol, RetriesAreBounded) {
  Wire wire;
  wire.always_drop = {2};
  const Outcome outcome = run_link(wire, settings_of(true), 6);
  EXPECT_TRUE(outcome.gave_up);
  EXPECT_EQ(outcome.taken, (std::vector<std::uint64_t>{0, 1}));
  LinkSender sender;
  const LinkSettings settings = settings_of(true);
  for (int ask = 0; ask < settings.retries; ++ask) EXPECT_TRUE(sender.asked_again(7, settings)) << ask;
  EXPECT_FALSE(sender.asked_again(7, settings));
  EXPECT_TRUE(sender.asked_again(8, settings));  // each message counts its own
}

// The sender's records of each message's transmissions and requests: kept per message from the
// first one asked about, an earlier one added in front, forgotten as the receiver takes them (a
// forgotten message is at attempt 0 again), and kept right through many acknowledgements that each
// forget a few while many more are kept (the storage's front dropped as it goes).
TEST(LinkProtocol, TheSenderKeepsEachMessagesAttemptsUntilTaken) {
  LinkSender sender;
  EXPECT_EQ(sender.attempt(5), 0u);
  EXPECT_EQ(sender.retransmit(5), 1u);
  EXPECT_EQ(sender.retransmit(5), 2u);
  EXPECT_EQ(sender.retransmit(3), 1u);  // before the first kept: added in front
  EXPECT_EQ(sender.attempt(3), 1u);
  EXPECT_EQ(sender.attempt(4), 0u);
  EXPECT_EQ(sender.attempt(5), 2u);
  sender.acknowledged(4);
  EXPECT_EQ(sender.attempt(3), 0u) << "taken: forgotten";
  EXPECT_EQ(sender.attempt(5), 2u);
  sender.acknowledged(100);
  EXPECT_EQ(sender.attempt(5), 0u);
  EXPECT_EQ(sender.retransmit(99), 1u) << "before what was acknowledged, kept anew";
  sender.acknowledged(100);
  // Message s sent again 1 + s % 3 times, so that a record read from the wrong place shows.
  const auto attempts = [](std::uint64_t sequence) { return static_cast<std::uint32_t>(1 + sequence % 3); };
  for (std::uint64_t sequence = 100; sequence < 1100; ++sequence) {
    for (std::uint32_t again = 0; again < attempts(sequence); ++again) sender.retransmit(sequence);
  }
  for (std::uint64_t taken = 101; taken < 1100; taken += 7) {
    sender.acknowledged(taken);
    ASSERT_EQ(sender.attempt(taken - 1), 0u) << taken;
    ASSERT_EQ(sender.attempt(taken), attempts(taken)) << taken;
    ASSERT_EQ(sender.attempt(1099), attempts(1099)) << taken;
    // A message just forgotten, asked about again, starts afresh (its old record is not reused).
    ASSERT_EQ(sender.retransmit(taken - 1), 1u) << taken;
    ASSERT_EQ(sender.attempt(taken), attempts(taken)) << taken;
  }
}

// Pieces of one message: taken at their offsets; a repeated piece is a duplicate, a skipped one a
// gap, one past the message's end refused.
TEST(LinkProtocol, JudgesPiecesOfAMessage) {
  const LinkSettings settings = settings_of(false);
  const std::vector<std::byte> data(4, std::byte{7});
  const std::uint64_t sum = checksum(data);
  LinkReceiver receiver;
  EXPECT_EQ(receiver.judge({0, 0, 4, sum, 0}, data, 12, settings), PieceVerdict::Take);
  EXPECT_FALSE(receiver.take(4, 12, 0));
  EXPECT_EQ(receiver.judge({0, 0, 4, sum, 1}, data, 12, settings), PieceVerdict::Duplicate);
  EXPECT_EQ(receiver.judge({0, 8, 4, sum, 0}, data, 12, settings), PieceVerdict::OutOfOrder);
  EXPECT_EQ(receiver.judge({0, 4, 4, sum + 1, 0}, data, 12, settings), PieceVerdict::Damaged);
  EXPECT_EQ(receiver.judge({0, 4, 4, sum, 0}, data, 6, settings), PieceVerdict::Overlong);
  EXPECT_EQ(receiver.judge({0, 4, 4, sum, 0}, data, 12, settings), PieceVerdict::Take);
  EXPECT_FALSE(receiver.take(4, 12, 0));
  EXPECT_TRUE(receiver.take(4, 12, 0));
  EXPECT_EQ(receiver.due_message(), 1u);
  EXPECT_EQ(receiver.due_byte(), 0u);
}

// One request per position and retransmission interval; a new position may be asked for at once.
TEST(LinkProtocol, AsksOncePerPositionAndInterval) {
  const LinkSettings settings = settings_of(true);
  LinkReceiver receiver;
  RetransmitJitter jitter(3);
  EXPECT_TRUE(receiver.ask(10, settings, &jitter));
  EXPECT_FALSE(receiver.ask(10 + settings.retransmit / 2, settings, &jitter));
  EXPECT_TRUE(receiver.ask(10 + settings.retransmit * 1.01, settings, &jitter));
  receiver.take(0, 0, 11);
  EXPECT_TRUE(receiver.ask(11, settings, &jitter));
  EXPECT_FALSE(receiver.impatient(11 + settings.retransmit * 0.74, settings));
  EXPECT_TRUE(receiver.impatient(11 + settings.retransmit * 1.26, settings));
}

// A user's timeout is clamped like the default, to the clock's share of the deadline, so that a
// lost message is detected before the run is a hang; a wait is extended by its message's travel.
TEST(LinkProtocol, TimeoutsAreClampedBelowTheDeadlineAndScaleWithTheMessage) {
  LinkProtocol patient;
  patient.timeout = 61;
  EXPECT_DOUBLE_EQ(resolve(patient, kVirtualClock, 60).timeout, 30);
  EXPECT_DOUBLE_EQ(resolve(patient, kRealClock, 48).timeout, 48);
  EXPECT_DOUBLE_EQ(resolve(patient, kVirtualClock, 1000).timeout, 61);
  // No deadline (none given, or infinite): nothing to clamp to.
  EXPECT_DOUBLE_EQ(resolve(patient, kVirtualClock, 0).timeout, 61);
  EXPECT_DOUBLE_EQ(resolve(LinkProtocol{}, kVirtualClock, std::numeric_limits<double>::infinity()).timeout, 0.5);
  const LinkSettings settings = resolve(LinkProtocol{}, kVirtualClock, 60);
  EXPECT_DOUBLE_EQ(settings.timeout_for(0), 0.5);
  EXPECT_DOUBLE_EQ(settings.timeout_for(2.5), 3);
}

TEST(LinkProtocol, SettingsAndTimers) {
  const LinkSettings virtual_time = resolve(LinkProtocol{}, kVirtualClock, 0.4);
  EXPECT_DOUBLE_EQ(virtual_time.timeout, 0.2);  // half the deadline, under 0.5 s
  EXPECT_DOUBLE_EQ(virtual_time.retransmit, 0.2 / (LinkProtocol{}.retries + kRetransmitSpare));
  EXPECT_DOUBLE_EQ(resolve(LinkProtocol{}, kRealClock, 60).timeout, 2);
  LinkProtocol never;
  never.timeout = -1;
  EXPECT_TRUE(resolve(never, kRealClock, 60).forever);
  RetransmitJitter jitter(5), again(5);
  std::set<double> drawn;
  for (int i = 0; i < 100; ++i) {
    const double interval = jitter.draw(1);
    EXPECT_EQ(interval, again.draw(1));
    EXPECT_GE(interval, 1 - kRetransmitJitter);
    EXPECT_LE(interval, 1 + kRetransmitJitter);
    drawn.insert(interval);
  }
  EXPECT_GT(drawn.size(), 90u);
  // The last message of a call is never held back by a reorder: it has no next one.
  EXPECT_TRUE(LinkSender::may_hold(0, 3));
  EXPECT_TRUE(LinkSender::may_hold(4, 3));
  EXPECT_FALSE(LinkSender::may_hold(5, 3));
  EXPECT_FALSE(LinkSender::may_hold(0, 1));
}

// The words a link fault ends a run with, which sim and proc share: whole messages read as
// messages, pieces of a longer message name their bytes.
TEST(LinkProtocol, FaultsReadTheSameOnEveryExecutor) {
  LinkReceiver receiver;
  EXPECT_EQ(link_stream_text("rank 1", "switch 0", 2, 3), "rank 1: from switch 0 on channel 2 (call 3)");
  EXPECT_EQ(link_fault_text(PieceVerdict::OutOfOrder, PieceLabel{1, 0, 16, 0, 0}, receiver, 16),
            "message 1 arrived where message 0 was due (a message lost or out of order)");
  EXPECT_EQ(link_fault_text(PieceVerdict::Damaged, PieceLabel{0, 0, 16, 0, 2}, receiver, 16),
            "message 0 (attempt 2) failed its checksum");
  receiver.take(8, 16, 0);  // the first half of message 0 taken
  EXPECT_EQ(link_fault_text(PieceVerdict::OutOfOrder, PieceLabel{1, 0, 8, 0, 0}, receiver, 16),
            "byte 0 of message 1 arrived where byte 8 of message 0 was due (a message lost or out of order)");
  EXPECT_EQ(link_fault_text(PieceVerdict::Damaged, PieceLabel{0, 8, 8, 0, 1}, receiver, 16),
            "message 0 (attempt 1) failed its checksum in the piece at byte 8 (8 bytes)");
  EXPECT_EQ(link_fault_text(PieceVerdict::Overlong, PieceLabel{0, 8, 12, 0, 0}, receiver, 16),
            "a piece of 12 bytes at byte 8 of message 0, which has 16");
  EXPECT_EQ(link_gave_up_text(3, settings_of(true)), "message 3 not taken after 3 retransmissions");
}

}  // namespace
}  // namespace collcheck
