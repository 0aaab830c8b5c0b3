// `mpi`, `mpi:COLL=ALG,...` and `mpi:all-algorithms`: Open MPI's own collectives under test, one
// rank per process, each algorithm of its coll/tuned component selectable by name.
#include "impls/vendors/mpi/mpi_backend.h"

#include <mpi.h>

#include "impls/backend/rank_backend.h"
#include "impls/vendors/mpi/mpi_rank_backend.h"
#include "impls/vendors/mpi/tuned_algorithms.h"
#include "impls/worlds/mpi_world.h"
#include "reference/numbers.h"

namespace collcheck {
namespace {

using tuned::algorithm_choices;
using tuned::algorithm_count;
using tuned::kTuned;
using tuned::Selection;
using tuned::TunedCollective;

Capabilities capabilities_of(const Selection& s) {
  Capabilities c;
  c.collectives.clear();
  for (std::size_t i = 0; i < kTuned.size(); ++i) {
    if (!s.any() || s.algorithm[i] != 0) c.collectives.push_back(kTuned[i].collective);
  }
  c.dtypes = {DType::Int8,  DType::UInt8,  DType::Int32,   DType::UInt32,
              DType::Int64, DType::UInt64, DType::Float32, DType::Float64};
  c.ops = {RedOp::Sum, RedOp::Prod, RedOp::Min, RedOp::Max};
  c.in_place = true;
  c.memory = "host";
  // Where Open MPI 4.1 changes protocol (ompi_info's defaults): shared memory (btl/vader) sends
  // eagerly up to 4 KiB and in 32 KiB fragments after; TCP (btl/tcp, under faults) eagerly up to
  // 64 KiB and in 128 KiB fragments.
  c.edge_bytes = {4096, 32768, 65536, 131072};
  // Open MPI's two_proc algorithms are written for two processes: on more they refuse with
  // MPI_ERR_UNSUPPORTED_OPERATION (a documented limit, not a finding), so they get 2 ranks.
  for (std::size_t i = 0; i < kTuned.size(); ++i) {
    const int k = s.algorithm[i];
    if (k > 0 && kTuned[i].algorithms[static_cast<std::size_t>(k - 1)] == std::string_view("two_proc")) c.max_ranks = 2;
  }
  return c;
}

// Every member agrees before the collective MPI_Comm_dup, so that no rank waits in it alone.
Result<std::unique_ptr<RankBackend>> make_backend(const Selection& s, const std::string& spec, World& world) {
  Result<World*> launched = launched_world();
  if (!launched) return launched.error();
  int size = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (world.size() != size || world.rank() != (*launched)->rank()) {
    return Error{"--backend", quoted_input(spec) + " runs only in the world mpirun launched (" + std::to_string(size) +
                                  " ranks), not in a world of " + std::to_string(world.size())};
  }
  Status selected = tuned::select_algorithms(s, spec);
  const std::byte mine{static_cast<unsigned char>(selected.ok() ? 1 : 0)};
  const auto all = world.allgather({&mine, 1});
  if (!selected) return selected.error();
  for (std::size_t r = 0; r < all.size(); ++r) {
    if (all[r].empty() || all[r][0] != std::byte{1}) {
      return Error{"--backend", quoted_input(spec) + ": rank " + std::to_string(r) +
                                    " could not select the algorithms (see its error)"};
    }
  }
  MPI_Comm comm = MPI_COMM_NULL;
  if (int rc = MPI_Comm_dup(MPI_COMM_WORLD, &comm); rc != MPI_SUCCESS)
    return Error{"--backend", mpi_error("MPI_Comm_dup", rc)};
  MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
  return make_mpi_rank_backend(spec, comm, world);
}

RankBackendSpec spec_of(const Selection& s, std::string name) {
  RankBackendSpec spec;
  spec.name = std::move(name);
  spec.capabilities = capabilities_of(s);
  // Launched worlds get dynamic rules only and make() selects through MPI_T on its own
  // communicator: forcing the algorithm through the environment would also force it on
  // MPI_COMM_WORLD and on the control channel, where a broken choice (two_proc on 3 ranks)
  // takes the whole world down instead of failing one case.
  if (s.any()) spec.environment = {{"OMPI_MCA_coll_tuned_use_dynamic_rules", "1"}};
  // Where MPI_T may not write the choice (kTuned's run_time), the environment makes it, for every
  // communicator: allgatherv, which the control channel does not call (its MPI_Iallgatherv is
  // libnbc's, not coll/tuned's).
  Selection from_environment;
  for (std::size_t i = 0; i < kTuned.size(); ++i) {
    if (kTuned[i].run_time) continue;
    from_environment.algorithm[i] = s.algorithm[i];
    from_environment.segment_bytes[i] = s.segment_bytes[i];
  }
  if (from_environment.any()) spec.environment = tuned::environment_of(from_environment);
  spec.world_memory = library_temporaries;
  spec.make = [s, spec_name = spec.name](World& world) { return make_backend(s, spec_name, world); };
  return spec;
}

}  // namespace

std::string_view mpi_dtype_note() {
  return "MPI has no standard type for fp16, bf16, fp8 (e4m3, e5m2), so the mpi backend runs "
         "i8, u8, i32, u32, i64, u64, f32, f64 only";
}

std::string mpi_algorithm_table() {
  std::string out;
  for (const TunedCollective& t : kTuned) out += std::string(t.spec_key()) + ": " + algorithm_choices(t) + "\n";
  return out;
}

Result<std::vector<RankBackendSpec>> mpi_backend_specs(std::string_view options, std::string_view spec) {
  std::vector<RankBackendSpec> specs;
  if (options == "all-algorithms") {
    for (std::size_t i = 0; i < kTuned.size(); ++i) {
      for (int k = 1; k <= algorithm_count(kTuned[i]); ++k) {
        Selection s;
        s.algorithm[i] = k;
        specs.push_back(spec_of(s, "mpi:" + std::string(kTuned[i].spec_key()) + "=" +
                                       std::string(kTuned[i].algorithms[static_cast<std::size_t>(k - 1)])));
      }
    }
    return specs;
  }
  Result<Selection> selection = tuned::parse_selection(options, spec);
  if (!selection) return selection.error();
  specs.push_back(spec_of(*selection, std::string(spec)));
  return specs;
}

}  // namespace collcheck
