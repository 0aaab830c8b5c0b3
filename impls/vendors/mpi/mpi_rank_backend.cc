// One rank of Open MPI under test: the case's buffers laid out as NCCL lays them between guard
// zones, one MPI call per collective, repeated or timed runs, and the cases MPI cannot run.
#include "impls/vendors/mpi/mpi_rank_backend.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>
#include <optional>
#include <vector>

#include "impls/backend/rank_calls.h"
#include "impls/vendors/mpi/mpi_backend.h"
#include "reference/counts.h"
#include "reference/inputs.h"
#include "reference/random.h"

namespace collcheck {
namespace {

// One predefined MPI datatype that stands for one of our dtypes. MPI implementations reach
// their reductions through a table per predefined type, so each spelling is a code path of its own.
struct TypeSpelling {
  MPI_Datatype type;
  std::string_view name;
  bool characters = false;  // MPI_CHAR: characters, which MPI's reduction ops do not take
};

// Every spelling of `dtype` on this platform, its fixed-width type first, then the C types of the
// same width and signedness; empty: MPI has none (mpi_dtype_note()).
std::vector<TypeSpelling> spellings(DType dtype) {
  constexpr bool char_signed = std::numeric_limits<char>::is_signed;
  std::vector<TypeSpelling> all;
  const auto add_if = [&all](bool fits, TypeSpelling spelling) {
    if (fits) all.push_back(spelling);
  };
  switch (dtype) {
    case DType::Int8:
      all = {{MPI_INT8_T, "MPI_INT8_T"}, {MPI_SIGNED_CHAR, "MPI_SIGNED_CHAR"}};
      add_if(char_signed, {MPI_CHAR, "MPI_CHAR", true});
      break;
    case DType::UInt8:
      all = {{MPI_UINT8_T, "MPI_UINT8_T"}, {MPI_UNSIGNED_CHAR, "MPI_UNSIGNED_CHAR"}};
      add_if(!char_signed, {MPI_CHAR, "MPI_CHAR", true});
      break;
    case DType::Int32:
      all = {{MPI_INT32_T, "MPI_INT32_T"}};
      add_if(sizeof(int) == 4, {MPI_INT, "MPI_INT"});
      add_if(sizeof(long) == 4, {MPI_LONG, "MPI_LONG"});
      break;
    case DType::UInt32:
      all = {{MPI_UINT32_T, "MPI_UINT32_T"}};
      add_if(sizeof(unsigned) == 4, {MPI_UNSIGNED, "MPI_UNSIGNED"});
      add_if(sizeof(unsigned long) == 4, {MPI_UNSIGNED_LONG, "MPI_UNSIGNED_LONG"});
      break;
    case DType::Int64:
      all = {{MPI_INT64_T, "MPI_INT64_T"}};
      add_if(sizeof(long) == 8, {MPI_LONG, "MPI_LONG"});
      add_if(sizeof(long long) == 8, {MPI_LONG_LONG, "MPI_LONG_LONG"});
      break;
    case DType::UInt64:
      all = {{MPI_UINT64_T, "MPI_UINT64_T"}};
      add_if(sizeof(unsigned long) == 8, {MPI_UNSIGNED_LONG, "MPI_UNSIGNED_LONG"});
      add_if(sizeof(unsigned long long) == 8, {MPI_UNSIGNED_LONG_LONG, "MPI_UNSIGNED_LONG_LONG"});
      break;
    case DType::Float32: all = {{MPI_FLOAT, "MPI_FLOAT"}}; break;
    case DType::Float64: all = {{MPI_DOUBLE, "MPI_DOUBLE"}}; break;
    default: break;  // see mpi_dtype_note()
  }
  return all;
}

// The spelling a case runs with: drawn from its seed, so that a replay of the case runs the same
// and shrinking (the seed toward 0) ends at the fixed-width type when the spelling does not
// matter; a reducing collective never draws MPI_CHAR.
std::optional<TypeSpelling> mpi_type(const Case& c) {
  std::vector<TypeSpelling> all = spellings(c.dtype);
  if (reduces(c.collective)) std::erase_if(all, [](const TypeSpelling& spelling) { return spelling.characters; });
  if (all.empty()) return std::nullopt;
  return all[c.seed == 0 ? 0 : below(mix64(c.seed ^ 0x6d70692d74797065), all.size())];
}

}  // namespace

std::string_view mpi_type_name(const Case& c) {
  const std::optional<TypeSpelling> spelling = mpi_type(c);
  return spelling ? spelling->name : std::string_view{};
}

namespace {

std::optional<MPI_Op> mpi_op(RedOp op) {
  switch (op) {
    case RedOp::Sum: return MPI_SUM;
    case RedOp::Prod: return MPI_PROD;
    case RedOp::Min: return MPI_MIN;
    case RedOp::Max: return MPI_MAX;
    default: return std::nullopt;  // avg: MPI has no averaging op
  }
}

class MpiBackend final : public RankBackend {
 public:
  MpiBackend(std::string name, MPI_Comm comm, World& world) : name_(std::move(name)), comm_(comm), world_(world) {
    MPI_Comm_rank(comm_, &rank_);
  }
  ~MpiBackend() override {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized) MPI_Comm_free(&comm_);
  }
  std::string name() const override { return name_; }
  RankRun run(const Case& c, const RankRunOptions& options) override;

 private:
  std::string call(const Case& c, MPI_Datatype type, MPI_Op op, RankBuffers& b);
  std::string call_vector(const Case& c, MPI_Datatype type, MPI_Op op, RankBuffers& b);

  std::string name_;
  MPI_Comm comm_;
  World& world_;
  int rank_ = 0;
};

}  // namespace

std::string mpi_error(std::string_view function, int code) {
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  MPI_Error_string(code, text, &length);
  return std::string(function) + ": " + std::string(text, static_cast<std::size_t>(length));
}

namespace {

// One call of the case's collective; "" on success, else what MPI said, naming the function.
std::string MpiBackend::call(const Case& c, MPI_Datatype type, MPI_Op op, RankBuffers& b) {
  const int count = static_cast<int>(c.count);
  void* in = c.in_place ? MPI_IN_PLACE : b.in;
  // In place, all-gather and all-to-all take no send count or type.
  const int send_count = c.in_place ? 0 : count;
  const MPI_Datatype send_type = c.in_place ? MPI_DATATYPE_NULL : type;
  const auto said = [](const char* function, int rc) {
    return rc == MPI_SUCCESS ? std::string() : mpi_error(function, rc);
  };
  switch (c.collective) {
    case Collective::AllReduce: return said("MPI_Allreduce", MPI_Allreduce(in, b.out, count, type, op, comm_));
    case Collective::AllGather:
      // MPI's in-place all-gather reads this rank's part at recvbuf + rank*count, as NCCL's.
      return said("MPI_Allgather", MPI_Allgather(in, send_count, send_type, b.out, count, type, comm_));
    case Collective::ReduceScatter: {
      // In place, MPI leaves the result at the start of the buffer and NCCL at rank*count:
      // moved there after the call.
      std::string error = said("MPI_Reduce_scatter_block",
                               MPI_Reduce_scatter_block(in, c.in_place ? b.in : b.out, count, type, op, comm_));
      if (error.empty() && c.in_place && b.out != b.in && b.out_bytes > 0) std::memmove(b.out, b.in, b.out_bytes);
      return error;
    }
    case Collective::AllToAll:
      return said("MPI_Alltoall", MPI_Alltoall(in, send_count, send_type, b.out, count, type, comm_));
    case Collective::Broadcast:
      // MPI's broadcast has one buffer: out of place the root first copies its input to its
      // output, which MPI then broadcasts (NCCL's root sends from its input instead).
      if (!c.in_place && rank_ == c.root && b.out_bytes > 0) std::memcpy(b.out, b.in, b.out_bytes);
      return said("MPI_Bcast", MPI_Bcast(b.out, count, type, c.root, comm_));
    case Collective::Reduce: {
      // In place only the root passes MPI_IN_PLACE; the others send from their one buffer.
      const bool root = rank_ == c.root;
      void* send = c.in_place && root ? MPI_IN_PLACE : b.in;
      return said("MPI_Reduce", MPI_Reduce(send, root ? b.out : nullptr, count, type, op, c.root, comm_));
    }
    case Collective::AllGatherV:
    case Collective::ReduceScatterV:
    case Collective::AllToAllV: return call_vector(c, type, op, b);
  }
  return "unknown collective";
}

// The v-collectives, out of place (the case refuses in place): MPI's counts and displacements
// are the case's counts and their prefix sums (blocks packed in rank order).
std::string MpiBackend::call_vector(const Case& c, MPI_Datatype type, MPI_Op op, RankBuffers& b) {
  const auto said = [](const char* function, int rc) {
    return rc == MPI_SUCCESS ? std::string() : mpi_error(function, rc);
  };
  const auto n = static_cast<std::size_t>(c.nranks);
  std::vector<int> send_counts(n), send_displacements(n), receive_counts(n), receive_displacements(n);
  for (int peer = 0, sent = 0, received = 0; peer < c.nranks; ++peer) {
    const auto p = static_cast<std::size_t>(peer);
    // allgatherv and reducescatterv: receive_counts are the case's counts.
    receive_counts[p] =
        static_cast<int>(c.collective == Collective::AllToAllV ? pair_count(c, peer, rank_) : c.counts[p]);
    send_counts[p] = static_cast<int>(c.collective == Collective::AllToAllV ? pair_count(c, rank_, peer) : 0);
    send_displacements[p] = sent;
    receive_displacements[p] = received;
    sent += send_counts[p];
    received += receive_counts[p];
  }
  const auto own = static_cast<std::size_t>(rank_);
  switch (c.collective) {
    case Collective::AllGatherV:
      return said("MPI_Allgatherv", MPI_Allgatherv(b.in, receive_counts[own], type, b.out, receive_counts.data(),
                                                   receive_displacements.data(), type, comm_));
    case Collective::ReduceScatterV:
      return said("MPI_Reduce_scatter", MPI_Reduce_scatter(b.in, b.out, receive_counts.data(), type, op, comm_));
    default:
      return said("MPI_Alltoallv", MPI_Alltoallv(b.in, send_counts.data(), send_displacements.data(), type, b.out,
                                                 receive_counts.data(), receive_displacements.data(), type, comm_));
  }
}

RankRun detected(std::string error) {
  RankRun run;
  run.outcome = Outcome::Detected;
  run.error = std::move(error);
  return run;
}

// Why this backend cannot run the case ("" when it can).
std::string refusal(const Case& c, int size) {
  if (c.nranks != size)
    return "the case has " + std::to_string(c.nranks) + " ranks and the MPI world " + std::to_string(size);
  if (!mpi_type(c)) return "dtype " + std::string(name(c.dtype)) + ": " + std::string(mpi_dtype_note());
  if (reduces(c.collective) && !mpi_op(c.op))
    return "op " + std::string(name(c.op)) + ": MPI has no averaging op (sum, prod, min, max only)";
  const auto largest = std::max(input_elements(c), output_elements(c));
  // A v-collective's n is a sum that MPI never takes as one int; its buffers are.
  if ((c.count > static_cast<std::size_t>(std::numeric_limits<int>::max()) && !per_rank_counts(c.collective)) ||
      largest > static_cast<std::size_t>(std::numeric_limits<int>::max())) {
    return "n=" + std::to_string(c.count) + ": MPI counts are int, at most " +
           std::to_string(std::numeric_limits<int>::max());
  }
  return "";
}

RankRun MpiBackend::run(const Case& c, const RankRunOptions& options) {
  if (std::string why = refusal(c, world_.size()); !why.empty()) return detected(name_ + ": " + why);
  const TypeSpelling spelling = *mpi_type(c);
  const MPI_Op op = mpi_op(c.op).value_or(MPI_SUM);  // ignored where the collective does not reduce
  RankBuffers buffers = make_rank_buffers(c, rank_);
  return run_rank_calls(c, options, world_, buffers, [&] {
    std::string error = call(c, spelling.type, op, buffers);
    return error.empty() ? error : error + " (" + std::string(spelling.name) + ")";
  });
}

}  // namespace

std::unique_ptr<RankBackend> make_mpi_rank_backend(std::string name, MPI_Comm comm, World& world) {
  return std::make_unique<MpiBackend>(std::move(name), comm, world);
}

}  // namespace collcheck
