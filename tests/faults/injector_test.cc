// The fault injector on `sim`: each kind bites (drops and corruption are detected by the link
// protocol, or retransmitted when reliable; delays arrive later but right; without checksums a
// corruption reaches the output), the seed alone decides the trace, the empty plan changes nothing.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "faults/injector.h"
#include "impls/algorithms/algorithms.h"
#include "impls/sim/sim_backend.h"
#include "impls/sim/simulator.h"
#include "reference/oracle.h"
#include "tests/support/cases.h"

namespace collcheck {
namespace {

constexpr int nranks = 4;
constexpr double deadline = 1.0;  // virtual seconds; a fault-free run takes microseconds

Case ring_case() {
  Case c = testing::make_case(Collective::AllReduce, DType::Float32, RedOp::Sum, 4096, nranks);
  c.seed = 77;
  return c;
}

FaultPlan plan_of(const std::string& text) {
  Result<FaultPlan> plan = parse_fault_plan(text);
  EXPECT_TRUE(plan.ok()) << plan.error().text();
  return plan.ok() ? *plan : FaultPlan{};
}

// Runs the ring all-reduce on sim_fabric with `injector` as the hook (null: none).
SimulatedRun run(FaultInjector* injector, const LinkProtocol& protocol = {}) {
  Result<Schedule> schedule = make_schedule("ring", ring_case());
  EXPECT_TRUE(schedule.ok()) << schedule.error().text();
  SimulationOptions options(3, injector, true);
  options.protocol = protocol;
  return simulate(*schedule, sim_fabric(nranks), options);
}

SimulatedRun run(const std::string& plan, std::uint64_t seed = 1, const LinkProtocol& protocol = {}) {
  FaultInjector injector(plan_of(plan), seed, deadline);
  return run(&injector, protocol);
}

LinkProtocol reliable() {
  LinkProtocol protocol;
  protocol.reliable = true;
  return protocol;
}

// Ranks whose output the oracle rejects.
int wrong_ranks(const SimulatedRun& result) {
  Oracle oracle(ring_case());
  int wrong = 0;
  for (int rank = 0; rank < nranks; ++rank) {
    wrong += compare(oracle.expected(rank), rank, result.outputs[static_cast<std::size_t>(rank)]).ok ? 0 : 1;
  }
  return wrong;
}

TEST(FaultInjector, TheFaultFreeRunIsCorrect) {
  const SimulatedRun clean = run(nullptr);
  ASSERT_TRUE(clean.completed) << clean.error;
  EXPECT_EQ(wrong_ranks(clean), 0);
  EXPECT_LT(clean.time, 0.001);
}

TEST(FaultInjector, TheEmptyPlanGivesTheFaultFreeTrace) {
  const SimulatedRun clean = run(nullptr);
  FaultInjector injector(FaultPlan{}, 99, deadline);
  const SimulatedRun none = run(&injector);
  ASSERT_TRUE(none.completed) << none.error;
  EXPECT_EQ(none.trace, clean.trace);
  EXPECT_EQ(none.time, clean.time);
  EXPECT_EQ(none.outputs, clean.outputs);
  EXPECT_EQ(injector.summary(), "nothing");
  EXPECT_EQ(injector.deadline(), deadline);
}

// Lost messages are detected (a gap at once, a silent stream at the timeout, half the 1 s
// deadline), never left waiting; permanent losses stay detected even when reliable.
TEST(FaultInjector, DropsAreDetectedNotHung) {
  for (const std::string plan :
       {"drop:link=0->1:times=1", "drop:p=0.3", "drop:rank=2:after=2", "drop:offset=20000", "link-down:link=1->2",
        "link-flap:link=3->0:period=0.001", "stop:rank=1", "kill:rank=2"}) {
    FaultInjector injector(plan_of(plan), 5, deadline);
    const SimulatedRun result = run(&injector);
    EXPECT_FALSE(result.completed) << plan;
    EXPECT_TRUE(result.detected) << plan << ": " << result.error;
    EXPECT_LE(result.time, deadline / 2 + 0.001) << plan;
    EXPECT_GT(injector.affected_per_fault().at(0), 0u) << plan;
  }
  for (const std::string plan : {"link-down:link=1->2", "stop:rank=1", "kill:rank=2", "drop:rank=2:after=2"}) {
    const SimulatedRun result = run(plan, 5, reliable());
    EXPECT_TRUE(result.detected) << plan << ": " << result.error;
    const std::string gave_up = "not taken after " + std::to_string(LinkProtocol{}.retries) + " retransmissions";
    EXPECT_NE(result.error.find(gave_up), std::string::npos) << plan << ": " << result.error;
    EXPECT_LE(result.time, deadline / 2 + 0.01) << plan;
  }
}

// Transient faults end right when the protocol retransmits: the reliability contract.
TEST(FaultInjector, ReliableModeSurvivesTransientFaults) {
  for (const std::string plan :
       {"drop:link=0->1:times=1", "drop:p=0.3", "corrupt:p=0.2:bits=3", "corrupt:times=4", "duplicate:p=0.5",
        "reorder:link=1->2:times=2", "link-flap:link=3->0:period=1", "link-flap:link=3->0:period=0.5",
        "drop:p=0.1;corrupt:p=0.1;duplicate:p=0.1;reorder:p=0.1;delay:jitter=1"}) {
    const SimulatedRun result = run(plan, 9, reliable());
    ASSERT_TRUE(result.completed) << plan << ": " << result.error;
    EXPECT_EQ(wrong_ranks(result), 0) << plan;
    EXPECT_GT(result.retransmissions + result.discarded, 0u) << plan;
  }
}

TEST(FaultInjector, CountsWhatItDid) {
  FaultInjector injector(plan_of("drop:link=0->1:times=1;delay:rank=3:ms=1;duplicate:rank=1"), 5, deadline);
  run(&injector, reliable());
  EXPECT_EQ(injector.affected_per_fault().at(0), 1u);
  EXPECT_GT(injector.affected_per_fault().at(1), 0u);
  EXPECT_GT(injector.affected_per_fault().at(2), 0u);
  EXPECT_EQ(injector.affected_per_kind()[static_cast<std::size_t>(FaultKind::Drop)], 1u);
  EXPECT_EQ(injector.summary().rfind("drop 1, delay ", 0), 0u) << injector.summary();
}

// Faults that trigger after the run is over, or too unlikely to hit any message, are invisible.
TEST(FaultInjector, FaultsAfterTheRunChangeNothing) {
  const SimulatedRun clean = run(nullptr);
  for (const std::string plan :
       {"link-down:link=1->2:at=0.5", "kill:rank=0:at=0.5", "drop:after=100000", "drop:p=1e-12"}) {
    const SimulatedRun late = run(plan);
    ASSERT_TRUE(late.completed) << plan << ": " << late.error;
    EXPECT_EQ(late.trace, clean.trace) << plan;
  }
}

TEST(FaultInjector, DelaysKeepTheResultButArriveLater) {
  const SimulatedRun clean = run(nullptr);
  for (const std::string plan :
       {"delay:rank=1:ms=5", "delay:link=2->3:jitter=2", "straggler:rank=3:factor=50", "straggler:rank=0:ms=0.5"}) {
    const SimulatedRun late = run(plan);
    ASSERT_TRUE(late.completed) << plan << ": " << late.error;
    EXPECT_EQ(wrong_ranks(late), 0) << plan;
    EXPECT_GT(late.time, clean.time) << plan;
    EXPECT_NE(late.trace, clean.trace) << plan;
  }
  EXPECT_GE(run("delay:rank=1:ms=5").time, clean.time + 0.005);
}

// Checksums turn a corruption into `detected`; without them it reaches the output unnoticed,
// which is what `corrupt` means (mutant:no-checksum).
TEST(FaultInjector, CorruptionIsDetectedAndReachesTheOutputOnlyUnchecked) {
  LinkProtocol unchecked;
  unchecked.checksums = false;
  for (const std::string plan :
       {"corrupt:link=0->1:times=1", "corrupt:rank=2:after=3:bits=3:times=1", "corrupt:p=0.1"}) {
    FaultInjector injector(plan_of(plan), 11, deadline);
    const SimulatedRun checked = run(&injector);
    EXPECT_TRUE(checked.detected) << plan << ": " << checked.error;
    EXPECT_NE(checked.error.find("failed its checksum"), std::string::npos) << plan << ": " << checked.error;
    const SimulatedRun result = run(plan, 11, unchecked);
    ASSERT_TRUE(result.completed) << plan << ": " << result.error;
    EXPECT_GT(wrong_ranks(result), 0) << plan << " went unnoticed";
  }
}

TEST(FaultInjector, TheSeedDecidesTheTrace) {
  const std::string plan = "delay:jitter=3:p=0.5;corrupt:p=0.2:bits=4";
  const SimulatedRun first = run(plan, 42);
  const SimulatedRun again = run(plan, 42);
  EXPECT_EQ(first.trace, again.trace);
  EXPECT_EQ(first.time, again.time);
  EXPECT_EQ(first.outputs, again.outputs);
  EXPECT_NE(run(plan, 43).trace, first.trace);
}

// Served from one thread (the simulator's loop) the injector takes no lock and draws the same.
TEST(FaultInjector, OneThreadDrawsAsShared) {
  const std::string plan = "delay:jitter=3:p=0.5;corrupt:p=0.2:bits=4;drop:p=0.1";
  const SimulatedRun shared = run(plan, 42, reliable());
  FaultInjector alone(plan_of(plan), 42, deadline);
  alone.serve_one_thread();
  const SimulatedRun one_thread = run(&alone, reliable());
  EXPECT_EQ(one_thread.trace, shared.trace);
  EXPECT_EQ(one_thread.outputs, shared.outputs);
  EXPECT_GT(one_thread.retransmissions, 0u);
}

// A message's draws are its own: the same whatever was sent before it, by its link or another
// (links here differ in one of from, to, channel), as a fresh injector that sees it alone draws
// them, also where the sender keeps a memo per link (the injector keeps there the link's part of
// its first fault's draws; one that kept it for the second fault too, or read an empty memo as a
// start, fails here).
TEST(FaultInjector, AMessagesDrawsDoNotDependOnWhatWasSentBefore) {
  const std::string plan = "delay:jitter=3:p=0.5;drop:p=0.3";
  std::vector<Message> link_after_link;
  for (const auto& [from, to, channel] : {std::tuple{0, 1, 0}, {0, 1, 1}, {0, 2, 0}, {3, 1, 0}}) {
    for (std::uint64_t sequence = 0; sequence < 8; ++sequence) {
      for (int attempt = 0; attempt < 2; ++attempt) {
        link_after_link.push_back(Message{from, to, channel, sequence, 64, 0, attempt});
      }
    }
  }
  std::vector<Message> interleaved;
  for (std::size_t k = 0; k < 16; ++k) {
    for (std::size_t link = 0; link < 4; ++link) interleaved.push_back(link_after_link[link * 16 + k]);
  }
  // A sender's memos (Message::link_memo), one per link, handed with the link's messages in turn.
  std::vector<LinkMemo> memos(4);
  std::vector<Message> with_memos = interleaved;
  for (std::size_t k = 0; k < with_memos.size(); ++k) with_memos[k].link_memo = &memos[k % 4];
  std::vector<std::byte> payload(64);
  const auto decision_alone = [&](Message message) {
    message.link_memo = nullptr;
    FaultInjector fresh(plan_of(plan), 42, deadline);
    const SendDecision decision = fresh.on_send(message, payload);
    return std::pair{decision.drop, decision.delay};
  };
  std::size_t drops = 0;
  for (const std::vector<Message>* in_order : {&link_after_link, &interleaved, &with_memos}) {
    FaultInjector injector(plan_of(plan), 42, deadline);
    for (const Message& message : *in_order) {
      const SendDecision decision = injector.on_send(message, payload);
      EXPECT_EQ(std::pair(decision.drop, decision.delay), decision_alone(message))
          << message.from << "->" << message.to << " channel " << message.channel << " message " << message.sequence
          << " attempt " << message.attempt;
      drops += decision.drop ? 1 : 0;
    }
  }
  EXPECT_GT(drops, 0u);
  for (const LinkMemo& memo : memos) EXPECT_NE(memo.word, 0u);  // the memos were used
}

// A duplicate is dropped by sequence number; a reordered message is a gap unless reliable.
TEST(FaultInjector, DuplicatesAreDroppedAndReordersDetected) {
  const SimulatedRun clean = run(nullptr);
  const SimulatedRun twice = run("duplicate:p=0.5");
  ASSERT_TRUE(twice.completed) << twice.error;
  EXPECT_GT(twice.discarded, 0u);
  EXPECT_EQ(twice.outputs, clean.outputs);
  const SimulatedRun swapped = run("reorder:link=1->2:times=1");
  EXPECT_TRUE(swapped.detected);
  EXPECT_NE(swapped.error.find("lost or out of order"), std::string::npos) << swapped.error;
  FaultInjector injector(plan_of("drop:rank=0:at=0.5;duplicate;reorder:link=0->1"), 1, deadline);
  EXPECT_TRUE(injector.not_injected().empty());
}

// The bytes `plan` (one corrupt fault) changes in a zeroed payload of `size` bytes, over a few
// messages (each draws its bits, and a boundary, afresh).
std::vector<std::size_t> corrupted_bytes(const std::string& plan, std::size_t size) {
  FaultInjector injector(plan_of(plan), 3, deadline);
  std::vector<std::size_t> changed;
  for (std::uint64_t sequence = 0; sequence < 16; ++sequence) {
    std::vector<std::byte> payload(size);
    injector.on_send(Message{0, 1, 0, sequence, size, 0, 0, 0}, payload);
    for (std::size_t i = 0; i < size; ++i) {
      if (payload[i] != std::byte{0} && std::find(changed.begin(), changed.end(), i) == changed.end())
        changed.push_back(i);
    }
  }
  std::sort(changed.begin(), changed.end());
  return changed;
}

// where= puts the flips at the first or last byte, in the tail after the last whole word (the
// last byte when there is none), or either side of a power of two: never elsewhere.
TEST(FaultInjector, CorruptionFlipsBitsWhereThePlanPutsThem) {
  using Bytes = std::vector<std::size_t>;
  EXPECT_EQ(corrupted_bytes("corrupt:where=first:bits=8", 21), Bytes{0});
  EXPECT_EQ(corrupted_bytes("corrupt:where=last:bits=3", 21), Bytes{20});
  EXPECT_EQ(corrupted_bytes("corrupt:where=tail:bits=40", 21), (Bytes{16, 17, 18, 19, 20}));
  EXPECT_EQ(corrupted_bytes("corrupt:where=tail:bits=64", 24), Bytes{23});
  EXPECT_EQ(corrupted_bytes("corrupt:where=boundary:bits=16", 100), (Bytes{7, 8, 15, 16, 31, 32, 63, 64}));
  EXPECT_EQ(corrupted_bytes("corrupt:where=boundary:bits=64", 3), (Bytes{0, 1, 2})) << "no boundary: anywhere";
  EXPECT_GT(corrupted_bytes("corrupt:bits=4", 100).size(), 20u) << "any byte";
}

// message= takes only the first or the last message of each call of a stream (4 messages a
// call here), sent or sent again; a stream that does not know its calls (sockets) has a first.
TEST(FaultInjector, PositionsTakeTheFirstOrLastMessageOfEachCall) {
  const auto fired = [](const std::string& plan, std::uint64_t per_call) {
    FaultInjector injector(plan_of(plan), 1, deadline);
    std::vector<std::uint64_t> dropped;
    for (std::uint64_t sequence = 0; sequence < 8; ++sequence) {
      for (int attempt = 0; attempt < 2; ++attempt) {
        std::vector<std::byte> payload(8);
        if (injector.on_send(Message{0, 1, 0, sequence, 8, 0, attempt, per_call}, payload).drop) {
          dropped.push_back(sequence);
        }
      }
    }
    return dropped;
  };
  using Sequences = std::vector<std::uint64_t>;
  EXPECT_EQ(fired("drop:message=first", 4), (Sequences{0, 0, 4, 4}));
  EXPECT_EQ(fired("drop:message=last", 4), (Sequences{3, 3, 7, 7}));
  EXPECT_EQ(fired("drop:message=last:times=1", 4), Sequences{3});
  EXPECT_EQ(fired("drop:message=first", 0), (Sequences{0, 0}));
  EXPECT_EQ(fired("drop:message=last", 0), Sequences{});
}

// On the simulator, a corruption of each stream's last message is detected by our ring, and
// used unchecked by a receiver that skips that message's checksum (mutant:last-unchecked).
TEST(FaultInjector, TheLastMessageOfAStreamIsReached) {
  FaultInjector injector(plan_of("corrupt:link=1->2:message=last"), 11, deadline);
  const SimulatedRun checked = run(&injector);
  EXPECT_TRUE(checked.detected) << checked.error;
  EXPECT_EQ(injector.affected_per_fault().at(0), 1u);
  LinkProtocol last_unchecked;
  last_unchecked.check_last = false;
  const SimulatedRun result = run("corrupt:link=1->2:message=last", 11, last_unchecked);
  ASSERT_TRUE(result.completed) << result.error;
  EXPECT_GT(wrong_ranks(result), 0);
  const SimulatedRun earlier = run("corrupt:link=1->2:times=1", 11, last_unchecked);
  EXPECT_TRUE(earlier.detected) << "only the last message goes unchecked";
}

}  // namespace
}  // namespace collcheck
