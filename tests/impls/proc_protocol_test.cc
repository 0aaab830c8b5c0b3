// The proc transport's link protocol on worlds of threads, over shared memory and TCP: damaged,
// lost, repeated and reordered messages end `detected` on every rank, or `ok` with `reliable`.
#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <functional>
#include <map>
#include <mutex>
#include <thread>

#include "impls/backend/rank_backend.h"
#include "impls/proc/transport.h"
#include "impls/registry.h"
#include "impls/sim/sim_backend.h"
#include "reference/oracle.h"
#include "tests/support/cases.h"
#include "tests/support/rank_group.h"

namespace collcheck {
namespace {

using Clock = std::chrono::steady_clock;

using testing::Group;
using testing::make_group;
using testing::on_every_rank;

struct Runs {
  std::vector<RankRun> ranks;
  double seconds = 0;
};

Runs run(Group& group, const Case& c, LinkHook* hook, double deadline = 20) {
  RankRunOptions options;
  options.hook = hook;
  options.deadline = deadline;
  Runs runs;
  runs.ranks.resize(group.backends.size());
  const auto start = Clock::now();
  on_every_rank(c.nranks, [&](int r) {
    runs.ranks[static_cast<std::size_t>(r)] = group.backends[static_cast<std::size_t>(r)]->run(c, options);
  });
  runs.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  return runs;
}

// "" when every rank ends ok with the oracle's output.
std::string oracle_failure(const Case& c, const Runs& runs) {
  for (int r = 0; r < c.nranks; ++r) {
    const RankRun& got = runs.ranks[static_cast<std::size_t>(r)];
    if (got.outcome != Outcome::Ok) return "rank " + std::to_string(r) + ": " + got.error;
    const Verdict verdict = compare(c, r, got.calls.at(0).output);
    if (!verdict.ok) return "rank " + std::to_string(r) + ": " + verdict.describe(c.dtype);
  }
  return "";
}

// "" when every rank reports an error (Detected), the errors together naming `what`.
std::string detected_failure(const Case& c, const Runs& runs, const std::string& what) {
  bool named = false;
  for (int r = 0; r < c.nranks; ++r) {
    const RankRun& got = runs.ranks[static_cast<std::size_t>(r)];
    if (got.outcome != Outcome::Detected) return "rank " + std::to_string(r) + " was not stopped";
    named = named || got.error.find(what) != std::string::npos;
  }
  return named ? "" : "no rank's error names '" + what + "': " + runs.ranks[0].error;
}

// A ring all-reduce with several messages on every stream (chunk 8 of 64 elements, 3 ranks).
Case ring_case() {
  Case c = testing::make_case(Collective::AllReduce, DType::Int32, RedOp::Sum, 64, 3);
  c.seed = 11;
  return c;
}

// A hand-written fault: `fault` acts on transmissions of messages from `from` to `to` that
// `pick` chooses (from the message, and whether it is the stream's last of the call). Every
// rank's thread calls it, so it locks. It counts what it saw: the largest attempt, and per
// stream the number of messages (from a first, clean run).
class TestHook final : public LinkHook {
 public:
  using Pick = std::function<bool(const Message&)>;
  using Fault = std::function<SendDecision(const Message&, std::span<std::byte>)>;
  TestHook(int from, int to, Pick pick, Fault fault)
      : from_(from), to_(to), pick_(std::move(pick)), fault_(std::move(fault)) {}
  SendDecision on_send(const Message& m, std::span<std::byte> payload) override {
    std::lock_guard<std::mutex> lock(mutex_);
    max_attempt_ = std::max(max_attempt_, m.attempt);
    if ((from_ < 0 || m.from == from_) && (to_ < 0 || m.to == to_) && pick_(m)) {
      ++hits_;
      return fault_(m, payload);
    }
    return {};
  }
  int max_attempt() {
    std::lock_guard<std::mutex> lock(mutex_);
    return max_attempt_;
  }
  int hits() {
    std::lock_guard<std::mutex> lock(mutex_);
    return hits_;
  }

 private:
  int from_, to_;
  Pick pick_;
  Fault fault_;
  std::mutex mutex_;
  int max_attempt_ = 0, hits_ = 0;
};

SendDecision flip(const Message&, std::span<std::byte> payload) {
  if (!payload.empty()) payload[payload.size() / 2] ^= std::byte{0x10};
  return {};
}
SendDecision drop(const Message&, std::span<std::byte>) { return {true, 0, 0, false}; }
SendDecision twice(const Message&, std::span<std::byte>) { return {false, 0, 2, false}; }
SendDecision hold(const Message&, std::span<std::byte>) { return {false, 0, 0, true}; }
TestHook::Pick first_try_of(std::uint64_t sequence) {
  return [sequence](const Message& m) { return m.sequence == sequence && m.attempt == 0; };
}

const char* const kLinks[] = {"", "transport=tcp,"};

std::string spec(const std::string& links, const std::string& options) {
  return "ring@proc:" + links + "chunk=8," + options;
}

// Catches: a receiver that uses bytes without checking them (the run ends ok with a wrong sum),
// a sender that takes the checksum after the hook changed the copy, a rank that fails alone
// (the others would end ok), and a stop that leaks into the next case (which must pass).
TEST(ProcProtocol, ACorruptedMessageIsDetectedOnEveryRank) {
  for (const std::string links : kLinks) {
    Group group = make_group(spec(links, "timeout=400"), 3);
    TestHook hook(0, 1, first_try_of(1), flip);
    const Case c = ring_case();
    const Runs runs = run(group, c, &hook);
    EXPECT_EQ(hook.hits(), 1);
    EXPECT_EQ(detected_failure(c, runs, "failed its checksum"), "") << links;
    EXPECT_NE(runs.ranks[2].error.find("stopped the run"), std::string::npos) << runs.ranks[2].error;
    EXPECT_LT(runs.seconds, 2.0);
    EXPECT_EQ(oracle_failure(c, run(group, c, nullptr)), "") << links << ": the next case";
  }
}

// Catches: reliable mode that does not retransmit (detected), or retransmits without passing
// the hook again with the attempt counted (max_attempt stays 0).
TEST(ProcProtocol, ReliableModeRepairsACorruptedMessage) {
  for (const std::string links : kLinks) {
    Group group = make_group(spec(links, "reliable=on,timeout=1000"), 3);
    TestHook hook(0, 1, first_try_of(1), flip);
    const Case c = ring_case();
    EXPECT_EQ(oracle_failure(c, run(group, c, &hook)), "") << links;
    EXPECT_GE(hook.max_attempt(), 1);
  }
}

// The last message of a stream is lost: no later one shows a gap, so only the timeout finds it.
// Catches: a wait without a timeout (every rank would sit until the deadline of 20 s) and a
// timeout that stops only the waiting rank.
TEST(ProcProtocol, ALostLastMessageIsDetectedOnEveryRankWithinTheTimeout) {
  for (const std::string links : kLinks) {
    Group group = make_group(spec(links, "timeout=300"), 3);
    std::uint64_t last = 0;
    TestHook count(
        1, 2,
        [&](const Message& m) {
          last = std::max(last, m.sequence);
          return false;
        },
        drop);
    const Case c = ring_case();
    ASSERT_EQ(oracle_failure(c, run(group, c, &count)), "");
    TestHook hook(1, 2, first_try_of(last), drop);
    const Runs runs = run(group, c, &hook);
    EXPECT_EQ(detected_failure(c, runs, "link timeout"), "") << links;
    EXPECT_LT(runs.seconds, 0.3 + 1.5) << links;
  }
}

// A lost message in the middle shows as a gap at once. Catches: a receiver that takes the next
// message in its place (a wrong sum reported ok).
TEST(ProcProtocol, ALostMessageShowsAsAGap) {
  for (const std::string links : kLinks) {
    Group group = make_group(spec(links, "timeout=1000"), 3);
    TestHook hook(1, 2, first_try_of(0), drop);
    const Case c = ring_case();
    const Runs runs = run(group, c, &hook);
    EXPECT_EQ(detected_failure(c, runs, "lost or out of order"), "") << links;
    EXPECT_LT(runs.seconds, 1.0) << links;
  }
}

// Catches: reliable mode that gives up on a lost message, or never asks again after silence
// (the last message has no successor to show the gap).
TEST(ProcProtocol, ReliableModeResendsLostMessages) {
  for (const std::string links : kLinks) {
    Group group = make_group(spec(links, "reliable=on,timeout=1000"), 3);
    const Case c = ring_case();
    for (std::uint64_t sequence : {0, 3, 100}) {
      TestHook hook(
          1, 2, [&](const Message& m) { return (m.sequence == sequence || sequence == 100) && m.attempt == 0; }, drop);
      EXPECT_EQ(oracle_failure(c, run(group, c, &hook)), "") << links << " message " << sequence;
    }
  }
}

// A rank whose every transmission is lost (a stop or kill, in process): even reliable mode
// must give up and stop every rank, within the timeout and a little. Catches: retransmitting
// for ever (the deadline of 20 s would end it), and a give-up that leaves the others waiting.
TEST(ProcProtocol, ARankLostForGoodIsDetectedOnEveryRankEvenWhenReliable) {
  for (const std::string links : kLinks) {
    for (const std::string options : {"timeout=400", "reliable=on,timeout=400"}) {
      Group group = make_group(spec(links, options), 3);
      TestHook hook(
          1, -1, [](const Message&) { return true; }, drop);
      const Case c = ring_case();
      const Runs runs = run(group, c, &hook);
      EXPECT_EQ(detected_failure(c, runs, "rank"), "") << links << options;
      EXPECT_LT(runs.seconds, 0.4 + 1.5) << links << options;
    }
  }
}

// Catches: a receiver that takes a repeated piece as new data (a double reduction) or as a gap.
TEST(ProcProtocol, DuplicatesAreDroppedSilently) {
  for (const std::string links : kLinks) {
    for (const std::string options : {"timeout=1000", "reliable=on,timeout=1000"}) {
      Group group = make_group(spec(links, options), 3);
      TestHook hook(
          -1, -1, [](const Message& m) { return m.sequence % 2 == 0; }, twice);
      const Case c = ring_case();
      EXPECT_EQ(oracle_failure(c, run(group, c, &hook)), "") << links << options;
      EXPECT_GT(hook.hits(), 3);
    }
  }
}

// Catches: a sender that ignores `reorder` (ok without reliable), a receiver that takes the later
// message in the earlier one's place, and reliable mode that cannot put them back in order.
TEST(ProcProtocol, AReorderIsDetectedAndReliableModeRepairsIt) {
  for (const std::string links : kLinks) {
    const Case c = ring_case();
    Group plain = make_group(spec(links, "timeout=1000"), 3);
    TestHook hook(0, 1, first_try_of(0), hold);
    EXPECT_EQ(detected_failure(c, run(plain, c, &hook), "lost or out of order"), "") << links;
    Group reliable = make_group(spec(links, "reliable=on,timeout=1000"), 3);
    TestHook again(0, 1, first_try_of(0), hold);
    EXPECT_EQ(oracle_failure(c, run(reliable, c, &again)), "") << links;
  }
}

// Rank 0 sends `n` floats of its input to rank 1's output: one message, the transport driven by hand.
Schedule one_message(std::size_t n) {
  Schedule s;
  s.algorithm = "send";
  s.shape = testing::make_case(Collective::AllReduce, DType::Float32, RedOp::Sum, n, 2);
  s.participants.resize(2);
  s.add(0, Step{StepKind::Send, 1, Range{BufferKind::Input, 0, n}, {}, 0, 0});
  s.add(1, Step{StepKind::Recv, 0, {}, Range{BufferKind::Output, 0, n}, 0, 0});
  return s;
}

std::vector<ProcBuffers> one_message_buffers(std::vector<float>& sent, std::vector<float>& got) {
  std::vector<ProcBuffers> buffers(2);
  buffers[0].input = reinterpret_cast<std::byte*>(sent.data());
  buffers[1].output = reinterpret_cast<std::byte*>(got.data());
  return buffers;
}

// Runs `body` on every rank of `ranks` thread worlds, each with its transport connected over `links`.
void with_transports(int ranks, ProcLinks links, const std::function<void(ProcTransport&, int)>& body) {
  std::vector<std::unique_ptr<World>> worlds = make_thread_worlds(ranks);
  on_every_rank(ranks, [&](int r) {
    auto transport = ProcTransport::connect(*worlds[static_cast<std::size_t>(r)],
                                            ProcLinkOptions{.links = links, .verbs = {}, .queue_pairs = 0});
    ASSERT_TRUE(transport.ok());
    body(**transport, r);
  });
}

// Checksums off (mutant:no-checksum sets that): the same corruption now completes with wrong
// data, which is what the harness calls `corrupt`. Catches checksums that cannot be turned off,
// and so a mutant that the properties could not tell from a good backend.
TEST(ProcProtocol, WithoutChecksumsACorruptionReachesTheOutput) {
  const std::size_t n = 1000;
  const Schedule s = one_message(n);
  ASSERT_TRUE(validate(s).ok());
  for (ProcLinks links : {ProcLinks::Auto, ProcLinks::Tcp}) {
    for (bool checksums : {true, false}) {
      std::vector<float> sent(n, 1.5f), got(n, 0.0f);
      std::vector<Status> results(2, Ok{});
      TestHook hook(
          0, 1, [](const Message&) { return true; }, flip);
      with_transports(2, links, [&](ProcTransport& transport, int r) {
        const std::vector<ProcBuffers> buffers = one_message_buffers(sent, got);
        ProcRunOptions options;
        options.hook = &hook;
        options.protocol.checksums = checksums;
        options.protocol.timeout = 1;
        Status status = transport.begin(s, options);
        if (status) status = transport.run_call(buffers);
        if (status) status = transport.finish();
        results[static_cast<std::size_t>(r)] = status;
      });
      for (const Status& status : results) {
        EXPECT_EQ(status.ok(), !checksums) << name(links) << ": " << (status ? "ok" : status.error().text());
      }
      // Checksums on: the run failed above (a copy lands as its checksum is taken, so the damaged
      // bytes may be in the output, but never as a result); off: it completed with them.
      std::size_t differ = 0;
      for (std::size_t i = 0; i < n; ++i) differ += got[i] != sent[i];
      if (!checksums) {
        EXPECT_EQ(differ, 1u) << name(links);
      }
    }
  }
}

// The link timeout counts only time a process spends in a call: not the case's start before it
// (launching and meeting 49 processes on 2 cores took more than 100 ms, and call 0's first
// receive cried wolf at once), nor what the process did between two calls. Rank 1's first step is
// a receive, its case started 2 s ago, and rank 0 sends 50 ms after rank 1 has entered each call,
// the second time after 300 ms between calls on both ranks; with a timeout of 200 ms both calls
// end ok. Catches: the quiet time counted from the case's start, or carried over from the call
// before.
TEST(ProcProtocol, TheLinkTimeoutCountsOnlyTheTimeSpentInACall) {
  const std::size_t n = 64;
  const Schedule s = one_message(n);
  ASSERT_TRUE(validate(s).ok());
  for (ProcLinks links : {ProcLinks::Auto, ProcLinks::Tcp}) {
    std::vector<float> sent(n, 1.5f), got(n, 0.0f);
    std::vector<Status> results(2, Ok{});
    with_transports(2, links, [&](ProcTransport& transport, int r) {
      const std::vector<ProcBuffers> buffers = one_message_buffers(sent, got);
      ProcRunOptions options;
      options.start = Clock::now() - std::chrono::seconds(2);
      options.deadline = 30;
      options.protocol.timeout = 0.2;
      Status status = transport.begin(s, options);
      for (int call = 0; call < 2 && status; ++call) {
        if (call > 0) std::this_thread::sleep_for(std::chrono::milliseconds(300));
        if (r == 0) std::this_thread::sleep_for(std::chrono::milliseconds(50));
        status = transport.run_call(buffers);
      }
      if (status) status = transport.finish();
      results[static_cast<std::size_t>(r)] = status;
    });
    for (const Status& status : results) {
      EXPECT_TRUE(status.ok()) << name(links) << ": " << (status ? "ok" : status.error().text());
    }
    EXPECT_EQ(got, sent) << name(links);
  }
}

// A rank that never begins the case is named by every rank that waited for it, in words that do
// not name the waiting rank itself, so that a world's report says them once for all its ranks.
// Catches: a meeting that waits past the link timeout, or one whose words differ rank by rank.
TEST(ProcProtocol, ARankThatNeverBeginsIsNamedInTheSameWordsByEveryOther) {
  const Schedule s = one_message(16);
  std::vector<std::string> errors(3);
  std::vector<double> waited(3, 0);
  with_transports(3, ProcLinks::Auto, [&](ProcTransport& transport, int r) {
    if (r == 2) return;  // it never begins
    ProcRunOptions options;
    options.protocol.timeout = 0.2;
    const auto start = Clock::now();
    const Status status = transport.begin(s, options);
    waited[static_cast<std::size_t>(r)] = std::chrono::duration<double>(Clock::now() - start).count();
    errors[static_cast<std::size_t>(r)] = status ? "ok" : status.error().text();
  });
  EXPECT_EQ(errors[0], "proc rank 2 did not begin the case within 0.2 s (the link timeout)");
  EXPECT_EQ(errors[1], errors[0]);
  for (int r = 0; r < 2; ++r) EXPECT_LT(waited[static_cast<std::size_t>(r)], 0.2 + 1.5) << r;
}

// The integrator's mutant, once registered, behaves the same through the backend.
TEST(ProcProtocol, NoChecksumMutantCompletesWithWrongData) {
  Result<std::vector<RankBackendSpec>> specs = rank_backend_specs("mutant:no-checksum@proc");
  if (!specs.ok()) GTEST_SKIP() << "mutant:no-checksum is not registered: " << specs.error().text();
  Group group = make_group("mutant:no-checksum@proc", 3);
  TestHook hook(0, 1, first_try_of(0), flip);
  const Case c = ring_case();
  const Runs runs = run(group, c, &hook);
  for (const RankRun& r : runs.ranks) EXPECT_EQ(r.outcome, Outcome::Ok) << r.error;
  EXPECT_NE(oracle_failure(c, runs), "");
}

TEST(ProcProtocol, SpecsCarryTheProtocol) {
  Result<std::vector<RankBackendSpec>> reliable = rank_backend_specs("ring@proc:reliable=on,timeout=500");
  ASSERT_TRUE(reliable.ok()) << reliable.error().text();
  EXPECT_TRUE(reliable->at(0).capabilities.reliable);
  EXPECT_FALSE(rank_backend_specs("ring@proc")->at(0).capabilities.reliable);
  EXPECT_TRUE(rank_backend_specs("ring@proc:transport=tcp,reliable=on,retries=3").ok());
  const Result<std::vector<RankBackendSpec>> bad = rank_backend_specs("ring@proc:reliable=maybe");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("on or off"), std::string::npos);
}

}  // namespace
}  // namespace collcheck
