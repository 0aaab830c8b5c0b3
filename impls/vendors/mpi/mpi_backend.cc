// `mpi`, `mpi:COLL=ALG,...` and `mpi:all-algorithms`: Open MPI's own collectives under test, one
// rank per process, each algorithm of its coll/tuned component selectable by name.
#include <mpi.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <optional>

#include "impls/worlds/mpi_world.h"
#include "impls/vendors/mpi/mpi_backend.h"
#include "impls/backend/rank_backend.h"
#include "impls/schedule/schedule.h"
#include "reference/inputs.h"

namespace collcheck {

namespace {

// Open MPI 4.1.4's coll/tuned algorithms, as `ompi_info --param coll tuned --level 9` lists them
// for coll_tuned_<mca>_algorithm: algorithm k's MCA value is k + 1 (0, "ignore", leaves the
// choice to Open MPI). Later versions append to these lists.
struct TunedCollective {
  Collective collective;
  std::string_view mca;    // the name in coll_tuned_<mca>_algorithm
  std::string_view alias;  // another spelling users type ("" where none)
  std::array<std::string_view, 9> algorithms;  // algorithm k + 1; "" past the end
};

constexpr std::array<TunedCollective, 6> kTuned{{
    {Collective::AllReduce, "allreduce", "",
     {"basic_linear", "nonoverlapping", "recursive_doubling", "ring", "segmented_ring", "rabenseifner"}},
    {Collective::AllGather, "allgather", "",
     {"linear", "bruck", "recursive_doubling", "ring", "neighbor", "two_proc"}},
    {Collective::ReduceScatter, "reduce_scatter_block", "reduce_scatter",
     {"basic_linear", "recursive_doubling", "recursive_halving", "butterfly"}},
    {Collective::AllToAll, "alltoall", "", {"linear", "pairwise", "modified_bruck", "linear_sync", "two_proc"}},
    {Collective::Broadcast, "bcast", "",
     {"basic_linear", "chain", "pipeline", "split_binary_tree", "binary_tree", "binomial", "knomial",
      "scatter_allgather", "scatter_allgather_ring"}},
    {Collective::Reduce, "reduce", "",
     {"linear", "chain", "pipeline", "binary", "binomial", "in-order_binary", "rabenseifner"}},
}};

int algorithm_count(const TunedCollective& t) {
  return static_cast<int>(std::count_if(t.algorithms.begin(), t.algorithms.end(), [](auto a) { return !a.empty(); }));
}

std::string algorithm_choices(const TunedCollective& t) {
  std::string out;
  for (int k = 0; k < algorithm_count(t); ++k) {
    out += (out.empty() ? "" : ", ") + std::to_string(k + 1) + " " + std::string(t.algorithms[static_cast<std::size_t>(k)]);
  }
  return out;
}

std::string collective_choices_text() {
  std::string out;
  for (const TunedCollective& t : kTuned) out += (out.empty() ? "" : ", ") + std::string(t.mca);
  return out + " (reduce_scatter means reduce_scatter_block)";
}

const TunedCollective* find_collective(std::string_view text) {
  for (const TunedCollective& t : kTuned) {
    if (text == t.mca || (!t.alias.empty() && text == t.alias)) return &t;
  }
  return nullptr;
}

// What one backend forces: per collective (kTuned's order) an algorithm (0: Open MPI decides)
// and a segment size in bytes (0: none).
struct Selection {
  std::array<int, kTuned.size()> algorithm{};
  std::array<int, kTuned.size()> segment_bytes{};
  bool any() const { return std::any_of(algorithm.begin(), algorithm.end(), [](int a) { return a != 0; }); }
};

std::string variable(const TunedCollective& t, std::string_view suffix) {
  return "OMPI_MCA_coll_tuned_" + std::string(t.mca) + "_algorithm" + std::string(suffix);
}

// The environment that makes Open MPI run the selection: dynamic rules on, then the forced
// algorithm (and segment size) of each selected collective.
std::vector<std::pair<std::string, std::string>> environment_of(const Selection& s) {
  std::vector<std::pair<std::string, std::string>> out;
  if (!s.any()) return out;
  out.emplace_back("OMPI_MCA_coll_tuned_use_dynamic_rules", "1");
  for (std::size_t i = 0; i < kTuned.size(); ++i) {
    if (s.algorithm[i] == 0) continue;
    out.emplace_back(variable(kTuned[i], ""), std::to_string(s.algorithm[i]));
    if (s.segment_bytes[i] != 0) out.emplace_back(variable(kTuned[i], "_segmentsize"), std::to_string(s.segment_bytes[i]));
  }
  return out;
}

std::optional<int> parse_int(std::string_view text) {
  int value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc{} || end != text.data() + text.size() || text.empty()) return std::nullopt;
  return value;
}

Result<int> parse_algorithm(const TunedCollective& t, std::string_view text, std::string_view spec) {
  const int count = algorithm_count(t);
  for (int k = 0; k < count; ++k) {
    if (text == t.algorithms[static_cast<std::size_t>(k)]) return k + 1;
  }
  if (const std::optional<int> number = parse_int(text); number && *number >= 1 && *number <= count) return *number;
  return Error{"--backend", "'" + std::string(spec) + "': '" + std::string(text) + "' is not an Open MPI " +
                                std::string(t.mca) + " algorithm: " + algorithm_choices(t)};
}

// One `KEY=VALUE` of the options: `COLL=ALG` or `COLL_segsize=BYTES`.
Status parse_item(std::string_view item, std::string_view spec, Selection& s) {
  const std::size_t equals = item.find('=');
  const std::string_view key = item.substr(0, equals);
  const std::string_view value = equals == std::string_view::npos ? std::string_view{} : item.substr(equals + 1);
  const bool segment = key.ends_with("_segsize");
  const TunedCollective* t = find_collective(segment ? key.substr(0, key.size() - 8) : key);
  const std::string quoted = "'" + std::string(spec) + "': ";
  if (t == nullptr) {
    return Error{"--backend", quoted + "'" + std::string(key) + "' is not a collective: use COLL=ALGORITHM or " +
                                  "COLL_segsize=BYTES with COLL one of " + collective_choices_text() +
                                  ", or all-algorithms alone"};
  }
  if (equals == std::string_view::npos) {
    return Error{"--backend", quoted + "'" + std::string(item) + "' needs =" + (segment ? "BYTES" : "ALGORITHM")};
  }
  const auto i = static_cast<std::size_t>(t - kTuned.data());
  if (segment) {
    const std::optional<int> bytes = parse_int(value);
    if (!bytes || *bytes < 0) {
      return Error{"--backend", quoted + std::string(key) + " '" + std::string(value) + "': must be bytes, 0.." +
                                    std::to_string(std::numeric_limits<int>::max())};
    }
    s.segment_bytes[i] = *bytes;
    return Ok{};
  }
  if (s.algorithm[i] != 0) return Error{"--backend", quoted + std::string(t->mca) + " is selected twice"};
  Result<int> algorithm = parse_algorithm(*t, value, spec);
  if (!algorithm) return algorithm.error();
  s.algorithm[i] = *algorithm;
  return Ok{};
}

Result<Selection> parse_selection(std::string_view options, std::string_view spec) {
  Selection s;
  while (!options.empty()) {
    const std::size_t comma = options.find(',');
    Status item = parse_item(options.substr(0, comma), spec, s);
    if (!item) return item.error();
    options = comma == std::string_view::npos ? std::string_view{} : options.substr(comma + 1);
  }
  for (std::size_t i = 0; i < kTuned.size(); ++i) {
    if (s.segment_bytes[i] != 0 && s.algorithm[i] == 0) {
      return Error{"--backend", "'" + std::string(spec) + "': " + std::string(kTuned[i].mca) + "_segsize needs " +
                                    std::string(kTuned[i].mca) +
                                    "=ALGORITHM too (Open MPI uses a segment size only with a forced algorithm)"};
    }
  }
  return s;
}

// --- Choosing the algorithms in a running process -------------------------------------------
//
// Open MPI reads coll_tuned_use_dynamic_rules once, at MPI_Init, and MPI_T may not change it
// (cvar_write answers MPI_T_ERR_CVAR_SET_NEVER). The forced algorithms, though, are read each
// time a communicator is created, and MPI_T may write them: with dynamic rules on, writing
// them and then MPI_Comm_dup gives a communicator that runs the new choice (checked in 4.1.4
// by counting reduction-op calls per rank). So when the process has dynamic rules on, every
// backend writes all six collectives' choices (0 where it selects none) before it duplicates;
// without them only the environment can select, and make() says which `-x` flags are missing.

// Reads one of Open MPI's control variables (after writing `write`, when given) into zeroed
// bytes wide enough for any scalar type (its bools are not MPI_INT); nullopt on failure. MPI 3.1
// has no MPI_T_cvar_get_index: the name is looked up among all of them.
std::optional<std::int64_t> cvar(const std::string& wanted, std::optional<int> write = std::nullopt) {
  int total = 0;
  MPI_T_cvar_get_num(&total);
  for (int i = 0; i < total; ++i) {
    char name[256];
    int name_length = sizeof name, verbosity = 0, bind = 0, scope = 0, count = 0;
    MPI_Datatype type;
    MPI_T_enum enumeration;
    MPI_T_cvar_handle handle;
    if (MPI_T_cvar_get_info(i, name, &name_length, &verbosity, &type, &enumeration, nullptr, nullptr, &bind, &scope) !=
            MPI_SUCCESS || wanted != name || MPI_T_cvar_handle_alloc(i, nullptr, &handle, &count) != MPI_SUCCESS) {
      continue;
    }
    std::int64_t value = 0;
    const bool ok = count == 1 && (!write || (type == MPI_INT && MPI_T_cvar_write(handle, &*write) == MPI_SUCCESS)) &&
                    MPI_T_cvar_read(handle, &value) == MPI_SUCCESS;
    MPI_T_cvar_handle_free(&handle);
    return ok ? std::optional<std::int64_t>(value) : std::nullopt;
  }
  return std::nullopt;
}

// Writes the selection through MPI_T; false when this process cannot (no dynamic rules).
bool select_by_mpi_t(const Selection& s) {
  int provided = 0;
  if (MPI_T_init_thread(MPI_THREAD_SERIALIZED, &provided) != MPI_SUCCESS) return false;
  bool ok = cvar("coll_tuned_use_dynamic_rules").value_or(0) != 0;
  for (std::size_t i = 0; ok && i < kTuned.size(); ++i) {
    const std::string prefix = "coll_tuned_" + std::string(kTuned[i].mca) + "_algorithm";
    ok = cvar(prefix, s.algorithm[i]) == s.algorithm[i] && cvar(prefix + "_segmentsize", s.segment_bytes[i]) == s.segment_bytes[i];
  }
  MPI_T_finalize();
  return ok;
}

// The environment path: every variable the selection needs must hold its value already.
Status check_environment(const Selection& s, const std::string& spec) {
  std::string missing;
  for (const auto& [name, value] : environment_of(s)) {
    const char* have = std::getenv(name.c_str());
    if (have == nullptr || value != have) missing += " -x " + name + "=" + value;
  }
  if (missing.empty()) return Ok{};
  return Error{"--backend", "'" + spec + "' selects Open MPI's algorithms through the environment, and this " +
                                "process does not have it: add" + missing +
                                " to mpirun (or at least -x OMPI_MCA_coll_tuned_use_dynamic_rules=1, which lets "
                                "collcheck choose the rest at run time)"};
}

Status select_algorithms(const Selection& s, const std::string& spec) {
  if (select_by_mpi_t(s)) return Ok{};
  if (!s.any()) return Ok{};  // Open MPI's own decisions: nothing was forced
  return check_environment(s, spec);
}

// --- Running one case ------------------------------------------------------------------------

constexpr std::size_t kGuard = 8;  // elements of guard zone before and after every buffer
constexpr std::byte kGuardPattern{0xa5};

std::optional<MPI_Datatype> mpi_type(DType dtype) {
  switch (dtype) {
    case DType::Int8: return MPI_INT8_T;
    case DType::UInt8: return MPI_UINT8_T;
    case DType::Int32: return MPI_INT32_T;
    case DType::UInt32: return MPI_UINT32_T;
    case DType::Int64: return MPI_INT64_T;
    case DType::UInt64: return MPI_UINT64_T;
    case DType::Float32: return MPI_FLOAT;
    case DType::Float64: return MPI_DOUBLE;
    default: return std::nullopt;  // see mpi_dtype_note()
  }
}

std::optional<MPI_Op> mpi_op(RedOp op) {
  switch (op) {
    case RedOp::Sum: return MPI_SUM;
    case RedOp::Prod: return MPI_PROD;
    case RedOp::Min: return MPI_MIN;
    case RedOp::Max: return MPI_MAX;
    default: return std::nullopt;  // avg: MPI has no averaging op
  }
}

// One buffer between two guard zones, moved `offset` elements off the allocation's alignment.
class GuardedBuffer {
 public:
  GuardedBuffer() = default;
  GuardedBuffer(std::size_t elements, std::size_t element_size, std::size_t offset)
      : memory_((offset + 2 * kGuard + elements) * element_size, kGuardPattern),
        element_(element_size), guard_(kGuard * element_size), lead_(offset * element_size + guard_) {
    std::fill_n(data(), elements * element_size, std::byte{0});
  }
  std::byte* data() { return memory_.data() + lead_; }
  std::byte* at(std::size_t element) { return data() + element * element_; }
  bool guards_intact() const {
    const auto pattern = [](std::byte b) { return b == kGuardPattern; };
    return std::all_of(memory_.begin() + static_cast<std::ptrdiff_t>(lead_ - guard_), memory_.begin() + static_cast<std::ptrdiff_t>(lead_), pattern) &&
           std::all_of(memory_.end() - static_cast<std::ptrdiff_t>(guard_), memory_.end(), pattern);
  }

 private:
  std::vector<std::byte> memory_;
  std::size_t element_ = 1, guard_ = 0, lead_ = 0;
};

// This rank's buffers for one case, laid out as NCCL lays them: out of place an input and an
// output buffer; in place one buffer, the input inside the output for all-gather and the
// output inside the input for reduce-scatter (impls/schedule.h, in_place_alias).
struct Buffers {
  GuardedBuffer input, output;  // in place: only `input` is allocated and holds both
  std::byte* in = nullptr;      // where the input starts
  std::byte* out = nullptr;     // where the output starts (NCCL's layout)
  std::size_t in_bytes = 0, out_bytes = 0;
};

Buffers make_buffers(const Case& c, int rank) {
  Buffers b;
  const std::size_t element = size_of(c.dtype);
  const bool has_output = c.collective != Collective::Reduce || rank == c.root;
  b.in_bytes = input_elements(c) * element;
  b.out_bytes = has_output ? output_elements(c) * element : 0;
  if (!c.in_place) {
    b.input = GuardedBuffer(input_elements(c), element, c.offset);
    b.output = GuardedBuffer(has_output ? output_elements(c) : 0, element, c.offset);
    b.in = b.input.data();
    b.out = b.output.data();
    return b;
  }
  b.input = GuardedBuffer(std::max(input_elements(c), output_elements(c)), element, c.offset);
  const Alias alias = in_place_alias(c, rank);
  b.in = b.out = b.input.data();
  if (alias.inside == BufferKind::Input) b.in = b.input.at(alias.offset);
  if (alias.inside == BufferKind::Output) b.out = b.input.at(alias.offset);
  return b;
}

void fill_input(const Case& c, int rank, std::uint64_t call, const std::vector<std::byte>* given, Buffers& b) {
  if (given != nullptr) {
    std::copy_n(given->begin(), std::min(given->size(), b.in_bytes), b.in);
    return;
  }
  Case next = c;
  next.seed = c.seed + call;
  if (b.in_bytes > 0) InputGenerator(next).fill(rank, 0, {b.in, b.in_bytes});
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
  std::string call(const Case& c, MPI_Datatype type, MPI_Op op, Buffers& b);
  RankResult result(const Case& c, Buffers& b) const;
  RankRun timed(const Case& c, const RankRunOptions& options, MPI_Datatype type, MPI_Op op, Buffers& b);

  std::string name_;
  MPI_Comm comm_;
  World& world_;
  int rank_ = 0;
};

std::string mpi_error(std::string_view function, int code) {
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  MPI_Error_string(code, text, &length);
  return std::string(function) + ": " + std::string(text, static_cast<std::size_t>(length));
}

// One call of the case's collective; "" on success, else what MPI said, naming the function.
std::string MpiBackend::call(const Case& c, MPI_Datatype type, MPI_Op op, Buffers& b) {
  const int count = static_cast<int>(c.count);
  void* in = c.in_place ? MPI_IN_PLACE : b.in;
  // In place, all-gather and all-to-all take no send count or type.
  const int send_count = c.in_place ? 0 : count;
  const MPI_Datatype send_type = c.in_place ? MPI_DATATYPE_NULL : type;
  const auto said = [](const char* function, int rc) { return rc == MPI_SUCCESS ? std::string() : mpi_error(function, rc); };
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
      if (error.empty() && c.in_place && b.out != b.in) std::memmove(b.out, b.in, b.out_bytes);
      return error;
    }
    case Collective::AllToAll: return said("MPI_Alltoall", MPI_Alltoall(in, send_count, send_type, b.out, count, type, comm_));
    case Collective::Broadcast:
      // MPI's broadcast has one buffer: out of place the root first copies its input to its
      // output, which MPI then broadcasts (NCCL's root sends from its input instead).
      if (!c.in_place && rank_ == c.root) std::memcpy(b.out, b.in, b.out_bytes);
      return said("MPI_Bcast", MPI_Bcast(b.out, count, type, c.root, comm_));
    case Collective::Reduce: {
      // In place only the root passes MPI_IN_PLACE; the others send from their one buffer.
      const bool root = rank_ == c.root;
      void* send = c.in_place && root ? MPI_IN_PLACE : b.in;
      return said("MPI_Reduce", MPI_Reduce(send, root ? b.out : nullptr, count, type, op, c.root, comm_));
    }
  }
  return "unknown collective";
}

RankResult MpiBackend::result(const Case&, Buffers& b) const {
  RankResult r;
  r.output.assign(b.out, b.out + b.out_bytes);
  r.input.assign(b.in, b.in + b.in_bytes);
  r.guards_intact = b.input.guards_intact() && b.output.guards_intact();
  return r;
}

RankRun detected(std::string error) {
  RankRun run;
  run.outcome = Outcome::Detected;
  run.error = std::move(error);
  return run;
}

// Why this backend cannot run the case ("" when it can).
std::string refusal(const Case& c, int size) {
  if (c.nranks != size) return "the case has " + std::to_string(c.nranks) + " ranks and the MPI world " + std::to_string(size);
  if (!mpi_type(c.dtype)) return "dtype " + std::string(name(c.dtype)) + ": " + std::string(mpi_dtype_note());
  if (reduces(c.collective) && !mpi_op(c.op)) return "op " + std::string(name(c.op)) + ": MPI has no averaging op (sum, prod, min, max only)";
  const auto largest = std::max(input_elements(c), output_elements(c));
  if (c.count > static_cast<std::size_t>(std::numeric_limits<int>::max()) ||
      largest > static_cast<std::size_t>(std::numeric_limits<int>::max())) {
    return "n=" + std::to_string(c.count) + ": MPI counts are int, at most " + std::to_string(std::numeric_limits<int>::max());
  }
  return "";
}

RankRun MpiBackend::run(const Case& c, const RankRunOptions& options) {
  if (std::string why = refusal(c, world_.size()); !why.empty()) return detected(name_ + ": " + why);
  const MPI_Datatype type = *mpi_type(c.dtype);
  const MPI_Op op = mpi_op(c.op).value_or(MPI_SUM);  // ignored where the collective does not reduce
  Buffers buffers = make_buffers(c, rank_);
  if (options.timed) return timed(c, options, type, op, buffers);
  RankRun run;
  const auto start = std::chrono::steady_clock::now();
  const int calls = std::max(options.calls, 1);
  for (int k = 0; k < calls; ++k) {
    fill_input(c, rank_, static_cast<std::uint64_t>(k), k == 0 ? options.input : nullptr, buffers);
    if (std::string error = call(c, type, op, buffers); !error.empty()) {
      return detected(error + " (call " + std::to_string(k + 1) + " of " + std::to_string(calls) + ")");
    }
    run.calls.push_back(result(c, buffers));
  }
  run.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return run;
}

// Inputs once, `warmup` untimed calls, then `iterations` timed ones; each timed call's
// duration is summed (results copied out between calls are not timed).
RankRun MpiBackend::timed(const Case& c, const RankRunOptions& options, MPI_Datatype type, MPI_Op op, Buffers& b) {
  RankRun run;
  fill_input(c, rank_, 0, options.input, b);
  for (int k = 0; k < options.warmup; ++k) {
    if (std::string error = call(c, type, op, b); !error.empty()) return detected(error + " (warmup call " + std::to_string(k + 1) + ")");
  }
  world_.barrier();  // every rank starts timing together (the control channel, not under test)
  double total = 0;
  for (int k = 0; k < options.iterations; ++k) {
    const auto start = std::chrono::steady_clock::now();
    std::string error = call(c, type, op, b);
    total += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (!error.empty()) return detected(error + " (timed call " + std::to_string(k + 1) + ")");
    if (options.checked) run.calls.push_back(result(c, b));
  }
  run.seconds = options.iterations > 0 ? total / options.iterations : 0;
  return run;
}

Capabilities capabilities_of(const Selection& s) {
  Capabilities c;
  c.collectives.clear();
  for (std::size_t i = 0; i < kTuned.size(); ++i) {
    if (!s.any() || s.algorithm[i] != 0) c.collectives.push_back(kTuned[i].collective);
  }
  c.dtypes = {DType::Int8, DType::UInt8, DType::Int32, DType::UInt32, DType::Int64, DType::UInt64, DType::Float32, DType::Float64};
  c.ops = {RedOp::Sum, RedOp::Prod, RedOp::Min, RedOp::Max};
  c.in_place = true;
  c.memory = "host";
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
    return Error{"--backend", "'" + spec + "' runs only in the world mpirun launched (" + std::to_string(size) +
                                  " ranks), not in a world of " + std::to_string(world.size())};
  }
  Status selected = select_algorithms(s, spec);
  const std::byte mine{static_cast<unsigned char>(selected.ok() ? 1 : 0)};
  const auto all = world.allgather({&mine, 1});
  if (!selected) return selected.error();
  for (std::size_t r = 0; r < all.size(); ++r) {
    if (all[r].empty() || all[r][0] != std::byte{1}) {
      return Error{"--backend", "'" + spec + "': rank " + std::to_string(r) + " could not select the algorithms (see its error)"};
    }
  }
  MPI_Comm comm = MPI_COMM_NULL;
  if (int rc = MPI_Comm_dup(MPI_COMM_WORLD, &comm); rc != MPI_SUCCESS) return Error{"--backend", mpi_error("MPI_Comm_dup", rc)};
  MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
  return std::unique_ptr<RankBackend>(std::make_unique<MpiBackend>(spec, comm, world));
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
  for (const TunedCollective& t : kTuned) out += std::string(t.mca) + ": " + algorithm_choices(t) + "\n";
  return out;
}

Result<std::vector<RankBackendSpec>> mpi_backend_specs(std::string_view options, std::string_view spec) {
  std::vector<RankBackendSpec> specs;
  if (options == "all-algorithms") {
    for (std::size_t i = 0; i < kTuned.size(); ++i) {
      for (int k = 1; k <= algorithm_count(kTuned[i]); ++k) {
        Selection s;
        s.algorithm[i] = k;
        specs.push_back(spec_of(s, "mpi:" + std::string(kTuned[i].mca) + "=" +
                                       std::string(kTuned[i].algorithms[static_cast<std::size_t>(k - 1)])));
      }
    }
    return specs;
  }
  Result<Selection> selection = parse_selection(options, spec);
  if (!selection) return selection.error();
  specs.push_back(spec_of(*selection, std::string(spec)));
  return specs;
}

}  // namespace collcheck
