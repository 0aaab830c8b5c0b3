// The `proc` transport and its backends on worlds of threads: every algorithm against the oracle
// over TCP, large messages, hooks, sends whose source changes, and the option grammar. What every
// backend must do (over shared memory: oracle, repeated calls, deadlines, mutants) is in tests/conformance/.
#include <gtest/gtest.h>

#include <bit>
#include <chrono>
#include <cstring>
#include <functional>
#include <limits>
#include <string>
#include <thread>

#include "impls/backend/rank_backend.h"
#include "impls/link/reduce_op.h"
#include "impls/proc/transport.h"
#include "impls/registry.h"
#include "impls/sim/sim_backend.h"
#include "reference/oracle.h"
#include "reference/random.h"
#include "tests/support/cases.h"
#include "tests/support/rank_group.h"

namespace collcheck {
namespace {

using testing::Group;
using testing::make_group;
using testing::on_every_rank;

std::vector<RankRun> run(Group& group, const Case& c, const RankRunOptions& options = {}) {
  std::vector<RankRun> runs(group.backends.size());
  on_every_rank(c.nranks, [&](int r) {
    runs[static_cast<std::size_t>(r)] = group.backends[static_cast<std::size_t>(r)]->run(c, options);
  });
  return runs;
}

// "" when every rank's every call matches the oracle (call k: the case with seed + k), its guard
// zones hold, and an out-of-place input is untouched.
std::string check(const std::string& spec, const Case& c, const std::vector<RankRun>& runs, int calls = 1) {
  for (int r = 0; r < c.nranks; ++r) {
    const RankRun& got = runs[static_cast<std::size_t>(r)];
    const std::string where = spec + " " + to_string(c) + " rank " + std::to_string(r);
    if (got.outcome != Outcome::Ok) return where + ": " + got.error;
    if (got.calls.size() != static_cast<std::size_t>(calls))
      return where + ": " + std::to_string(got.calls.size()) + " calls";
    for (int k = 0; k < calls; ++k) {
      Case call = c;
      call.seed += static_cast<std::uint64_t>(k);
      const RankResult& result = got.calls[static_cast<std::size_t>(k)];
      const Verdict verdict = compare(call, r, result.output);
      if (!verdict.ok) return where + " call " + std::to_string(k) + "\n" + verdict.describe(c.dtype);
      if (!result.guards_intact) return where + ": guard zone written";
      if (c.in_place) continue;
      std::vector<std::byte> input(result.input.size());
      InputGenerator(call).fill(r, 0, input);
      if (input != result.input) return where + ": input changed out of place";
    }
  }
  return "";
}

// A spread of cases for one collective: counts 0, 1, not divisible by the ranks and larger,
// several dtypes and ops, in and out of place, every root in turn.
std::vector<Case> cases_for(Collective collective, int n) {
  const DType dtypes[] = {DType::Float32, DType::Int32, DType::BFloat16, DType::Float64, DType::UInt8};
  const RedOp ops[] = {RedOp::Sum, RedOp::Max, RedOp::Avg, RedOp::Min, RedOp::Prod};
  const std::size_t counts[] = {0, 1, 7, 37, 300};
  std::vector<Case> cases;
  for (int i = 0; i < 10; ++i) {
    Case c = testing::make_case(collective, dtypes[i % 5], ops[(i + n) % 5], counts[i % 5], n);
    c.in_place = i % 2 == 1 && !per_rank_counts(collective);  // the v-collectives: out of place, uneven
    if (per_rank_counts(collective)) set_counts(c, spread_counts(collective, n, counts[i % 5]));
    c.root = i % n;
    c.values = i == 9 ? ValueKind::Real : ValueKind::Exact;
    c.offset = static_cast<std::size_t>(i % 3);
    c.seed = 100 + static_cast<std::uint64_t>(i);
    cases.push_back(c);
  }
  return cases;
}

// Every algorithm's every collective at `n` ranks with the given options.
void check_all_algorithms(const std::string& options, int n, int calls = 1) {
  for (const std::string& algorithm : algorithm_variant_names()) {
    const std::string spec = algorithm + "@proc" + (options.empty() ? "" : ":" + options);
    Group group = make_group(spec, n);
    const std::vector<Collective> collectives = algorithm_variant(algorithm)->collectives;
    for (Collective collective : collectives) {
      for (const Case& c : cases_for(collective, n)) {
        RankRunOptions run_options;
        run_options.calls = calls;
        run_options.deadline = 20;
        EXPECT_EQ(check(spec, c, run(group, c, run_options), calls), "");
      }
    }
  }
}

TEST(ProcBackend, TcpLinksMatchTheOracle) {
  check_all_algorithms("chunk=6,transport=tcp", 3);
  check_all_algorithms("chunk=3,transport=tcp,channels=2", 4, 2);
}

// Messages far larger than a FIFO (several MiB) on both links, pipelined and not.
TEST(ProcBackend, LargeMessagesMatchTheOracle) {
  for (const std::string spec :
       {"ring@proc", "ring@proc:chunk=0", "tree@proc:chunk=100000", "ring@proc:transport=tcp"}) {
    Group group = make_group(spec, 3);
    Case c = testing::make_case(Collective::AllReduce, DType::Float32, RedOp::Sum, (std::size_t{3} << 20) + 5, 3);
    c.seed = 7;
    EXPECT_EQ(check(spec, c, run(group, c)), "");
    c.in_place = true;
    c.values = ValueKind::Real;
    EXPECT_EQ(check(spec, c, run(group, c)), "");
  }
}

// Receive and forward: a ring's reduced piece goes on to the next rank as it lands. Where the
// output is 16 MiB or more out of place (landed around the cache) it is reduced once into a piece
// of its own, stored on and into place from there; in place it is stored on from where it landed.
TEST(ProcBackend, PiecesForwardedAsTheyLandMatchTheOracle) {
  Group group = make_group("ring@proc", 2);
  Case c = testing::make_case(Collective::AllReduce, DType::Float32, RedOp::Sum, (std::size_t{4} << 20) + 5, 2);
  c.seed = 11;
  EXPECT_EQ(check("ring@proc", c, run(group, c)), "");
  c.in_place = true;
  EXPECT_EQ(check("ring@proc", c, run(group, c)), "");
}

// Delays every message and flips a bit of one: the delays keep the result, the flip breaks it.
class DelayAndFlip final : public LinkHook {
 public:
  explicit DelayAndFlip(bool flip) : flip_(flip) {}
  SendDecision on_send(const Message& message, std::span<std::byte> payload) override {
    if (flip_ && message.from == 1 && message.sequence == 0 && !payload.empty()) payload[0] ^= std::byte{0x40};
    return {false, 0.002};
  }

 private:
  bool flip_;
};

TEST(ProcBackend, HookDelaysKeepTheResultAndPayloadChangesShow) {
  Group group = make_group("ring@proc:chunk=8", 4);
  const Case c = testing::make_case(Collective::AllReduce, DType::Int32, RedOp::Sum, 64, 4);
  DelayAndFlip delay(false), flip(true);
  RankRunOptions options;
  options.hook = &delay;
  EXPECT_EQ(check("ring@proc", c, run(group, c, options)), "");
  options.hook = &flip;
  EXPECT_NE(check("ring@proc", c, run(group, c, options)), "");
}

// Knobs drawn per case come with each run (RankRunOptions::knobs) and hold for that run only:
// chunk-off-by-one loses an element at each interior chunk boundary, which blocks of 4 elements
// have at chunk 1 and not at its default chunk (4); the world stays the same throughout.
TEST(ProcBackend, KnobsOfARunHoldForThatRunOnly) {
  const std::string spec = "mutant:chunk-off-by-one@proc";
  Group group = make_group(spec, 2);
  const Case c = testing::make_case(Collective::AllReduce, DType::Int32, RedOp::Sum, 8, 2);
  RankRunOptions options;
  EXPECT_EQ(check(spec, c, run(group, c, options)), "");
  options.knobs = "chunk=1";
  EXPECT_NE(check(spec, c, run(group, c, options)), "");
  options.knobs = "chunk=1,channels=4";  // blocks of one element: no interior boundary
  EXPECT_EQ(check(spec, c, run(group, c, options)), "");
  options.knobs = "";
  EXPECT_EQ(check(spec, c, run(group, c, options)), "");
  options.knobs = "chunk=1,colour=red";  // never drawn: a clear error, not a run
  const std::vector<RankRun> refused = run(group, c, options);
  EXPECT_EQ(refused[0].outcome, Outcome::Detected);
  EXPECT_NE(refused[0].error.find("unknown option 'colour'"), std::string::npos) << refused[0].error;
}

TEST(ProcBackend, SpecsNameOptionsAndMutants) {
  Result<std::vector<RankBackendSpec>> all = rank_backend_specs("all@proc");
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(all->size(), algorithm_variant_names().size());
  EXPECT_EQ(all->at(0).name, algorithm_variant_names()[0] + "@proc");
  EXPECT_EQ(all->at(0).capabilities.chunk, kProcDefaultChunk);
  EXPECT_EQ(rank_backend_specs("ring@proc:chunk=64,transport=tcp")->at(0).capabilities.chunk, 64u);
  for (const char* mutant : {"mutant:hang@proc", "mutant:crash@proc", "mutant:deadlock@proc"}) {
    EXPECT_TRUE(rank_backend_specs(mutant).ok()) << mutant;
  }
  const Result<std::vector<RankBackendSpec>> bad_transport = rank_backend_specs("ring@proc:transport=udp");
  ASSERT_FALSE(bad_transport.ok());
  EXPECT_NE(bad_transport.error().message.find("auto, shm or tcp"), std::string::npos);
  EXPECT_FALSE(rank_backend_specs("ring@proc:speed=9").ok());
  EXPECT_FALSE(rank_backend_specs("nosuch@proc").ok());
  const Result<std::vector<RankBackendSpec>> bad_mutant = rank_backend_specs("mutant:nosuch@proc");
  ASSERT_FALSE(bad_mutant.ok());
  EXPECT_NE(bad_mutant.error().message.find("mutant:hang"), std::string::npos);
}

// A hand-made schedule's frame: a float32 sum all-reduce of n elements on `ranks` ranks, its
// participants there with no steps yet.
Schedule hand_made(const std::string& name, std::size_t n, int ranks) {
  Schedule schedule;
  schedule.algorithm = name;
  schedule.shape = testing::make_case(Collective::AllReduce, DType::Float32, RedOp::Sum, n, ranks);
  schedule.participants.resize(static_cast<std::size_t>(ranks));
  return schedule;
}

// What a thread rank's run of a hand-made schedule ended with.
struct ThreadRankRun {
  Status status = Ok{};
  std::uint64_t sent_again = 0;  // messages it sent again as its receivers asked
  std::uint64_t forwarded = 0;   // pieces it pushed on as they landed (receive and forward)
};

// Runs a hand-made schedule `calls` times over the proc transport between thread ranks, each
// rank's buffers and options its own (`options[rank]`).
std::vector<ThreadRankRun> run_each_on_thread_ranks(const Schedule& schedule, const std::vector<ProcBuffers>& buffers,
                                                    const std::vector<ProcRunOptions>& options, int calls = 1) {
  const int ranks = schedule.nranks();
  std::vector<std::unique_ptr<World>> worlds = make_thread_worlds(ranks);
  std::vector<ThreadRankRun> runs(static_cast<std::size_t>(ranks));
  on_every_rank(ranks, [&](int r) {
    const auto rank = static_cast<std::size_t>(r);
    auto transport = ProcTransport::connect(*worlds[rank], ProcLinkOptions{});
    ASSERT_TRUE(transport.ok());
    Status& status = runs[rank].status;
    status = (*transport)->begin(schedule, options[rank]);
    for (int call = 0; call < calls && status; ++call) status = (*transport)->run_call(buffers);
    if (status) status = (*transport)->finish();
    runs[rank].sent_again = (*transport)->sent_again();
    runs[rank].forwarded = (*transport)->forwarded();
  });
  return runs;
}

// The same with one set of options for every rank; fails the test where any rank's run fails.
// Returns how many messages each rank sent again as its receivers asked.
std::vector<std::uint64_t> run_on_thread_ranks(const Schedule& schedule, const std::vector<ProcBuffers>& buffers,
                                               const ProcRunOptions& options = {}, int calls = 1) {
  const std::vector<ThreadRankRun> runs = run_each_on_thread_ranks(
      schedule, buffers, std::vector<ProcRunOptions>(static_cast<std::size_t>(schedule.nranks()), options), calls);
  std::vector<std::uint64_t> sent_again;
  for (const ThreadRankRun& each : runs) {
    EXPECT_TRUE(each.status.ok()) << each.status.error().text();
    sent_again.push_back(each.sent_again);
  }
  return sent_again;
}
void run_on_two_thread_ranks(const Schedule& schedule, const std::vector<ProcBuffers>& buffers) {
  run_on_thread_ranks(schedule, buffers);
}

// A send whose source is overwritten while most of it still waits for FIFO room: the receiver
// must get the bytes as they were when the send was posted.
TEST(ProcTransport, ASendKeepsItsBytesWhenItsSourceIsOverwritten) {
  const std::size_t n = std::size_t{1} << 20;  // 4 MiB of float32, twice the FIFO
  Schedule s = hand_made("overwrite", n, 2);
  s.participants[1].scratch = n;
  const Range input{BufferKind::Input, 0, n}, output{BufferKind::Output, 0, n}, scratch{BufferKind::Scratch, 0, n};
  s.copy(0, input, output);
  s.add(0, Step{StepKind::Send, 1, output, {}, 0, 0});
  s.reduce(0, input, output);  // output = 2 * input, over the range still being sent
  s.add(0, Step{StepKind::Send, 1, output, {}, 1, 0});
  s.add(1, Step{StepKind::Recv, 0, {}, output, 1, 0});  // the later message first
  s.add(1, Step{StepKind::Recv, 0, {}, scratch, 0, 0});
  ASSERT_TRUE(validate(s).ok());
  std::vector<std::vector<float>> memory(4, std::vector<float>(n));
  for (std::size_t i = 0; i < n; ++i) memory[0][i] = static_cast<float>(i % 1000);
  auto bytes = [&](std::size_t i) { return reinterpret_cast<std::byte*>(memory[i].data()); };
  run_on_two_thread_ranks(s, {ProcBuffers{bytes(0), bytes(1), nullptr}, ProcBuffers{nullptr, bytes(2), bytes(3)}});
  for (std::size_t i = 0; i < n; i += 997) {
    ASSERT_EQ(memory[3][i], memory[0][i]) << i;
    ASSERT_EQ(memory[2][i], 2 * memory[0][i]) << i;
  }
}

// Two ranks exchange n floats over rank 0's send source: rank 0 sends its output and receives
// into it, while most of its send is still unsent (n is several FIFOs). Every buffer starts
// `shift` floats past an aligned address. Each rank must end with the other's bytes.
void exchange_over_source(std::size_t n, std::size_t shift) {
  Schedule s = hand_made("exchange-over-source", n, 2);
  const Range input{BufferKind::Input, 0, n}, output{BufferKind::Output, 0, n};
  s.copy(0, input, output);
  s.add(0, Step{StepKind::Send, 1, output, {}, 0, 0});
  s.add(0, Step{StepKind::Recv, 1, {}, output, 1, 0});  // over the send's source
  s.add(1, Step{StepKind::Send, 0, input, {}, 1, 0});
  s.add(1, Step{StepKind::Recv, 0, {}, output, 0, 0});
  ASSERT_TRUE(validate(s).ok());
  std::vector<std::vector<float>> memory(4, std::vector<float>(n + shift));
  for (std::size_t i = 0; i < n; ++i) {
    memory[0][shift + i] = static_cast<float>(i % 1000);
    memory[2][shift + i] = -static_cast<float>(i % 777);
  }
  auto bytes = [&](std::size_t i) { return reinterpret_cast<std::byte*>(memory[i].data() + shift); };
  run_on_two_thread_ranks(s, {ProcBuffers{bytes(0), bytes(1), nullptr}, ProcBuffers{bytes(2), bytes(3), nullptr}});
  for (std::size_t i = 0; i < n; ++i) {
    ASSERT_EQ(memory[3][shift + i], memory[0][shift + i]) << i;
    ASSERT_EQ(memory[1][shift + i], memory[2][shift + i]) << i;
  }
}

// A receive that lands over the source of the rank's own send, piece by piece: the send still
// carries the bytes it had when it was posted.
TEST(ProcTransport, ASendKeepsItsBytesWhenAReceiveLandsOnItsSource) {
  exchange_over_source(std::size_t{1} << 20, 0);  // 4 MiB of float32, four FIFOs
}

// Outputs of 16 MiB and more take their pieces with streaming stores: every byte lands, at any
// alignment of the output and with a length that is no multiple of the stores' width.
TEST(ProcTransport, LargeReceivesLandWhole) { exchange_over_source((std::size_t{4} << 20) + 3, 1); }

// Receive and forward under go-back: rank 1 reduces what rank 0 sends into its output and
// forwards each piece to rank 2 as it lands. Early in the message rank 1 stops taking pieces: on
// a second stream it takes a token rank 0 sent beside the message and then runs long copies in
// its progress loop. So rank 2, waiting longer than its patience, asks rank 1 to go back while the
// forwarded message has only partly landed. Rank 1 must send again exactly what has landed, and
// the rest as it lands: rank 2 ends with rank 0's input plus rank 1's (one call: a second would
// start from the first one's outputs, which hide what went wrong).
TEST(ProcTransport, AForwardedMessageSentAgainMidwayCarriesWhatLanded) {
  const std::size_t n = std::size_t{4} << 20;       // 16 MiB of float32: many FIFOs' worth of pieces
  const std::size_t stall = std::size_t{16} << 20;  // 64 MiB, copied back and forth by rank 1
  Schedule s = hand_made("forward-under-go-back", n, 3);
  s.participants[1].scratch = 2 * stall + 1;
  const Range input{BufferKind::Input, 0, n}, output{BufferKind::Output, 0, n};
  const Range low{BufferKind::Scratch, 0, stall}, high{BufferKind::Scratch, stall, stall};
  const Range token{BufferKind::Input, 0, 1}, taken{BufferKind::Scratch, 2 * stall, 1};
  s.add(0, Step{StepKind::Send, 1, input, {}, 0, 0});
  s.add(0, Step{StepKind::Send, 1, token, {}, 1, 1});
  s.add(1, Step{StepKind::RecvReduce, 0, input, output, 0, 0});
  s.add(1, Step{StepKind::Send, 2, output, {}, 0, 0});
  s.add(1, Step{StepKind::Recv, 0, {}, taken, 1, 1});
  for (int copy = 0; copy < 3; ++copy) {
    s.add(1, Step{StepKind::Copy, -1, copy % 2 == 0 ? low : high, copy % 2 == 0 ? high : low, 1, 1});
  }
  s.add(2, Step{StepKind::Recv, 1, {}, output, 0, 0});
  ASSERT_TRUE(validate(s).ok()) << validate(s).error().message;
  std::vector<std::vector<float>> memory(6, std::vector<float>(n));
  std::vector<float> scratch(2 * stall + 1);
  for (std::size_t i = 0; i < n; ++i) {
    memory[0][i] = static_cast<float>(i % 1000);
    memory[2][i] = static_cast<float>(i % 777) * 0.5F;
  }
  auto bytes = [](std::vector<float>& floats) { return reinterpret_cast<std::byte*>(floats.data()); };
  ProcRunOptions options;
  options.protocol.reliable = true;
  options.protocol.timeout = 30;
  options.protocol.retransmit = 0.002;  // far shorter than rank 1's copies
  options.protocol.retries = 1000;
  options.deadline = 120;
  const std::vector<ProcBuffers> buffers{ProcBuffers{bytes(memory[0]), bytes(memory[1]), nullptr},
                                         ProcBuffers{bytes(memory[2]), bytes(memory[3]), bytes(scratch)},
                                         ProcBuffers{bytes(memory[4]), bytes(memory[5]), nullptr}};
  const std::vector<std::uint64_t> sent_again = run_on_thread_ranks(s, buffers, options);
  EXPECT_GT(sent_again[1], 0u) << "rank 2 never asked rank 1 to go back: the forwarded message was not sent again";
  for (std::size_t i = 0; i < n; ++i) {
    ASSERT_EQ(memory[3][i], memory[0][i] + memory[2][i]) << i;
    ASSERT_EQ(memory[5][i], memory[3][i]) << i;
  }
}

// Flips a byte of the first piece of every message's first transmission, after its checksum was
// taken: that piece arrives damaged (a forwarding receiver pushes a message's first piece on at
// once, its send posted and the next FIFO empty); a retransmission goes through whole.
class DamageFirstTransmissions final : public LinkHook {
 public:
  SendDecision on_send(const Message& message, std::span<std::byte> payload) override {
    if (message.attempt == 0 && !payload.empty()) payload[0] ^= std::byte{0x10};
    return {};
  }
};

// Receive and forward with a damaged piece coming in: only rank 0's sends pass the hook above, so
// rank 1 (no hook) takes what rank 0 sends into its output (reduced with its input, or copied)
// and pushes each piece on to rank 2 as it lands. The damaged piece must be caught before it is
// landed and passed on: reliable, rank 1 asks again and both outputs are what rank 0 sent (plus
// rank 1's input); unreliable, the run fails on every rank, rank 1 naming the checksum.
void forward_a_damaged_piece(std::size_t n, bool reduces, bool reliable) {
  SCOPED_TRACE(std::to_string(n) + " elements, " + (reduces ? "reduced" : "copied") + ", " +
               (reliable ? "reliable" : "unreliable"));
  Schedule s = hand_made("forward-a-damaged-piece", n, 3);
  const Range input{BufferKind::Input, 0, n}, output{BufferKind::Output, 0, n};
  s.add(0, Step{StepKind::Send, 1, input, {}, 0, 0});
  s.add(1, reduces ? Step{StepKind::RecvReduce, 0, input, output, 0, 0} : Step{StepKind::Recv, 0, {}, output, 0, 0});
  s.add(1, Step{StepKind::Send, 2, output, {}, 0, 0});
  s.add(2, Step{StepKind::Recv, 1, {}, output, 0, 0});
  ASSERT_TRUE(validate(s).ok()) << validate(s).error().message;
  std::vector<std::vector<float>> memory(6, std::vector<float>(n));
  for (std::size_t i = 0; i < n; ++i) {
    memory[0][i] = static_cast<float>(i % 1000);
    memory[2][i] = static_cast<float>(i % 777) * 0.5F;
  }
  auto bytes = [&](std::size_t i) { return reinterpret_cast<std::byte*>(memory[i].data()); };
  DamageFirstTransmissions damage;
  std::vector<ProcRunOptions> options(3);
  for (ProcRunOptions& each : options) {
    each.protocol.reliable = reliable;
    each.protocol.retries = 1000;  // a 16 MiB message on loaded cores: asked again many times while it streams
    each.deadline = 60;
  }
  options[0].hook = &damage;
  const std::vector<ThreadRankRun> runs =
      run_each_on_thread_ranks(s,
                               {ProcBuffers{bytes(0), bytes(1), nullptr}, ProcBuffers{bytes(2), bytes(3), nullptr},
                                ProcBuffers{bytes(4), bytes(5), nullptr}},
                               options);
  if (!reliable) {  // (the first piece fails: nothing is forwarded, though the send was posted to be)
    for (const ThreadRankRun& each : runs) EXPECT_FALSE(each.status.ok()) << "a damaged piece went unnoticed";
    const std::string said = runs[1].status.ok() ? "" : runs[1].status.error().text();
    EXPECT_NE(said.find("failed its checksum"), std::string::npos) << said;
    return;
  }
  for (const ThreadRankRun& each : runs) EXPECT_TRUE(each.status.ok()) << each.status.error().text();
  EXPECT_GT(runs[1].forwarded, 0u) << "rank 1 forwarded nothing: the test does not reach receive and forward";
  EXPECT_GT(runs[0].sent_again, 0u) << "rank 1 never asked again for the damaged piece";
  for (std::size_t i = 0; i < n; ++i) {
    const float sent = reduces ? memory[0][i] + memory[2][i] : memory[0][i];
    ASSERT_EQ(std::bit_cast<std::uint32_t>(memory[3][i]), std::bit_cast<std::uint32_t>(sent)) << "rank 1, at " << i;
    ASSERT_EQ(std::bit_cast<std::uint32_t>(memory[5][i]), std::bit_cast<std::uint32_t>(sent)) << "rank 2, at " << i;
  }
}

// Both with the output in the caches (4 MiB) and landed around them (16 MiB: a reduction goes
// into a piece of its own first).
TEST(ProcTransport, ADamagedPieceIsNeverForwarded) {
  for (const std::size_t n : {std::size_t{1} << 20, std::size_t{4} << 20}) {
    for (const bool reduces : {true, false}) {
      forward_a_damaged_piece(n, reduces, true);
      forward_a_damaged_piece(n, reduces, false);
    }
  }
}

}  // namespace
}  // namespace collcheck
