// The `sim` transport: determinism from the seed, predicted times against the alpha-beta model,
// how the link protocol reports a lost message, and calls back to back without a barrier. What
// every backend must do (the oracle on fixed cases, ...) is in tests/conformance/.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <set>
#include <thread>
#include <vector>

#include "impls/algorithms/algorithms.h"
#include "impls/sim/sim_backend.h"
#include "impls/sim/simulator.h"
#include "reference/memory.h"
#include "reference/oracle.h"
#include "tests/support/cases.h"

namespace collcheck {
namespace {

Case make_case(Collective collective, DType dtype, RedOp op, std::size_t count, int nranks) {
  Case c = testing::make_case(collective, dtype, op, count, nranks);
  c.seed = 1234;
  return c;
}

// A topology with enough GPUs and aggregating switches for any algorithm.
const Topology& fabric_for(int nranks) {
  static std::map<int, Topology> cache;
  auto found = cache.find(nranks);
  if (found != cache.end()) return found->second;
  const int nodes = (nranks + 7) / 8;
  Result<Topology> t = make_topology(nodes == 1 ? "dgx-h100" : "ib-fat-tree:" + std::to_string(nodes));
  EXPECT_TRUE(t.ok()) << t.error().text();
  return cache.emplace(nranks, std::move(t).value()).first->second;
}

TEST(Simulator, TheSameSeedGivesTheSameTraceAndOtherSeedsOtherTraces) {
  const Case c = make_case(Collective::AllReduce, DType::Float32, RedOp::Sum, 1000, 8);
  Result<Schedule> schedule = make_schedule("ring", c, Knobs{16, 2, 4});
  ASSERT_TRUE(schedule.ok()) << schedule.error().text();
  const Topology& topology = fabric_for(8);
  const SimulatedRun first = simulate(*schedule, topology, SimulationOptions(7, nullptr, true));
  const SimulatedRun again = simulate(*schedule, topology, SimulationOptions(7, nullptr, true));
  ASSERT_TRUE(first.completed) << first.error;
  EXPECT_EQ(first.trace, again.trace);
  EXPECT_EQ(first.outputs, again.outputs);
  std::set<std::uint64_t> traces{first.trace};
  for (std::uint64_t seed = 8; seed < 12; ++seed) {
    const SimulatedRun other = simulate(*schedule, topology, SimulationOptions(seed, nullptr, true));
    traces.insert(other.trace);
    EXPECT_EQ(other.outputs, first.outputs) << "exact inputs: every interleaving gives the same bits";
  }
  EXPECT_GT(traces.size(), 3u);
}

TEST(Simulator, RingAllReduceTimeMatchesTheAlphaBetaModel) {
  // On a uniform ring, a non-pipelined ring all-reduce takes 2(p-1) steps of one latency
  // plus (n/p) bytes over the bandwidth each: 2(p-1)α + 2(p-1)/p · n · β.
  for (int p : {2, 4, 8, 16}) {
    const std::size_t count = 1 << 20;  // elements; f32
    const Case c = make_case(Collective::AllReduce, DType::Float32, RedOp::Sum, count, p);
    Result<Schedule> schedule = make_schedule("ring", c, Knobs{});
    ASSERT_TRUE(schedule.ok()) << schedule.error().text();
    Result<Topology> ring = make_topology("ring:" + std::to_string(p));
    ASSERT_TRUE(ring.ok()) << ring.error().text();
    const SimulatedRun run = simulate(*schedule, *ring, SimulationOptions(0, nullptr, false));
    ASSERT_TRUE(run.completed) << run.error;
    const double alpha = ring->links[0].latency, beta = 1 / ring->links[0].bandwidth;
    const double bytes = static_cast<double>(count * 4);
    const double model = 2 * (p - 1) * alpha + 2.0 * (p - 1) / p * bytes * beta;
    EXPECT_NEAR(run.time, model, 0.05 * model) << "p=" << p;
  }
}

double predicted(const std::string& algorithm, Collective collective, std::size_t count, int nranks,
                 const std::string& topology) {
  const Case c = make_case(collective, DType::Float32, RedOp::Sum, count, nranks);
  Result<Schedule> schedule = make_schedule(algorithm, c, Knobs{});
  EXPECT_TRUE(schedule.ok()) << schedule.error().text();
  Result<Topology> t = make_topology(topology);
  EXPECT_TRUE(t.ok()) << t.error().text();
  const SimulatedRun run = simulate(*schedule, *t, SimulationOptions(0, nullptr, false));
  EXPECT_TRUE(run.completed) << run.error;
  return run.time;
}

TEST(Simulator, TreeAndInNetworkWinOnSmallMessages) {
  // Small all-reduces are latency-bound: the ring's 2(p-1) steps lose to a tree's 2 log p
  // and to the switch's one round trip.
  for (auto [nranks, topology] : {std::pair{8, "dgx-h100"}, std::pair{32, "ib-fat-tree:4"}}) {
    const double ring = predicted("ring", Collective::AllReduce, 64, nranks, topology);
    EXPECT_LT(predicted("tree", Collective::AllReduce, 64, nranks, topology), ring) << topology;
    EXPECT_LT(predicted("innet", Collective::AllReduce, 64, nranks, topology), ring) << topology;
  }
}

// A hook that drops one message of rank 2's: its successor sees the gap, or, when the message
// was the stream's last, waits for it until the protocol's timeout.
class DropOne final : public LinkHook {
 public:
  explicit DropOne(std::uint64_t sequence) : sequence_(sequence) {}
  SendDecision on_send(const Message& message, std::span<std::byte>) override {
    ++seen;
    SendDecision decision;
    decision.drop = message.from == 2 && message.sequence == sequence_ && message.attempt == 0;
    return decision;
  }
  double deadline() const override { return 2; }
  int seen = 0;

 private:
  std::uint64_t sequence_;
};

TEST(Simulator, AMissingMessageIsDetectedNotHung) {
  const Case c = make_case(Collective::AllReduce, DType::Float32, RedOp::Sum, 64, 4);
  Result<Schedule> schedule = make_schedule("ring", c, Knobs{});
  ASSERT_TRUE(schedule.ok());
  DropOne first(0);
  const SimulatedRun gap = simulate(*schedule, fabric_for(4), SimulationOptions(0, &first, true));
  EXPECT_FALSE(gap.completed);
  EXPECT_TRUE(gap.detected);
  EXPECT_NE(gap.error.find("rank 3: from rank 2"), std::string::npos) << gap.error;  // rank 2's successor
  EXPECT_NE(gap.error.find("lost or out of order"), std::string::npos) << gap.error;
  EXPECT_LT(gap.time, 0.001);
  DropOne last(5);  // a ring all-reduce on 4 ranks sends 2 * 3 messages per stream
  const SimulatedRun silent = simulate(*schedule, fabric_for(4), SimulationOptions(0, &last, true));
  EXPECT_TRUE(silent.detected);
  EXPECT_NE(silent.error.find("no message for 0.5 s (the link timeout)"), std::string::npos) << silent.error;
  EXPECT_NEAR(silent.time, 0.5, 0.01);  // sim's timeout: 0.5 s, or half the deadline when that is less
}

// A hook that drops every 7th message anyone sends (by its sequence number and sender), each once,
// and delays every 3rd of the others by 40 ms: about as long as a reliable receive's patience (the
// retransmission interval, jittered), so some waits run out while others go on.
class DropAndDelay final : public LinkHook {
 public:
  SendDecision on_send(const Message& message, std::span<std::byte>) override {
    SendDecision decision;
    const std::uint64_t position = message.sequence + static_cast<std::uint64_t>(message.from);
    decision.drop = message.attempt == 0 && position % 7 == 0;
    if (!decision.drop && position % 3 == 0) decision.delay = 0.04;
    return decision;
  }
  double deadline() const override { return 60; }
};

// Wait timers are armed by the thousand and most are over before they could run out (their message
// came): the engine holds them back and puts in its timer heap only those still armed when they
// could come next. One that joined late would run out after events later than it: the run says so
// (the engine went back in time) instead of being another run. (Joining at three times the
// shortest wait instead fails here, on every ring size.)
TEST(Simulator, WaitTimersHeldBackRunOutInTimeWhileOtherStreamsMoveOn) {
  for (const int ranks : {2, 5, 16}) {
    const Case c = make_case(Collective::AllReduce, DType::Float32, RedOp::Sum, 4096, ranks);
    Result<Schedule> schedule = make_schedule("ring", c, Knobs{64, 4, 4});
    ASSERT_TRUE(schedule.ok()) << schedule.error().text();
    DropAndDelay hook;
    SimulationOptions options(static_cast<std::uint64_t>(ranks), &hook, false);
    options.protocol.reliable = true;
    const SimulatedRun run = simulate(*schedule, fabric_for(ranks), options);
    EXPECT_TRUE(run.completed) << ranks << " ranks: " << run.error;
    EXPECT_GT(run.retransmissions, 0u) << ranks << " ranks";
  }
}

// A long run says how far it has come while it goes on: the schedule's messages sent, of all of
// them over every call (retransmissions apart), rising report by report, and the run is the same
// run as without reports.
TEST(Simulator, ProgressCountsTheMessagesSentOfAllThatAreSentAndChangesNothing) {
  const Case c = make_case(Collective::AllReduce, DType::Float32, RedOp::Sum, 16384, 96);
  Result<Schedule> schedule = make_schedule("ring", c, Knobs{});
  ASSERT_TRUE(schedule.ok()) << schedule.error().text();
  DropAndDelay hook;
  SimulationOptions options(3, &hook, false);
  options.protocol.reliable = true;
  options.calls = 2;
  const SimulatedRun quiet = simulate(*schedule, fabric_for(96), options);
  std::vector<SimulationProgress> reports;
  options.progress = [&reports](const SimulationProgress& progress) { reports.push_back(progress); };
  options.progress_every = 1e-9;
  const SimulatedRun run = simulate(*schedule, fabric_for(96), options);
  ASSERT_TRUE(run.completed) << run.error;
  EXPECT_EQ(run.trace, quiet.trace);
  EXPECT_EQ(run.time, quiet.time);
  ASSERT_GE(reports.size(), 2u);
  const std::uint64_t planned = run.messages - run.retransmissions;
  EXPECT_EQ(planned, 2u * 2 * 95 * 96) << "two calls of 2 (p - 1) messages a rank";
  for (std::size_t k = 0; k < reports.size(); ++k) {
    const SimulationProgress& report = reports[k];
    EXPECT_EQ(report.planned, planned) << "report " << k;
    EXPECT_LT(report.sent, planned) << "report " << k;
    EXPECT_EQ(report.events % 16384, 0u) << "report " << k;
    if (k == 0) continue;
    EXPECT_GT(report.sent, reports[k - 1].sent) << "report " << k;
    EXPECT_GE(report.retransmissions, reports[k - 1].retransmissions) << "report " << k;
    EXPECT_GE(report.virtual_time, reports[k - 1].virtual_time) << "report " << k;
    EXPECT_GE(report.wall_seconds, reports[k - 1].wall_seconds) << "report " << k;
  }
  EXPECT_GT(reports.back().retransmissions, 0u);
}

// Before the events the set-up pass reads every participant's steps (a billion at 16,384 ranks):
// it says how many participants it has done, 256 at a time, before any event is reported.
TEST(Simulator, ProgressSaysHowFarTheSetUpIsBeforeTheEvents) {
  const Case c = make_case(Collective::AllReduce, DType::Float32, RedOp::Sum, 1024, 768);
  Result<Schedule> schedule = make_schedule("ring", c, Knobs{}, Form::OnDemand);
  ASSERT_TRUE(schedule.ok()) << schedule.error().text();
  SimulationOptions options(0, nullptr, false);
  std::vector<SimulationProgress> reports;
  options.progress = [&reports](const SimulationProgress& progress) { reports.push_back(progress); };
  options.progress_every = 1e-9;
  Result<Topology> ring = make_topology("ring:768");
  ASSERT_TRUE(ring.ok());
  const SimulatedRun run = simulate(*schedule, *ring, options);
  ASSERT_TRUE(run.completed) << run.error;
  std::vector<std::uint64_t> ready;
  bool events_seen = false;
  for (const SimulationProgress& report : reports) {
    EXPECT_EQ(report.participants, 768u);
    if (!report.setting_up) {
      events_seen = true;
      continue;
    }
    EXPECT_FALSE(events_seen) << "the set-up is reported before the events";
    EXPECT_EQ(report.events, 0u);
    ready.push_back(report.ready);
  }
  EXPECT_EQ(ready, (std::vector<std::uint64_t>{256, 512, 768}));
  EXPECT_TRUE(events_seen);
}

// A hook that delays rank 2's first message by `seconds`.
class DelayFirst final : public LinkHook {
 public:
  explicit DelayFirst(double seconds) : seconds_(seconds) {}
  SendDecision on_send(const Message& message, std::span<std::byte>) override {
    SendDecision decision;
    if (message.from == 2 && message.sequence == 0 && message.attempt == 0) decision.delay = seconds_;
    return decision;
  }
  double deadline() const override { return 120; }

 private:
  double seconds_;
};

// A link is FIFO: the messages sent after a delayed one arrive after it, however long the delay
// (they once arrived a hair before it where it was delayed by more than a second).
TEST(Simulator, MessagesBehindADelayedOneWaitBehindIt) {
  const Case c = make_case(Collective::AllReduce, DType::Float32, RedOp::Sum, 64, 4);
  Knobs knobs;
  knobs.chunk = 4;  // several messages on each stream link
  Result<Schedule> schedule = make_schedule("ring", c, knobs);
  ASSERT_TRUE(schedule.ok());
  for (const double delay : {0.2, 2.5, 20.0}) {
    DelayFirst hook(delay);
    SimulationOptions options(0, &hook, true);
    options.protocol.timeout = 50;
    const SimulatedRun run = simulate(*schedule, fabric_for(4), options);
    EXPECT_TRUE(run.completed) << delay << " s: " << run.error;
    EXPECT_GT(run.time, delay) << delay << " s";
    ASSERT_EQ(run.outputs.size(), 4u) << delay << " s";
    for (int rank = 0; rank < 4; ++rank) {
      EXPECT_TRUE(compare(c, rank, run.outputs[static_cast<std::size_t>(rank)]).ok) << delay << " s, rank " << rank;
    }
  }
}

}  // namespace
}  // namespace collcheck

namespace collcheck {
namespace {

TEST(Simulator, RepeatedCallsRunBackToBackWithoutABarrier) {
  // A chain broadcast's root is done with call k long before the chain's tail: with no
  // barrier it starts call k+1 at once, so three calls take less than three times one.
  const Case c = make_case(Collective::Broadcast, DType::Int32, RedOp::Sum, 4096, 8);
  Result<Schedule> schedule = make_schedule("chain", c, Knobs{512, 1, 4});
  ASSERT_TRUE(schedule.ok());
  SimulationOptions once(3, nullptr, true);
  SimulationOptions thrice(3, nullptr, true);
  thrice.calls = 3;
  const SimulatedRun one = simulate(*schedule, fabric_for(8), once);
  const SimulatedRun three = simulate(*schedule, fabric_for(8), thrice);
  ASSERT_TRUE(three.completed) << three.error;
  EXPECT_LT(three.time, 3 * one.time * 0.9);
  ASSERT_EQ(three.earlier_outputs.size(), 2u);
  for (std::uint64_t call = 0; call < 3; ++call) {  // call k's inputs come from seed + k
    Case this_call = c;
    this_call.seed = c.seed + call;
    Oracle oracle(this_call);
    for (int rank = 0; rank < c.nranks; ++rank) {
      const auto& got = call < 2 ? three.earlier_outputs[call][static_cast<std::size_t>(rank)]
                                 : three.outputs[static_cast<std::size_t>(rank)];
      EXPECT_TRUE(compare(oracle.expected(rank), rank, got).ok) << "call " << call << " rank " << rank;
    }
  }
}

// `check --jobs N` simulates on several threads at once, each on sim_fabric's topology for its
// rank count, whose routes are worked out on first use: two threads asking for the same fresh
// rank counts at the same time must each get the single-threaded result (under the tsan preset a
// shared route cache is reported; elsewhere it crashed about once in 20 soaks).
TEST(Simulator, SimulationsOnSeveralThreadsAtOnceAgreeWithOne) {
  const auto times_for = [](std::vector<double>& times) {
    for (int nranks = 2; nranks <= 24; ++nranks) {
      const Case c = make_case(Collective::AllReduce, DType::Float32, RedOp::Sum, 96, nranks);
      Result<Schedule> schedule = make_schedule("ring", c, Knobs{});
      times.push_back(schedule.ok() ? simulate(*schedule, sim_fabric(nranks), SimulationOptions(1, nullptr, false)).time
                                    : -1.0);
    }
  };
  std::vector<double> first, second, alone;
  std::thread one([&] { times_for(first); });
  std::thread other([&] { times_for(second); });
  one.join();
  other.join();
  times_for(alone);
  EXPECT_EQ(first, alone);
  EXPECT_EQ(second, alone);
}

// Timing only moves no data and yet runs the same events: the same time, trace and link loads.
TEST(Simulator, TimingOnlyRunsTheSameEventsWithoutData) {
  const Topology& topology = fabric_for(16);
  for (const char* algorithm : {"ring", "tree", "rhd", "innet"}) {
    const Case c = make_case(Collective::AllReduce, DType::Float32, RedOp::Sum, 4096, 16);
    Result<Schedule> schedule = make_schedule(algorithm, c, Knobs{256, 2, 4});
    ASSERT_TRUE(schedule.ok()) << schedule.error().text();
    const SimulatedRun numeric = simulate(*schedule, topology, SimulationOptions(3, nullptr, true));
    const SimulatedRun timed = simulate(*schedule, topology, SimulationOptions(3, nullptr, false));
    ASSERT_TRUE(numeric.completed && timed.completed) << algorithm << ": " << numeric.error << timed.error;
    EXPECT_EQ(timed.time, numeric.time) << algorithm;
    EXPECT_EQ(timed.trace, numeric.trace) << algorithm;
    EXPECT_EQ(timed.events, numeric.events) << algorithm;
    EXPECT_EQ(timed.link_bytes, numeric.link_bytes) << algorithm;
    EXPECT_TRUE(timed.outputs.empty()) << algorithm;
  }
}

// What a run's messages hold (on the wire, kept to send again, waiting for their receive) is
// counted as it goes, and past SimulationOptions::message_memory the run stops with what it held
// where, instead of growing until the machine kills it; at its peak or above, the run is the
// same run.
TEST(Simulator, MessagesHeldPastTheirRoomStopTheRunInsteadOfGrowing) {
  const Case c = make_case(Collective::AllToAll, DType::Float32, RedOp::Sum, 8 * 512, 8);
  Result<Schedule> schedule = make_schedule("pairwise", c, Knobs{});
  ASSERT_TRUE(schedule.ok()) << schedule.error().text();
  SimulationOptions options(5, nullptr, true);
  options.protocol.reliable = true;
  const SimulatedRun whole = simulate(*schedule, fabric_for(8), options);
  ASSERT_TRUE(whole.completed) << whole.error;
  // At least one block on the wire and the sender's copy of it, payloads included.
  EXPECT_GE(whole.peak_message_memory, 2 * 512 * sizeof(float));

  options.message_memory = whole.peak_message_memory;
  const SimulatedRun at_peak = simulate(*schedule, fabric_for(8), options);
  EXPECT_TRUE(at_peak.completed) << at_peak.error;
  EXPECT_FALSE(at_peak.out_of_memory);
  EXPECT_EQ(at_peak.trace, whole.trace);

  options.message_memory = whole.peak_message_memory / 2;
  const SimulatedRun stopped = simulate(*schedule, fabric_for(8), options);
  EXPECT_FALSE(stopped.completed);
  EXPECT_TRUE(stopped.out_of_memory);
  EXPECT_LT(stopped.events, whole.events);
  EXPECT_NE(stopped.error.find("kept to send again"), std::string::npos) << stopped.error;
  EXPECT_NE(stopped.error.find("more than the " + format_bytes(options.message_memory) + " left to them"),
            std::string::npos)
      << stopped.error;

  // Timing only, no payloads: less held, and counted all the same.
  SimulationOptions timed(5, nullptr, false);
  timed.protocol.reliable = true;
  const SimulatedRun without_data = simulate(*schedule, fabric_for(8), timed);
  EXPECT_GT(without_data.peak_message_memory, 0u);
  EXPECT_LT(without_data.peak_message_memory, whole.peak_message_memory);
}

// Every message's bytes are counted on each link of its route, and a link is busy for its bytes
// over its bandwidth: on a ring of 4 a ring all-reduce puts 2(p-1)/p of the buffer on each link.
TEST(Simulator, LinkLoadsCountEveryByteOnEveryLink) {
  const Case c = make_case(Collective::AllReduce, DType::Float32, RedOp::Sum, 1024, 4);
  Result<Schedule> schedule = make_schedule("ring", c, Knobs{0, 1, 4});
  ASSERT_TRUE(schedule.ok()) << schedule.error().text();
  Result<Topology> ring = make_topology("ring:4");
  ASSERT_TRUE(ring.ok());
  const SimulatedRun run = simulate(*schedule, *ring, SimulationOptions(0, nullptr, false));
  ASSERT_TRUE(run.completed) << run.error;
  ASSERT_EQ(run.link_bytes.size(), ring->links.size());
  std::uint64_t carried = 0;
  for (std::size_t link = 0; link < ring->links.size(); ++link) {
    carried += run.link_bytes[link];
    EXPECT_DOUBLE_EQ(run.link_busy[link], static_cast<double>(run.link_bytes[link]) / ring->links[link].bandwidth);
  }
  EXPECT_EQ(carried, 4u * 2 * 3 * (1024 / 4) * 4) << "4 ranks x 2(p-1) messages of n/p floats";
  EXPECT_LE(run.link_busy.front(), run.time);
}

}  // namespace
}  // namespace collcheck
