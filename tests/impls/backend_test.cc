// What every backend gets from the interface (impls/backend/backend.h): a run that throws is
// reported `detected` with its cause, and every backend make_backends returns is caught that way;
// a call a library refuses refuses the rank's run, and the refusal travels and combines; files
// pinned for a campaign's worlds (pinned_files.h) stay what was first read.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <stdexcept>
#include <string>

#include <unistd.h>

#include "impls/backend/backend.h"
#include "impls/backend/pinned_files.h"
#include "impls/backend/rank_calls.h"
#include "impls/registry.h"
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
