// The mutants on the simulated fabric: each breaks where its bug can show (the oracle, rank agreement,
// guard zones, a second interleaving or the deadline says so) and is correct where it cannot.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <stdexcept>
#include <string>

#include "impls/link/guarded_buffer.h"
#include "impls/mutants/mutants.h"
#include "reference/oracle.h"
#include "tests/support/cases.h"

namespace collcheck {
namespace {

Case make_case(Collective collective, DType dtype, RedOp op, std::size_t count, int nranks) {
  Case c = testing::make_case(collective, dtype, op, count, nranks);
  c.seed = 77;
  return c;
}

Case allreduce(DType dtype, RedOp op, std::size_t count, int nranks) {
  return make_case(Collective::AllReduce, dtype, op, count, nranks);
}

const Mutant& mutant(std::string_view name) {
  const Mutant* found = find_mutant(name);
  if (found == nullptr) throw std::runtime_error("no mutant " + std::string(name));
  return *found;
}

// Runs the mutant's schedule for `c` as the sim backend would, after checking it is valid.
SimulatedRun run(const Mutant& m, const Case& c, std::uint64_t seed = 0, const Knobs& knobs = {}) {
  Result<Schedule> schedule = m.variant.schedule(c, knobs);
  if (!schedule) {
    SimulatedRun refused;
    refused.error = schedule.error().text();
    return refused;
  }
  const Status valid = validate(*schedule, kGuardElements);
  EXPECT_TRUE(valid.ok()) << m.variant.name << " " << to_string(c) << ": " << valid.error().text();
  SimulationOptions options(seed, nullptr, true);
  options.guard = kGuardElements;  // as the sim backend runs them
  options.reduction = m.variant.reduction;
  return simulate(*schedule, sim_fabric(c.nranks), options);
}

// How many ranks' outputs the oracle rejects.
int wrong_ranks(const Case& c, const SimulatedRun& run) {
  Oracle oracle(c);
  int wrong = 0;
  for (int rank = 0; rank < c.nranks; ++rank) {
    if (!compare(oracle.expected(rank), rank, run.outputs.at(static_cast<std::size_t>(rank))).ok) ++wrong;
  }
  return wrong;
}

bool ranks_agree(const SimulatedRun& run) {
  return std::all_of(run.outputs.begin(), run.outputs.end(), [&](const auto& out) { return out == run.outputs[0]; });
}

bool guards_intact(const SimulatedRun& run) {
  return std::all_of(run.guards_intact.begin(), run.guards_intact.end(), [](bool intact) { return intact; });
}

bool inputs_intact(const Case& c, const SimulatedRun& run) {
  const InputGenerator inputs(c);
  for (int rank = 0; rank < c.nranks; ++rank) {
    std::vector<std::byte> want(run.inputs.at(static_cast<std::size_t>(rank)).size());
    inputs.fill(rank, 0, want);
    if (want != run.inputs[static_cast<std::size_t>(rank)]) return false;
  }
  return true;
}

// Completed, every rank right, ranks in agreement, buffers safe: what a correct run looks like.
void expect_correct(const Mutant& m, const Case& c, const Knobs& knobs = {}, std::uint64_t seed = 0) {
  const SimulatedRun r = run(m, c, seed, knobs);
  ASSERT_TRUE(r.completed) << m.variant.name << " " << to_string(c) << ": " << r.error;
  EXPECT_EQ(wrong_ranks(c, r), 0) << m.variant.name << " " << to_string(c);
  if (rank_identical(c.collective)) {
    EXPECT_TRUE(ranks_agree(r)) << m.variant.name << " " << to_string(c);
  }
  EXPECT_TRUE(guards_intact(r)) << m.variant.name << " " << to_string(c);
  if (!c.in_place) {
    EXPECT_TRUE(inputs_intact(c, r)) << m.variant.name << " " << to_string(c);
  }
}

// Completed, with at least one rank the oracle rejects.
void expect_wrong(const Mutant& m, const Case& c, const Knobs& knobs = {}) {
  const SimulatedRun r = run(m, c, 0, knobs);
  ASSERT_TRUE(r.completed) << m.variant.name << " " << to_string(c) << ": " << r.error;
  EXPECT_GT(wrong_ranks(c, r), 0) << m.variant.name << " " << to_string(c) << " passed the oracle";
}

TEST(Mutants, EveryMutantIsNamedDescribedAndSaysWhatCatchesIt) {
  // The properties of properties/property.h (impls/ sits below it and cannot ask it).
  const std::set<std::string_view> properties{"oracle",        "rank-agreement", "determinism", "in-place",
                                              "buffer-safety", "liveness",       "composition", "repeat",
                                              "safety",        "recovery",       "reliability"};
  const std::set<std::string_view> required{
      "drop-remainder",      "chunk-off-by-one",  "root-ignored",   "allgather-order", "own-twice",
      "narrow-accumulation", "in-place-clobber",  "write-past-end", "nan-dropped",     "avg-wrong-divisor",
      "rank-order-reduce",   "interleaving-race", "no-checksum",    "no-timeout"};
  std::set<std::string> names;
  for (const Mutant& m : all_mutants()) {
    EXPECT_TRUE(m.variant.name.starts_with("mutant:")) << m.variant.name;
    EXPECT_TRUE(names.insert(m.variant.name).second) << "two mutants named " << m.variant.name;
    EXPECT_FALSE(m.variant.description.empty()) << m.variant.name;
    EXPECT_FALSE(m.variant.collectives.empty()) << m.variant.name;
    EXPECT_TRUE(m.variant.schedule) << m.variant.name;
    EXPECT_FALSE(m.caught_by.empty()) << m.variant.name;
    for (std::string_view property : m.caught_by) EXPECT_TRUE(properties.contains(property)) << property;
  }
  for (std::string_view name : required) EXPECT_TRUE(names.contains("mutant:" + std::string(name))) << name;
}

TEST(Mutants, FindTakesTheNameWithOrWithoutItsPrefix) {
  ASSERT_NE(find_mutant("own-twice"), nullptr);
  EXPECT_EQ(find_mutant("own-twice"), find_mutant("mutant:own-twice"));
  EXPECT_EQ(find_mutant("mutant:own-twice")->variant.name, "mutant:own-twice");
  EXPECT_EQ(find_mutant("no-such-bug"), nullptr);
  EXPECT_EQ(find_mutant("mutant:"), nullptr);
  EXPECT_EQ(find_mutant(""), nullptr);
}

// Every schedule is valid with the backend's guard and completes (but the deadlock's), on
// awkward shapes, so that a mutant fails in its data and not by hanging or being refused.
TEST(Mutants, EveryScheduleIsValidAndCompletes) {
  for (const Mutant& m : all_mutants()) {
    for (Collective collective : m.variant.collectives) {
      for (int n : {1, 2, 3, 5}) {
        for (std::size_t count : {std::size_t{0}, std::size_t{1}, std::size_t{7}, std::size_t{13}}) {
          for (bool in_place : {false, true}) {
            Case c = make_case(collective, DType::Int32, RedOp::Sum, count, n);
            c.in_place = in_place;
            c.root = n - 1;
            const SimulatedRun r = run(m, c);
            const bool hangs = m.variant.name == "mutant:deadlock" && n > 1 && count > 0;
            EXPECT_EQ(r.completed, !hangs) << m.variant.name << " " << to_string(c) << ": " << r.error;
          }
        }
      }
    }
  }
}

TEST(Mutants, DropRemainderLosesTheTailOnlyWhenRanksDoNotDivideTheCount) {
  const Mutant& m = mutant("drop-remainder");
  expect_wrong(m, allreduce(DType::Int32, RedOp::Sum, 14, 4));
  Case in_place = allreduce(DType::Float32, RedOp::Sum, 23, 5);
  in_place.in_place = true;
  expect_wrong(m, in_place);
  expect_correct(m, allreduce(DType::Int32, RedOp::Sum, 16, 4));
  expect_correct(m, allreduce(DType::Float32, RedOp::Sum, 25, 5));
  expect_correct(m, allreduce(DType::Int32, RedOp::Sum, 13, 1));
}

TEST(Mutants, ChunkOffByOneLosesInteriorChunkBoundariesOnlyWhenBlocksHaveSeveralChunks) {
  const Mutant& m = mutant("chunk-off-by-one");
  expect_wrong(m, allreduce(DType::Int32, RedOp::Sum, 64, 4), Knobs{4, 1, 4});
  expect_wrong(m, allreduce(DType::Int32, RedOp::Sum, 64, 4));  // its own default chunk
  expect_wrong(m, allreduce(DType::Float32, RedOp::Sum, 100, 3), Knobs{5, 2, 4});
  // Blocks of at most one chunk: no interior boundary, nothing skipped.
  expect_correct(m, allreduce(DType::Int32, RedOp::Sum, 12, 4), Knobs{4, 1, 4});
  expect_correct(m, allreduce(DType::Int32, RedOp::Sum, 64, 4), Knobs{16, 1, 4});
}

TEST(Mutants, RootIgnoredIsWrongOnlyForAnotherRoot) {
  const Mutant& m = mutant("root-ignored");
  for (Collective collective : {Collective::Broadcast, Collective::Reduce}) {
    Case c = make_case(collective, DType::Int32, RedOp::Sum, 20, 5);
    c.root = 2;
    expect_wrong(m, c);
    c.in_place = true;
    expect_wrong(m, c);
    c.root = 0;
    expect_correct(m, c);
    c.in_place = false;
    expect_correct(m, c);
  }
}

TEST(Mutants, AllGatherOrderRotatesTheBlocksOnEveryRankAlike) {
  const Mutant& m = mutant("allgather-order");
  const Case c = make_case(Collective::AllGather, DType::Int32, RedOp::Sum, 6, 4);
  const SimulatedRun r = run(m, c);
  ASSERT_TRUE(r.completed) << r.error;
  EXPECT_EQ(wrong_ranks(c, r), 4);
  EXPECT_TRUE(ranks_agree(r)) << "every rank rotates the same way: only the oracle sees it";
  expect_correct(m, make_case(Collective::AllGather, DType::Int32, RedOp::Sum, 6, 1));
}

TEST(Mutants, OwnTwiceDoubleCountsExceptForIdempotentOps) {
  const Mutant& m = mutant("own-twice");
  expect_wrong(m, allreduce(DType::Int32, RedOp::Sum, 20, 4));
  expect_wrong(m, allreduce(DType::Float32, RedOp::Sum, 20, 3));
  expect_correct(m, allreduce(DType::Int32, RedOp::Max, 20, 4));
  expect_correct(m, allreduce(DType::Float32, RedOp::Min, 20, 4));
}

TEST(Mutants, NarrowAccumulationLosesPrecisionInWideFloatsOnly) {
  const Mutant& m = mutant("narrow-accumulation");
  expect_wrong(m, allreduce(DType::Float32, RedOp::Sum, 64, 4));
  expect_wrong(m, allreduce(DType::Float64, RedOp::Sum, 64, 4));
  // bfloat16's 8 bits fit in float16's 11: it shows where values leave float16's range.
  Case large = allreduce(DType::BFloat16, RedOp::Max, 64, 4);
  large.values = ValueKind::Special;
  expect_wrong(m, large);
  expect_correct(m, allreduce(DType::BFloat16, RedOp::Sum, 64, 4));
  expect_correct(m, allreduce(DType::Float16, RedOp::Sum, 64, 4));
  expect_correct(m, allreduce(DType::Int32, RedOp::Sum, 64, 4));
}

TEST(Mutants, InPlaceClobberSendsPartialSumsOnlyInPlace) {
  const Mutant& m = mutant("in-place-clobber");
  for (ValueKind values : {ValueKind::Exact, ValueKind::Real}) {
    Case c = allreduce(DType::Float32, RedOp::Sum, 32, 4);
    c.values = values;
    expect_correct(m, c);
    c.in_place = true;
    const SimulatedRun r = run(m, c);
    ASSERT_TRUE(r.completed) << r.error;
    EXPECT_EQ(wrong_ranks(c, r), 4) << to_string(c);
    c.in_place = false;
    EXPECT_NE(run(m, c).outputs, r.outputs) << "in place and out of place differ";
  }
}

TEST(Mutants, WritePastEndDamagesOnlyTheGuardZone) {
  const Mutant& m = mutant("write-past-end");
  for (bool in_place : {false, true}) {
    Case c = allreduce(DType::Int32, RedOp::Sum, 17, 4);
    c.in_place = in_place;
    const SimulatedRun r = run(m, c);
    ASSERT_TRUE(r.completed) << r.error;
    EXPECT_EQ(wrong_ranks(c, r), 0) << "the output itself is right";
    EXPECT_EQ(r.guards_intact, (std::vector<bool>{true, true, true, false})) << to_string(c);
    if (!in_place) {
      EXPECT_TRUE(inputs_intact(c, r));
    }
  }
}

TEST(Mutants, NanDroppedLetsRanksDisagreeOnNaNWhileEachPassesTheOracle) {
  const Mutant& m = mutant("nan-dropped");
  for (RedOp op : {RedOp::Max, RedOp::Min}) {
    Case c = allreduce(DType::Float32, op, 256, 4);
    c.values = ValueKind::Special;
    const SimulatedRun r = run(m, c);
    ASSERT_TRUE(r.completed) << r.error;
    EXPECT_EQ(wrong_ranks(c, r), 0) << "NaN and the max of the others are both accepted";
    EXPECT_FALSE(ranks_agree(r)) << to_string(c);
    c.values = ValueKind::Real;  // no NaN to lose
    expect_correct(m, c);
  }
  Case sum = allreduce(DType::Float32, RedOp::Sum, 256, 4);
  sum.values = ValueKind::Special;
  expect_correct(m, sum);
}

TEST(Mutants, AvgWrongDivisorIsWrongForAvgOnly) {
  const Mutant& m = mutant("avg-wrong-divisor");
  expect_wrong(m, allreduce(DType::Float32, RedOp::Avg, 20, 4));
  expect_wrong(m, allreduce(DType::Int32, RedOp::Avg, 20, 3));
  expect_wrong(m, allreduce(DType::Float32, RedOp::Avg, 20, 1));
  expect_correct(m, allreduce(DType::Float32, RedOp::Sum, 20, 4));
}

TEST(Mutants, RankOrderReduceDisagreesBitwiseOnRealValuesWithinTheBound) {
  const Mutant& m = mutant("rank-order-reduce");
  Case c = allreduce(DType::Float32, RedOp::Sum, 256, 5);
  c.values = ValueKind::Real;
  const SimulatedRun r = run(m, c);
  ASSERT_TRUE(r.completed) << r.error;
  EXPECT_EQ(wrong_ranks(c, r), 0) << "every order is within the bound";
  EXPECT_FALSE(ranks_agree(r));
  c.values = ValueKind::Exact;  // exact in every order
  expect_correct(m, c);
  c.in_place = true;
  expect_correct(m, c);
}

// The seeds 0..20 whose interleaving clobbers a partial on `n` ranks; checks both outcomes occur.
std::set<std::uint64_t> losing_seeds(const Mutant& m, int n) {
  const Case c = allreduce(DType::Int32, RedOp::Sum, 64, n);
  std::set<std::vector<std::vector<std::byte>>> outcomes;
  std::set<std::uint64_t> losing;
  for (std::uint64_t seed = 0; seed <= 20; ++seed) {
    const SimulatedRun r = run(m, c, seed);
    EXPECT_TRUE(r.completed) << r.error;
    EXPECT_TRUE(ranks_agree(r));
    if (wrong_ranks(c, r) > 0) losing.insert(seed);
    outcomes.insert(r.outputs);
  }
  EXPECT_FALSE(losing.empty()) << n << " ranks: some interleavings clobber a reduced partial";
  EXPECT_LT(losing.size(), 21u) << n << " ranks: some interleavings initialise before the data arrives";
  EXPECT_EQ(outcomes.size(), 2u) << "right, or missing rank 1's contribution";
  return losing;
}

TEST(Mutants, InterleavingRaceFlipsWithTheScheduleSeed) {
  const Mutant& m = mutant("interleaving-race");
  EXPECT_TRUE(m.variant.deterministic) << "it claims to be; the determinism property holds it to it";
  const std::set<std::uint64_t> on_three = losing_seeds(m, 3);
  // Only ranks 1 and 2 race, so a losing seed loses on any number of ranks: failures shrink.
  EXPECT_EQ(losing_seeds(m, 4), on_three);
  EXPECT_EQ(losing_seeds(m, 9), on_three);
  // In place the initialisation is a no-op, and on two ranks the token always comes first.
  Case in_place = allreduce(DType::Int32, RedOp::Sum, 64, 3);
  in_place.in_place = true;
  for (std::uint64_t seed = 0; seed <= 20; ++seed) expect_correct(m, in_place, {}, seed);
  const Case two_ranks = allreduce(DType::Int32, RedOp::Sum, 64, 2);
  for (std::uint64_t seed = 0; seed <= 20; ++seed) expect_correct(m, two_ranks, {}, seed);
}

// The protocol's wait timeout ends the cyclic wait: detected, not a hang.
TEST(Mutants, DeadlockNeverCompletesOnTwoOrMoreRanks) {
  const Mutant& m = mutant("deadlock");
  for (int n : {2, 3, 8}) {
    const SimulatedRun r = run(m, allreduce(DType::Int32, RedOp::Sum, 40, n), 0, Knobs{4, 2, 4});
    EXPECT_FALSE(r.completed);
    EXPECT_TRUE(r.detected);
    EXPECT_NE(r.error.find("(the link timeout)"), std::string::npos) << r.error;
  }
  expect_correct(m, allreduce(DType::Int32, RedOp::Sum, 40, 1));
}

}  // namespace
}  // namespace collcheck
