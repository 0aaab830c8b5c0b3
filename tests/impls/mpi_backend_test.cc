// The `mpi` backend: its --backend grammar, Open MPI's findings and choosing algorithms at run time,
// under mpiexec (ctest runs this program on 3 ranks; the ranks agree on each test). What every
// backend must do (the oracle, repeated, timed and given-input calls, refusals) is in tests/conformance/.
#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "impls/backend/rank_backend.h"
#include "impls/registry.h"
#include "impls/vendors/mpi/mpi_backend.h"
#include "impls/vendors/mpi/tuned_algorithms.h"
#include "impls/worlds/mpi_world.h"
#include "reference/oracle.h"
#include "tests/support/cases.h"

namespace collcheck {
namespace {

using collcheck::testing::make_case;

World* g_world = nullptr;  // the launched world; null when not run under mpiexec

#define SKIP_UNLESS_LAUNCHED() \
  if (g_world == nullptr) GTEST_SKIP() << "needs mpiexec (ctest runs it as: mpiexec -n 3 mpi_backend_test)"

RankBackendSpec only_spec(std::string_view text) {
  Result<std::vector<RankBackendSpec>> specs = rank_backend_specs(text);
  EXPECT_TRUE(specs.ok()) << (specs.ok() ? "" : specs.error().text());
  if (!specs.ok() || specs->size() != 1) return {};
  return specs->front();
}

std::string error_of(std::string_view text) {
  Result<std::vector<RankBackendSpec>> specs = rank_backend_specs(text);
  return specs.ok() ? "(no error)" : specs.error().text();
}

std::string value_of(const RankBackendSpec& spec, std::string_view variable) {
  for (const auto& [name, value] : spec.environment) {
    if (name == variable) return value;
  }
  return "(unset)";
}

// --- Grammar (no mpiexec needed) -------------------------------------------------------------

TEST(MpiGrammar, PlainMpiRunsEveryCollectiveWithOpenMpisOwnDecisions) {
  const RankBackendSpec spec = only_spec("mpi");
  EXPECT_EQ(spec.name, "mpi");
  EXPECT_EQ(spec.capabilities.collectives.size(), all_collectives().size());
  EXPECT_TRUE(spec.environment.empty());
  EXPECT_TRUE(spec.capabilities.in_place);
  const std::vector<DType> expected{DType::Int8,  DType::UInt8,  DType::Int32,   DType::UInt32,
                                    DType::Int64, DType::UInt64, DType::Float32, DType::Float64};
  EXPECT_EQ(spec.capabilities.dtypes, expected);
  const std::vector<RedOp> ops{RedOp::Sum, RedOp::Prod, RedOp::Min, RedOp::Max};
  EXPECT_EQ(spec.capabilities.ops, ops);
  EXPECT_TRUE(static_cast<bool>(spec.make));
}

// A named algorithm needs only dynamic rules from the environment: make() forces the choice
// through MPI_T on its own communicator, leaving MPI_COMM_WORLD and the control channel alone.
TEST(MpiGrammar, NamedAlgorithmNeedsOnlyDynamicRules) {
  for (const char* text : {"mpi:allreduce=ring", "mpi:allreduce=4"}) {
    const RankBackendSpec spec = only_spec(text);
    EXPECT_EQ(spec.name, text);
    EXPECT_EQ(value_of(spec, "OMPI_MCA_coll_tuned_use_dynamic_rules"), "1");
    EXPECT_EQ(spec.environment.size(), 1u);
    EXPECT_EQ(spec.capabilities.collectives, std::vector<Collective>{Collective::AllReduce});
  }
}

// The names map to coll/tuned's numbers as ompi_info lists them.
TEST(MpiGrammar, SeveralCollectivesAndTheAlgorithmTable) {
  const RankBackendSpec spec = only_spec("mpi:bcast=scatter_allgather,bcast_segsize=8192,reduce_scatter=butterfly");
  const std::vector<Collective> expected{Collective::ReduceScatter, Collective::Broadcast};
  EXPECT_EQ(spec.capabilities.collectives, expected);
  const std::string table = mpi_algorithm_table();
  for (const char* entry :
       {"4 ring", "8 scatter_allgather", "4 butterfly", "6 in-order_binary", "5 two_proc", "5 neighbor"}) {
    EXPECT_NE(table.find(entry), std::string::npos) << entry << " in\n" << table;
  }
  EXPECT_EQ(only_spec("mpi:alltoall=two_proc").capabilities.max_ranks, 2);
}

TEST(MpiGrammar, AllAlgorithmsIsOneSpecPerCollectiveAndAlgorithm) {
  Result<std::vector<RankBackendSpec>> specs = rank_backend_specs("mpi:all-algorithms");
  ASSERT_TRUE(specs.ok()) << specs.error().text();
  EXPECT_EQ(specs->size(), 6u + 6u + 4u + 5u + 9u + 7u + 5u + 4u + 2u);
  std::set<std::string> names;
  for (const RankBackendSpec& spec : *specs) {
    names.insert(spec.name);
    EXPECT_EQ(spec.capabilities.collectives.size(), 1u) << spec.name;
    // Dynamic rules; and the algorithm itself where MPI_T may not write it (allgatherv).
    EXPECT_EQ(spec.environment.size(), spec.name.starts_with("mpi:allgatherv=") ? 2u : 1u) << spec.name;
    // Each expansion's name parses back to the same environment.
    EXPECT_EQ(only_spec(spec.name).environment, spec.environment) << spec.name;
  }
  EXPECT_EQ(names.size(), specs->size());
  EXPECT_TRUE(names.count("mpi:allreduce=ring"));
  EXPECT_TRUE(names.count("mpi:bcast=scatter_allgather_ring"));
  EXPECT_TRUE(names.count("mpi:reduce_scatter_block=recursive_halving"));
  EXPECT_TRUE(names.count("mpi:allgatherv=neighbor"));
  EXPECT_TRUE(names.count("mpi:reducescatterv=butterfly"));
  EXPECT_TRUE(names.count("mpi:alltoallv=pairwise"));
}

TEST(MpiGrammar, TheVCollectivesAreSelectedByTheirOwnNames) {
  const RankBackendSpec v = only_spec("mpi:reducescatterv=ring");
  EXPECT_EQ(v.capabilities.collectives, std::vector<Collective>{Collective::ReduceScatterV});
  const auto forced = tuned::environment_of(tuned::parse_selection("reducescatterv=ring", "mpi").value());
  ASSERT_EQ(forced.size(), 2u);
  EXPECT_EQ(forced[1], (std::pair<std::string, std::string>{"OMPI_MCA_coll_tuned_reduce_scatter_algorithm", "3"}));
  // reduce_scatter keeps meaning MPI_Reduce_scatter_block, as it did before the v forms.
  const RankBackendSpec block = only_spec("mpi:reduce_scatter=recursive_halving");
  EXPECT_EQ(block.capabilities.collectives, std::vector<Collective>{Collective::ReduceScatter});
  EXPECT_EQ(only_spec("mpi:allgatherv=two_proc").capabilities.max_ranks, 2);
  EXPECT_EQ(only_spec("mpi:alltoallv=basic_linear").capabilities.collectives,
            std::vector<Collective>{Collective::AllToAllV});
  const std::string e = error_of("mpi:alltoallv=pairwise,alltoallv_segsize=1024");
  EXPECT_NE(e.find("alltoallv_segsize: Open MPI's alltoallv has no segment size"), std::string::npos) << e;
  EXPECT_NE(only_spec("mpi").capabilities.collectives.size(), 0u);
}

TEST(MpiGrammar, BadNamesSayWhatIsAllowed) {
  std::string e = error_of("mpi:allreduce=rings");
  EXPECT_NE(e.find("'rings' is not an Open MPI allreduce algorithm"), std::string::npos) << e;
  EXPECT_NE(e.find("4 ring, 5 segmented_ring, 6 rabenseifner"), std::string::npos) << e;
  for (const char* number : {"mpi:allreduce=0", "mpi:allreduce=7", "mpi:bcast=10"}) {
    EXPECT_NE(error_of(number).find("is not an Open MPI"), std::string::npos) << error_of(number);
  }
  e = error_of("mpi:gather=linear");
  EXPECT_NE(e.find("'gather' is not a collective"), std::string::npos) << e;
  EXPECT_NE(e.find("allreduce, allgather, reduce_scatter_block, alltoall, bcast, reduce, allgatherv, reducescatterv, "
                   "alltoallv"),
            std::string::npos)
      << e;
  EXPECT_NE(error_of("mpi:allreduce").find("needs =ALGORITHM"), std::string::npos) << error_of("mpi:allreduce");
  EXPECT_NE(error_of("mpi:bcast_segsize=1024").find("bcast_segsize needs bcast=ALGORITHM"), std::string::npos);
  EXPECT_NE(error_of("mpi:bcast=chain,bcast_segsize=-1").find("bcast_segsize '-1'"), std::string::npos);
  EXPECT_NE(error_of("mpi:reduce=chain,reduce=binary").find("reduce is selected twice"), std::string::npos);
  EXPECT_NE(error_of("mpi:all-algorithms,allreduce=ring").find("all-algorithms alone"), std::string::npos);
  EXPECT_EQ(error_of("mpi:bcast=rings").rfind("--backend 'mpi:bcast=rings': ", 0), 0u) << error_of("mpi:bcast=rings");
}

TEST(MpiGrammar, TheMissingDtypesAndTheAlgorithmTableAreCitable) {
  EXPECT_NE(std::string(mpi_dtype_note()).find("fp16, bf16, fp8"), std::string::npos);
  const std::string table = mpi_algorithm_table();
  EXPECT_NE(table.find("bcast: 1 basic_linear, 2 chain"), std::string::npos) << table;
  EXPECT_NE(table.find("reduce_scatter_block: 1 basic_linear"), std::string::npos) << table;
}

// --- Runs under mpiexec ----------------------------------------------------------------------

// Every rank's failures on every rank: a failure on one rank fails the test on all of them.
void agree(const std::vector<std::string>& mine) {
  std::string text;
  for (const std::string& line : mine) text += "rank " + std::to_string(g_world->rank()) + ": " + line + "\n";
  const auto all = g_world->allgather({reinterpret_cast<const std::byte*>(text.data()), text.size()});
  std::string everyone;
  for (const auto& bytes : all) everyone.append(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  EXPECT_TRUE(everyone.empty()) << everyone.substr(0, 4000);
}

std::unique_ptr<RankBackend> make_on_every_rank(std::string_view text, std::vector<std::string>& failures) {
  const RankBackendSpec spec = only_spec(text);
  if (!spec.make) return nullptr;
  Result<std::unique_ptr<RankBackend>> backend = spec.make(*g_world);
  if (!backend.ok()) {
    failures.push_back(backend.error().text());
    return nullptr;
  }
  return std::move(backend.value());
}

// Runs the case and checks this rank's outputs (call k against the case with seed + k), its
// input after an out-of-place call, and its guard zones.
void check(RankBackend& backend, const Case& c, const RankRunOptions& options, std::vector<std::string>& failures) {
  const RankRun run = backend.run(c, options);
  const std::string where = to_string(c);
  if (run.outcome != Outcome::Ok) {
    failures.push_back(where + ": " + std::string(name(run.outcome)) + ": " + run.error);
    return;
  }
  const std::size_t calls =
      options.timed ? static_cast<std::size_t>(options.iterations) : static_cast<std::size_t>(options.calls);
  if (run.calls.size() != calls) {
    failures.push_back(where + ": " + std::to_string(run.calls.size()) + " results for " + std::to_string(calls) +
                       " calls");
    return;
  }
  const int rank = g_world->rank();
  for (std::size_t k = 0; k < calls; ++k) {
    Case call = c;
    call.seed = c.seed + (options.timed ? 0 : k);
    const RankResult& result = run.calls[k];
    const Verdict verdict = compare(call, rank, result.output);
    if (!verdict.ok) failures.push_back(to_string(call) + ": " + verdict.error + verdict.describe(c.dtype));
    if (!result.guards_intact) failures.push_back(to_string(call) + ": a guard zone was written");
    if (c.in_place) continue;
    std::vector<std::byte> input(input_elements(c) * size_of(c.dtype));
    if (!input.empty()) InputGenerator(call).fill(rank, 0, input);
    if (result.input != input) failures.push_back(to_string(call) + ": the input changed out of place");
  }
}

// Open MPI 4.1's op/avx component adds 8-bit integers with saturating vector instructions, so
// MPI_SUM on MPI_INT8_T and MPI_UINT8_T clamps where its own C ops (and NCCL, and the oracle)
// wrap around. MpiFindings.ByteSumsWrapAround reports it; the conformance suite leaves those
// cases out rather than fail on a bug that is not the adapter's. Every rank calls this at the
// same point.
bool byte_sums_saturate() {
  static const bool saturate = [] {
    std::vector<std::uint8_t> in(64, 200), out(64, 0);
    MPI_Allreduce(in.data(), out.data(), 64, MPI_UINT8_T, MPI_SUM, MPI_COMM_WORLD);
    return g_world->size() > 1 && out[0] == 255;
  }();
  return saturate;
}

TEST(MpiFindings, ByteSumsWrapAround) {
  SKIP_UNLESS_LAUNCHED();
  if (g_world->size() < 2) GTEST_SKIP() << "needs 2 or more ranks";
  if (byte_sums_saturate()) {
    GTEST_SKIP() << "Open MPI finding: MPI_SUM on MPI_UINT8_T gives 255 for 200 summed over " << g_world->size()
                 << " ranks (saturated, not wrapped): its op/avx component uses saturating adds for 8-bit "
                    "integers (see open-mpi/ompi#8045 for 16-bit); `--mca op ^avx` avoids it. The i8/u8 sum "
                    "cases are left out of the conformance suite.";
  }
  std::vector<std::string> failures;
  std::unique_ptr<RankBackend> backend = make_on_every_rank("mpi", failures);
  for (DType dtype : {DType::Int8, DType::UInt8}) {
    const Case c = make_case(Collective::AllReduce, dtype, RedOp::Sum, 1000, g_world->size());
    if (backend) check(*backend, c, RankRunOptions{}, failures);
  }
  agree(failures);
}

// Without dynamic rules in the environment, a named algorithm cannot be chosen: make() says
// which -x flags to add (every rank, so that none waits in MPI_Comm_dup alone).
TEST(MpiRuns, NamedAlgorithmWithoutTheEnvironmentSaysWhatToAdd) {
  SKIP_UNLESS_LAUNCHED();
  const char* dynamic = std::getenv("OMPI_MCA_coll_tuned_use_dynamic_rules");
  if (dynamic != nullptr && std::string(dynamic) == "1") GTEST_SKIP() << "dynamic rules are on in this environment";
  std::vector<std::string> failures;
  const RankBackendSpec spec = only_spec("mpi:allreduce=ring");
  Result<std::unique_ptr<RankBackend>> backend = spec.make(*g_world);
  if (backend.ok()) {
    failures.push_back("make() succeeded without the environment");
  } else if (backend.error().text().find("add -x OMPI_MCA_coll_tuned_use_dynamic_rules=1 "
                                         "-x OMPI_MCA_coll_tuned_allreduce_algorithm=4") == std::string::npos) {
    failures.push_back(backend.error().text());
  }
  agree(failures);
}

TEST(MpiRuns, ThreadWorldsAreRefused) {
  SKIP_UNLESS_LAUNCHED();
  std::vector<std::unique_ptr<World>> worlds = make_thread_worlds(g_world->size() + 1);
  Result<std::unique_ptr<RankBackend>> backend = only_spec("mpi").make(*worlds[0]);
  ASSERT_FALSE(backend.ok());
  EXPECT_NE(backend.error().text().find("runs only in the world mpirun launched"), std::string::npos)
      << backend.error().text();
}

// --- Choosing algorithms at run time (ctest's mpi_backend_selection: dynamic rules on) -------

int g_op_calls = 0;

void counting_sum(void* in, void* inout, int* length, MPI_Datatype*) {
  for (int i = 0; i < *length; ++i) static_cast<int*>(inout)[i] += static_cast<int*>(in)[i];
  ++g_op_calls;
}

// How often each rank applied the reduction op in one all-reduce of 64 ints on a communicator
// made now: a fingerprint of the algorithm Open MPI chose (linear: n-1 on rank 0, none
// elsewhere; ring: n-1 everywhere).
std::vector<int> op_calls_per_rank() {
  MPI_Comm comm;
  MPI_Comm_dup(MPI_COMM_WORLD, &comm);
  MPI_Op op;
  MPI_Op_create(counting_sum, 1, &op);
  std::vector<int> in(64, g_world->rank()), out(64);
  g_op_calls = 0;
  MPI_Allreduce(in.data(), out.data(), 64, MPI_INT, op, comm);
  MPI_Op_free(&op);
  MPI_Comm_free(&comm);
  const auto all = g_world->allgather({reinterpret_cast<const std::byte*>(&g_op_calls), sizeof g_op_calls});
  std::vector<int> calls;
  for (const auto& bytes : all) {
    int value = 0;
    std::memcpy(&value, bytes.data(), sizeof value);
    calls.push_back(value);
  }
  return calls;
}

TEST(MpiSelection, MakeSwitchesTheAlgorithmOfNewCommunicators) {
  SKIP_UNLESS_LAUNCHED();
  const char* dynamic = std::getenv("OMPI_MCA_coll_tuned_use_dynamic_rules");
  if (dynamic == nullptr || std::string(dynamic) != "1") {
    GTEST_SKIP() << "needs OMPI_MCA_coll_tuned_use_dynamic_rules=1 (ctest's mpi_backend_selection sets it)";
  }
  const int n = g_world->size();
  if (n < 2) GTEST_SKIP() << "needs 2 or more ranks";
  std::vector<int> linear(static_cast<std::size_t>(n), 0);
  linear[0] = n - 1;
  const std::vector<int> ring(static_cast<std::size_t>(n), n - 1);
  std::vector<std::string> failures;
  const Case c = make_case(Collective::AllReduce, DType::Int32, RedOp::Sum, 1000, n);
  const std::vector<std::pair<std::string, std::vector<int>>> expected{{"mpi:allreduce=basic_linear", linear},
                                                                       {"mpi:allreduce=ring", ring}};
  for (const auto& [spec, fingerprint] : expected) {
    std::unique_ptr<RankBackend> backend = make_on_every_rank(spec, failures);
    if (op_calls_per_rank() != fingerprint) failures.push_back(spec + ": op calls per rank do not match its algorithm");
    if (backend) check(*backend, c, RankRunOptions{}, failures);
  }
  std::unique_ptr<RankBackend> plain = make_on_every_rank("mpi", failures);
  if (op_calls_per_rank() == linear) failures.push_back("mpi: still runs basic_linear after the forced choice");
  agree(failures);
}

}  // namespace
}  // namespace collcheck

namespace {

// The tests on this rank, then the ranks' agreement on the exit status.
int run_tests(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  if (collcheck::launched_by_launcher()) {
    collcheck::Result<collcheck::World*> world = collcheck::launched_world();
    if (!world.ok()) {
      std::fprintf(stderr, "%s\n", world.error().text().c_str());
      return 1;
    }
    collcheck::g_world = *world;
  }
  const int status = RUN_ALL_TESTS();
  if (collcheck::g_world == nullptr) return status;
  const std::byte mine{static_cast<unsigned char>(status == 0 ? 0 : 1)};
  const auto all = collcheck::g_world->allgather({&mine, 1});
  const bool any_failed = std::any_of(all.begin(), all.end(), [](const auto& b) { return b.at(0) != std::byte{0}; });
  return any_failed ? 1 : 0;
}

}  // namespace

// Its own main: MPI starts through launched_world() before the tests, and the ranks agree on
// the exit status, so that a failure on any rank fails the program. What escapes (the world's
// deadline, a failed allocation) is reported and fails it too.
int main(int argc, char** argv) {
  try {
    return run_tests(argc, argv);
  } catch (const collcheck::WorldTimeout& timeout) {
    std::fprintf(stderr, "%s\n", timeout.what.c_str());
  } catch (const std::exception& error) {
    std::fprintf(stderr, "%s\n", error.what());
  }
  return 1;
}
