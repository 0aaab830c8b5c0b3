// What every backend gets from the interface (impls/backend/backend.h): a run that throws is
// reported `detected` with its cause, and every backend make_backends returns is caught that way;
// a call a library refuses refuses the rank's run, and the refusal travels and combines; a rank's
// results cross the control channel intact, frame by frame; files pinned for a campaign's worlds
// (pinned_files.h) stay what was first read.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <sys/socket.h>
#include <unistd.h>

#include "impls/backend/backend.h"
#include "impls/backend/pinned_files.h"
#include "impls/backend/rank_calls.h"
#include "impls/registry.h"
#include "impls/worlds/control_socket.h"
#include "impls/worlds/wire.h"
#include "reference/case.h"

namespace collcheck {
namespace {

// A backend whose run throws what it is told to, or an int.
class ThrowingBackend final : public Backend {
 public:
  explicit ThrowingBackend(bool standard) : standard_(standard) {}
  std::string name() const override { return "throwing"; }
  Capabilities capabilities() const override { return {}; }
  RepeatedRun run(const Case&, const RunOptions&) override {
    if (standard_) throw std::logic_error("chunk count wrapped");
    throw 7;
  }

 private:
  bool standard_;
};

Case small_case() {
  Case c;
  c.nranks = 2;
  c.count = 4;
  return c;
}

TEST(CaughtBackend, AnExceptionInTheRunIsDetectedWithItsMessage) {
  const std::unique_ptr<Backend> backend = catching_exceptions(std::make_unique<ThrowingBackend>(true));
  const RepeatedRun run = backend->run(small_case(), RunOptions{});
  EXPECT_EQ(run.outcome, Outcome::Detected);
  EXPECT_EQ(run.error, "an exception in the run: chunk count wrapped");
  EXPECT_TRUE(run.calls.empty()) << "nothing is handed to the oracle";
  EXPECT_EQ(backend->name(), "throwing");
}

TEST(CaughtBackend, AnythingElseThrownIsDetectedToo) {
  const std::unique_ptr<Backend> backend = catching_exceptions(std::make_unique<ThrowingBackend>(false));
  const RepeatedRun run = backend->run(small_case(), RunOptions{});
  EXPECT_EQ(run.outcome, Outcome::Detected);
  EXPECT_NE(run.error.find("not a std::exception"), std::string::npos) << run.error;
}

TEST(CaughtBackend, BackendsFromARegistrySpecRunAsBefore) {
  auto backends = make_backends("ring@sim", BackendOptions{});
  ASSERT_TRUE(backends.ok()) << backends.error().message;
  ASSERT_EQ(backends->size(), 1u);
  EXPECT_EQ((*backends)[0]->name(), "ring@sim");
  const RepeatedRun run = (*backends)[0]->run(small_case(), RunOptions{});
  EXPECT_EQ(run.outcome, Outcome::Ok) << run.error;
}

// A spec of one backend makes it; a spec of several, or a bad one, is an error that says so.
TEST(Registry, MakeOneBackendTakesASpecOfOneBackend) {
  Result<std::unique_ptr<Backend>> one = make_one_backend("ring@sim:chunk=5");
  ASSERT_TRUE(one.ok()) << one.error().text();
  EXPECT_EQ((*one)->name(), "ring@sim:chunk=5");
  Result<std::unique_ptr<Backend>> several = make_one_backend("all@sim");
  ASSERT_FALSE(several.ok());
  EXPECT_NE(several.error().text().find("'all@sim' names 9 backends, not one"), std::string::npos)
      << several.error().text();
  Result<std::unique_ptr<Backend>> bad = make_one_backend("wheel@sim");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().text().find("'wheel' is not an algorithm"), std::string::npos) << bad.error().text();
}

// What comes before `@` reads alike on every transport, in this process or across processes:
// `all` names every algorithm, `mutant:NAME` the mutant (process mutants only across processes),
// an unknown name the same error with what is allowed.
TEST(Registry, EveryTransportReadsWhatTheSpecNamesAlike) {
  BackendOptions options;
  options.worlds_of_threads = true;
  const Result<std::vector<std::unique_ptr<Backend>>> on_sim = make_backends("all@sim", options);
  ASSERT_TRUE(on_sim.ok()) << on_sim.error().text();
  for (const std::string transport : {"cuda-host", "proc", "ib:verbs=loopback"}) {
    const std::string suffix = "@" + transport;
    const Result<std::vector<std::unique_ptr<Backend>>> all = make_backends("all" + suffix, options);
    ASSERT_TRUE(all.ok()) << all.error().text();
    ASSERT_EQ(all->size(), on_sim->size()) << transport;
    for (std::size_t k = 0; k < all->size(); ++k) {
      const std::string algorithm = (*on_sim)[k]->name().substr(0, (*on_sim)[k]->name().find('@'));
      EXPECT_EQ((*all)[k]->name(), algorithm + suffix);
    }
    const Result<std::unique_ptr<Backend>> mutant = make_one_backend("mutant:drop-remainder" + suffix, options);
    ASSERT_TRUE(mutant.ok()) << mutant.error().text();
    EXPECT_EQ((*mutant)->name(), "mutant:drop-remainder" + suffix);
    const Result<std::unique_ptr<Backend>> unknown = make_one_backend("wheel" + suffix, options);
    ASSERT_FALSE(unknown.ok());
    EXPECT_NE(
        unknown.error().text().find(
            "'wheel' is not an algorithm: algorithms are ring, tree, rhd, innet, pairwise, bruck, chain, binomial, "
            "rd, or all, or mutant:NAME, or schedule:FILE"),
        std::string::npos)
        << unknown.error().text();
  }
  EXPECT_TRUE(make_one_backend("mutant:hang@proc", options).ok());
  const Result<std::unique_ptr<Backend>> hang_on_sim = make_one_backend("mutant:hang@sim", options);
  ASSERT_FALSE(hang_on_sim.ok());
  EXPECT_NE(hang_on_sim.error().text().find("no such mutant: mutants are mutant:drop-remainder,"), std::string::npos)
      << hang_on_sim.error().text();
}

// With worlds_of_threads, backends across processes run every rank as a thread of this process:
// launcher arguments that mpirun refuses change nothing. Without it the same spec launches its
// world through mpirun, which refuses them, and the backend says it cannot run here.
TEST(Registry, WorldsOfThreadsRunBackendsAcrossProcessesInThisProcess) {
  const Case c = parse_case("allreduce/f32/sum/n=40/ranks=3").value();
  BackendOptions options;
  options.launcher_arguments = {"--no-such-option-of-mpirun"};
  options.worlds_of_threads = true;
  Result<std::unique_ptr<Backend>> threads = make_one_backend("ring@proc:chunk=5", options);
  ASSERT_TRUE(threads.ok()) << threads.error().text();
  const RepeatedRun ran = (*threads)->run(c, RunOptions{});
  EXPECT_EQ(ran.outcome, Outcome::Ok) << ran.error;
  EXPECT_TRUE((*threads)->cannot_run_here().empty());
  options.worlds_of_threads = false;
  Result<std::unique_ptr<Backend>> launched = make_one_backend("ring@proc:chunk=5", options);
  ASSERT_TRUE(launched.ok()) << launched.error().text();
  EXPECT_NE((*launched)->run(c, RunOptions{}).outcome, Outcome::Ok);
  EXPECT_FALSE((*launched)->cannot_run_here().empty());
}

// A call the library refuses (CallEnd::refusal) ends the rank's run detected and refused, with
// which call it was; an ordinary error does not refuse it.
TEST(RankCalls, ARefusedCallRefusesTheRankRun) {
  const Case c = parse_case("allreduce/f32/sum/n=8/ranks=1").value();
  std::vector<std::unique_ptr<World>> worlds = make_thread_worlds(1);
  RankBuffers buffers = make_rank_buffers(c, 0);
  RankRunOptions options;
  options.calls = 2;
  int calls = 0;
  const RankRun refused = run_rank_calls(c, options, *worlds.front(), buffers, [&]() -> CallEnd {
    return ++calls == 2 ? CallEnd::refusal("no algorithm for this") : CallEnd();
  });
  EXPECT_EQ(refused.outcome, Outcome::Detected);
  EXPECT_TRUE(refused.refused);
  EXPECT_EQ(refused.error, "no algorithm for this (call 2 of 2)");
  const RankRun failed = run_rank_calls(c, options, *worlds.front(), buffers, [] { return std::string("peer gone"); });
  EXPECT_EQ(failed.outcome, Outcome::Detected);
  EXPECT_FALSE(failed.refused);
}

// A refusal crosses the wire from worker to launcher and refuses the world's run, unless another
// rank ended worse (a hang beside it is a finding of its own).
TEST(RankCalls, ARefusalTravelsAndCombinesIntoTheWorldsRun) {
  RankRun refused = RankRun::ended(Outcome::Detected, "NCCL refused the call");
  refused.refused = true;
  const Result<RankRun> decoded = wire::decode_run(wire::encode(refused));
  ASSERT_TRUE(decoded.ok());
  EXPECT_TRUE(decoded->refused);
  EXPECT_TRUE(wire::combine({*decoded, *decoded}).refused);
  RankRun ok;
  ok.calls.resize(1);
  EXPECT_TRUE(wire::combine({ok, *decoded}).refused);
  EXPECT_FALSE(wire::combine({*decoded, RankRun::ended(Outcome::Hang, "no reply")}).refused);
  EXPECT_FALSE(wire::combine({RankRun::ended(Outcome::Detected, "peer gone"), ok}).refused);
}

// A worker's reply, encoded from the run it lets go of, reads back as the same run, byte for byte the
// encoding of the run kept, and the results' bytes are gone from the run once written.
TEST(RankCalls, AReplyEncodedFromTheRunItLetsGoOfIsTheSame) {
  RankRun run;
  run.seconds = 0.25;
  for (int k = 0; k < 2; ++k) {
    RankResult call;
    call.output.assign(1000 + static_cast<std::size_t>(k), std::byte{0x5a});
    call.input.assign(3, std::byte{static_cast<unsigned char>(k)});
    call.guards_intact = k == 0;
    run.calls.push_back(call);
  }
  const std::vector<std::byte> kept = wire::encode(run);
  RankRun given = run;
  const std::vector<std::byte> moved = wire::encode(std::move(given));
  EXPECT_EQ(moved, kept);
  for (const RankResult& call : given.calls) EXPECT_TRUE(call.output.empty() && call.input.empty());
  const Result<RankRun> decoded = wire::decode_run(moved);
  ASSERT_TRUE(decoded.ok());
  ASSERT_EQ(decoded->calls.size(), 2u);
  EXPECT_EQ(decoded->calls[1].output, run.calls[1].output);
  EXPECT_EQ(decoded->calls[0].input, run.calls[0].input);
  EXPECT_FALSE(decoded->calls[1].guards_intact);
  EXPECT_EQ(decoded->seconds, 0.25);
}

// Frames cross the control channel whole and in order, whatever the reads cut them into: an empty
// one, one larger than the socket's buffers (sent while the other end reads), and one whose header
// arrives a byte at a time; a header announcing an absurd length ends the channel, said.
TEST(ControlSocket, FramesArriveWholeWhateverTheReadsCutThemInto) {
  int ends[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, ends), 0);
  ControlSocket sender(ends[0]), receiver(ends[1]);
  std::vector<std::byte> large(3 << 20);
  for (std::size_t i = 0; i < large.size(); ++i) large[i] = static_cast<std::byte>(i * 131 % 251);
  std::thread sending([&] {
    EXPECT_TRUE(sender.send(FrameKind::Hello, {}).ok());
    EXPECT_TRUE(sender.send(FrameKind::Result, large).ok());
  });
  Result<Frame> empty = receiver.receive(seconds_from_now(10));
  ASSERT_TRUE(empty.ok()) << empty.error().message;
  EXPECT_EQ(empty->kind, FrameKind::Hello);
  EXPECT_TRUE(empty->payload.empty());
  Result<Frame> whole = receiver.receive(seconds_from_now(10));
  sending.join();
  ASSERT_TRUE(whole.ok()) << whole.error().message;
  EXPECT_EQ(whole->kind, FrameKind::Result);
  EXPECT_EQ(whole->payload, large);

  // A frame of kind Dying and payload "ab", its header written a byte at a time.
  const unsigned char header[] = {4, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0};
  Frame frame;
  for (unsigned char byte : header) {
    ASSERT_EQ(::write(ends[0], &byte, 1), 1);
    Result<bool> done = receiver.receive_some(frame);
    ASSERT_TRUE(done.ok());
    EXPECT_FALSE(*done);
  }
  ASSERT_EQ(::write(ends[0], "ab", 2), 2);
  Result<bool> done = receiver.receive_some(frame);
  ASSERT_TRUE(done.ok());
  EXPECT_TRUE(*done);
  EXPECT_EQ(frame.kind, FrameKind::Dying);
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(frame.payload.data()), frame.payload.size()), "ab");

  const unsigned char absurd[] = {3, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x7f};
  ASSERT_EQ(::write(ends[0], absurd, sizeof absurd), static_cast<ssize_t>(sizeof absurd));
  Result<Frame> refused = receiver.receive(seconds_from_now(10));
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().message.find("a frame header announcing"), std::string::npos) << refused.error().message;
}

// The ranks of a world that one rank stopped all say the same: the world's error says it once,
// with the ranks that said it, each other error after it in the order of its first rank.
TEST(RankCalls, TheSameErrorFromManyRanksIsSaidOnceWithItsRanks) {
  RankRun ok;
  ok.calls.resize(1);
  const std::string stopped = "rank 2 stopped the run: no message for 0.1 s";
  std::vector<RankRun> ranks(7, RankRun::ended(Outcome::Detected, stopped));
  ranks[2] = RankRun::ended(Outcome::Detected, "no message for 0.1 s");
  ranks[4] = ok;
  const RepeatedRun world = wire::combine(ranks);
  EXPECT_EQ(world.outcome, Outcome::Detected);
  EXPECT_EQ(world.error, "ranks 0,1,3,5,6: " + stopped + "; rank 2: no message for 0.1 s");
}

std::string whole_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// A sealed copy holds the bytes as given and takes no write, so an edit of the file they came
// from cannot reach a world that reads the copy. Catches a copy left unsealed or cut short.
TEST(PinnedFiles, ASealedCopyKeepsItsBytesAndTakesNoWrite) {
  const std::string text = "collcheck-schedule 1\nalgorithm ring\n";
  const int copy = sealed_copy(text);
  ASSERT_GE(copy, 0);
  const std::string name = "/proc/self/fd/" + std::to_string(copy);
  EXPECT_EQ(whole_file(name), text);
  EXPECT_LT(::write(copy, "x", 1), 0);
  EXPECT_LT(::ftruncate(copy, 0), 0);
  EXPECT_EQ(whole_file(name), text);
}

// A file kept open is the file as it was when opened, once its path names another (a rebuild
// removes the file and writes a new one), and the same descriptor every time it is asked for.
TEST(PinnedFiles, AFileKeptOpenOutlivesItsPathBeingReplaced) {
  const std::string path =
      (std::filesystem::temp_directory_path() / ("collcheck-pinned-test-" + std::to_string(::getpid()) + ".so"))
          .string();
  std::ofstream(path) << "first build";
  const int kept = kept_open(path);
  ASSERT_GE(kept, 0);
  EXPECT_EQ(kept_open(path), kept);
  std::filesystem::remove(path);
  std::ofstream(path) << "second build, half written";
  EXPECT_EQ(whole_file("/proc/self/fd/" + std::to_string(kept)), "first build");
  std::filesystem::remove(path);
}

// A world's process reads the pinned file only for the very path and role it was pinned for, and
// only while it can be read; anything else reads the path. Catches a pin taken for another file
// (a second plugin, a schedule file) or a stale name followed.
TEST(PinnedFiles, AWorldReadsThePinnedFileOnlyForItsPathAndRole) {
  const int copy = sealed_copy("pinned");
  ASSERT_GE(copy, 0);
  const PinnedEnvironment environment = pin_for_worlds("SCHEDULE", "ring.schedule", copy);
  ASSERT_EQ(environment.size(), 2u);
  for (const auto& [name, value] : environment) ::setenv(name.c_str(), value.c_str(), 1);
  EXPECT_EQ(whole_file(pinned_or("SCHEDULE", "ring.schedule")), "pinned");
  EXPECT_EQ(pinned_or("SCHEDULE", "other.schedule"), "other.schedule");
  EXPECT_EQ(pinned_or("PLUGIN", "ring.schedule"), "ring.schedule");
  ::setenv(environment[1].first.c_str(), "/proc/self/fd/999999", 1);
  EXPECT_EQ(pinned_or("SCHEDULE", "ring.schedule"), "ring.schedule");
  for (const auto& [name, value] : environment) ::unsetenv(name.c_str());
  EXPECT_EQ(pinned_or("SCHEDULE", "ring.schedule"), "ring.schedule");
  EXPECT_TRUE(pin_for_worlds("SCHEDULE", "ring.schedule", -1).empty());
}

}  // namespace
}  // namespace collcheck
