// The plugin loader (impls/plugin/): every way a plugin can fail to load or start is an error
// that names the plugin and the cause; options and knobs reach the plugin as it documents.
#include <gtest/gtest.h>

#include <array>
#include <optional>
#include <string>
#include <vector>

#include "collcheck/config.h"
#include "impls/backend/world.h"
#include "impls/registry.h"
#include "tests/support/errors.h"
#include "tests/support/rank_group.h"

namespace collcheck {
namespace {

using testing::expect_error;

std::string broken(const std::string& name) {
  return std::string(COLLCHECK_TEST_PLUGINS) + "/libcollcheck_broken_plugin_" + name + ".so";
}

TEST(Plugin, AFileThatCannotBeLoadedIsNamed) {
  const std::string path = std::string(COLLCHECK_TEST_PLUGINS) + "/libnot-there.so";
  expect_error(rank_backend_specs("plugin:" + path), "--backend", {"plugin", path, "cannot be loaded"});
  expect_error(rank_backend_specs("plugin:"), "--backend", {"no path", "plugin:PATH"});
}

TEST(Plugin, AMissingSymbolIsNamed) {
  const std::string path = broken("no_symbol");
  expect_error(rank_backend_specs("plugin:" + path), "--backend",
               {path, "exports no symbol collcheck_backend_plugin_v1"});
}

TEST(Plugin, AnotherAbiVersionIsNamed) {
  const std::string path = broken("version_2");
  expect_error(rank_backend_specs("plugin:" + path), "--backend",
               {path, "exports collcheck_backend_plugin_v2, ABI version 2", "loads version 1"});
  const std::string field = broken("abi_field");
  expect_error(rank_backend_specs("plugin:" + field), "--backend", {field, "has abi_version 7", "loads version 1"});
}

// init fails on every rank: making the rank backend is an error naming the plugin, the rank and
// the plugin's own message.
TEST(Plugin, AFailingInitIsNamedWithItsMessage) {
  const std::string path = broken("init");
  Result<std::vector<RankBackendSpec>> specs = rank_backend_specs("plugin:" + path);
  ASSERT_TRUE(specs.ok()) << specs.error().text();
  std::vector<std::unique_ptr<World>> worlds = make_thread_worlds(2);
  std::array<std::optional<Result<std::unique_ptr<RankBackend>>>, 2> made;
  testing::on_every_rank(2, [&](int rank) {
    made[static_cast<std::size_t>(rank)].emplace(specs->front().make(*worlds[static_cast<std::size_t>(rank)]));
  });
  expect_error(*made[0], "--backend", {path, "init failed on rank 0 of 2: no transport for rank 0 here"});
  expect_error(*made[1], "--backend", {path, "init failed on rank 1 of 2: no transport for rank 1 here"});
}

// Where a plugin's buffers live: device memory (COLLCHECK_MEMORY_CUDA) is taken where CUDA was
// built, its specs saying why they cannot run where there is no GPU; any other value is refused.
TEST(Plugin, DeviceMemoryIsTakenAndAnUnknownMemoryRefused) {
  const std::string bad = broken("bad_memory");
  expect_error(rank_backend_specs("plugin:" + bad), "--backend", {bad, "memory 5: must be COLLCHECK_MEMORY_HOST"});
  const std::string path = broken("cuda_memory");
  Result<std::vector<RankBackendSpec>> specs = rank_backend_specs("plugin:" + path);
#if COLLCHECK_HAVE_CUDA
  ASSERT_TRUE(specs.ok()) << specs.error().text();
  EXPECT_EQ(specs->front().capabilities.memory, "device");
  if (specs->front().cannot_run_here.empty()) GTEST_SKIP() << "this machine has a GPU";
  EXPECT_NE(specs->front().cannot_run_here.find("no CUDA device"), std::string::npos) << specs->front().cannot_run_here;
  Result<std::vector<std::unique_ptr<Backend>>> backends = make_backends("plugin:" + path);
  ASSERT_TRUE(backends.ok()) << backends.error().text();
  EXPECT_EQ(backends->front()->cannot_run_here(), specs->front().cannot_run_here)
      << "check launches nothing and says why";
#else
  expect_error(specs, "--backend", {path, "memory COLLCHECK_MEMORY_CUDA: this build has no CUDA"});
#endif
}

// The plugin reads its own options: a bad one is its error, before any world starts; a bare word
// is ours.
TEST(Plugin, BadOptionsAreRefusedBeforeAnyWorldStarts) {
  const std::string spec = std::string("plugin:") + COLLCHECK_EXAMPLE_RING;
  expect_error(rank_backend_specs(spec + ":bug=nope"), "--backend",
               {"capabilities failed", "bug=nope: must be none, block-boundary, odd-ranks or in-place-offset"});
  expect_error(rank_backend_specs(spec + ":nope"), "--backend", {"'nope'", "must be key=value"});
  expect_error(rank_backend_specs(spec + ":bug=odd-ranks,bug=none"), "--backend", {"bug", "given twice"});
}

// What the example says it runs, and its knob: drawn per run unless the options fix it.
TEST(Plugin, CapabilitiesAndKnobsComeFromThePlugin) {
  const std::string spec = std::string("plugin:") + COLLCHECK_EXAMPLE_RING;
  Result<std::vector<RankBackendSpec>> specs = rank_backend_specs(spec);
  ASSERT_TRUE(specs.ok()) << specs.error().text();
  const Capabilities& c = specs->front().capabilities;
  EXPECT_EQ(c.collectives,
            (std::vector<Collective>{Collective::AllReduce, Collective::AllGather, Collective::ReduceScatter}));
  EXPECT_EQ(c.ops, (std::vector<RedOp>{RedOp::Sum, RedOp::Prod, RedOp::Min, RedOp::Max}));
  EXPECT_TRUE(c.in_place);
  EXPECT_TRUE(c.knobs_per_run);
  ASSERT_EQ(c.knobs.size(), 1U);
  EXPECT_EQ(c.knobs[0].name, "slice");
  EXPECT_EQ(c.knobs[0].high, 1U << 20);
  Result<std::vector<RankBackendSpec>> fixed = rank_backend_specs(spec + ":slice=128");
  ASSERT_TRUE(fixed.ok()) << fixed.error().text();
  EXPECT_TRUE(fixed->front().capabilities.knobs.empty());
}

// A drawn knob reaches the plugin's run: a value outside its range is its error, per call.
TEST(Plugin, DrawnKnobsReachTheRun) {
  Result<std::vector<RankBackendSpec>> specs = rank_backend_specs(std::string("plugin:") + COLLCHECK_EXAMPLE_RING);
  ASSERT_TRUE(specs.ok()) << specs.error().text();
  testing::Group group;
  group.worlds = make_thread_worlds(2);
  group.backends.resize(2);
  testing::on_every_rank(2, [&](int rank) {  // init is collective: every rank at once
    const auto index = static_cast<std::size_t>(rank);
    group.backends[index] = specs->front().make(*group.worlds[index]).value();
  });
  Case c;
  c.collective = Collective::AllReduce;
  c.dtype = DType::Int32;
  c.count = 1000;
  c.nranks = 2;
  std::vector<RankRun> runs(2);
  for (const std::string knobs : {"slice=64", "slice=3"}) {
    testing::on_every_rank(2, [&](int rank) {
      RankRunOptions options;
      options.knobs = knobs;
      runs[static_cast<std::size_t>(rank)] = group.backends[static_cast<std::size_t>(rank)]->run(c, options);
    });
    const bool good = knobs == std::string("slice=64");
    EXPECT_EQ(runs[0].outcome, good ? Outcome::Ok : Outcome::Detected) << knobs << ": " << runs[0].error;
    if (!good) {
      EXPECT_NE(runs[0].error.find("slice=3: must be 64..1048576 bytes"), std::string::npos) << runs[0].error;
    }
  }
  testing::on_every_rank(2, [&](int rank) { group.backends[static_cast<std::size_t>(rank)].reset(); });
}

}  // namespace
}  // namespace collcheck
