// `mpi`, `mpi:COLL=ALG,...` and `mpi:all-algorithms`: Open MPI's own collectives under test, one
// rank per process, each algorithm of its coll/tuned component selectable by name.
#include "impls/vendors/mpi/mpi_backend.h"

#include <mpi.h>

#include <algorithm>
#include <map>

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

// The segment size of each forced algorithm that cuts its messages into segments, where the spec
// gives none (`bcast_segsize`): drawn per case, and selected per run on a communicator of its
// own (SegmentedRuns). Any size is Open MPI's to take (below an element it does not segment);
// a drawn one is at least a 64th of the message, so that no draw makes thousands of segments.
void add_free_segment_sizes(const Selection& s, Capabilities& c) {
  for (std::size_t i = 0; i < kTuned.size(); ++i) {
    if (!tuned::uses_segments(kTuned[i], s.algorithm[i]) || s.segment_bytes[i] != 0) continue;
    KnobSpace segment = numeric_knob(std::string(kTuned[i].mca) + "_segsize", 1, 1 << 30, 0,
                                     {1, 4, 8, 9, 64, 1000, 1024, 4096, 8192, 32768, 65536});
    segment.fit = [](std::uint64_t value, const Case& shape) {
      const std::uint64_t bytes = std::max(input_elements(shape), output_elements(shape)) * size_of(shape.dtype);
      return std::max<std::uint64_t>(value, (bytes + 63) / 64);
    };
    c.knobs.push_back(std::move(segment));
  }
  c.knobs_per_run = !c.knobs.empty();
}

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
  add_free_segment_sizes(s, c);
  return c;
}

// Selects `s` in this process and makes a communicator that runs it: every member agrees that it
// selected before the collective MPI_Comm_dup, so that no rank waits in it alone.
Result<MPI_Comm> selected_communicator(const Selection& s, const std::string& spec, World& world) {
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
  return comm;
}

// The rank backend of a selection with drawn segment sizes (RunOptions::knobs,
// `bcast_segsize=1024`): a run with knobs runs on a communicator made for them (Open MPI reads
// the forced choices when a communicator is made), kept for the next run with the same knobs;
// every rank makes the same ones in the same order, as every rank runs the same requests.
class SegmentedRuns final : public RankBackend {
 public:
  SegmentedRuns(std::unique_ptr<RankBackend> plain, const Selection& selection, std::string spec, World& world)
      : plain_(std::move(plain)), selection_(selection), spec_(std::move(spec)), world_(world) {}
  std::string name() const override { return plain_->name(); }

  RankRun run(const Case& c, const RankRunOptions& options) override {
    if (options.knobs.empty()) return plain_->run(c, options);
    Result<RankBackend*> knobbed = with_knobs(options.knobs);
    if (!knobbed) return RankRun::ended(Outcome::Detected, knobs_error(options.knobs, knobbed.error().text()));
    return (*knobbed)->run(c, options);
  }

 private:
  static constexpr std::size_t kMaxKept = 8;  // past it every kept one is freed (collectively)

  static std::string knobs_error(const std::string& knobs, const std::string& why) {
    return "the run's knobs " + quoted_input(knobs) + ": " + why;
  }

  Result<RankBackend*> with_knobs(const std::string& knobs) {
    if (const auto found = kept_.find(knobs); found != kept_.end()) return found->second.get();
    // The spec's options with the knobs after them, as the replay line's spec writes them.
    const std::string knobbed_spec = spec_ + "," + knobs;
    Result<Selection> drawn = tuned::parse_selection(family_options(knobbed_spec, "mpi"), knobbed_spec);
    if (!drawn) return drawn.error();
    if (kept_.size() >= kMaxKept) kept_.clear();
    Result<MPI_Comm> comm = selected_communicator(*drawn, spec_, world_);
    // What later communicators of this process run: the spec's own choices again.
    Status restored = tuned::select_algorithms(selection_, spec_);
    if (!comm) return comm.error();
    if (!restored) return restored.error();
    std::unique_ptr<RankBackend> made = make_mpi_rank_backend(knobbed_spec, *comm, world_);
    return kept_.emplace(knobs, std::move(made)).first->second.get();
  }

  std::unique_ptr<RankBackend> plain_;
  Selection selection_;
  std::string spec_;
  World& world_;
  std::map<std::string, std::unique_ptr<RankBackend>> kept_;
};

// The spec's rank backend on the world mpirun launched.
Result<std::unique_ptr<RankBackend>> make_backend(const Selection& s, const std::string& spec, World& world) {
  Result<World*> launched = launched_world();
  if (!launched) return launched.error();
  int size = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (world.size() != size || world.rank() != (*launched)->rank()) {
    return Error{"--backend", quoted_input(spec) + " runs only in the world mpirun launched (" + std::to_string(size) +
                                  " ranks), not in a world of " + std::to_string(world.size())};
  }
  Result<MPI_Comm> comm = selected_communicator(s, spec, world);
  if (!comm) return comm.error();
  std::unique_ptr<RankBackend> plain = make_mpi_rank_backend(spec, *comm, world);
  if (!capabilities_of(s).knobs_per_run) return plain;
  return std::unique_ptr<RankBackend>(std::make_unique<SegmentedRuns>(std::move(plain), s, spec, world));
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
