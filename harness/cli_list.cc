// `collcheck list`: one section per thing a case is made of, each a small table. Names, sizes and
// buffer shapes come from the reference library itself, so the list cannot drift from it.
#include "harness/cli_list.h"

#include <cstddef>
#include <sstream>
#include <string>
#include <string_view>

#include "collcheck/config.h"
#include "collcheck/plugin.h"
#include "harness/optional_parts.h"
#include "harness/text_table.h"
#include "impls/algorithms/algorithms.h"
#include "impls/backend/rank_backend.h"
#include "impls/mutants/mutants.h"
#include "impls/registry.h"
#include "impls/sim/topology.h"
#include "impls/vendors/mpi/mpi_backend.h"
#include "reference/case.h"
#include "reference/collective.h"
#include "reference/dtype.h"

namespace collcheck::cli {
namespace {

std::string yes_no(bool value) { return value ? "yes" : "no"; }

// "count" or "nranks*count", found by asking the reference library for two rank counts.
std::string elements_formula(std::size_t (*elements)(Collective, std::size_t, int), Collective c) {
  const std::size_t three = elements(c, 1, 3);
  const std::size_t five = elements(c, 1, 5);
  if (three == 1 && five == 1) return "count";
  if (three == 3 && five == 5) return "nranks*count";
  return "?";
}

// What NCCL's `count` argument counts, read off the shape of the buffers.
std::string count_meaning(const std::string& input, const std::string& output) {
  if (input == "count" && output == "count") return "elements in each buffer";
  if (input == "count") return "elements each rank contributes";
  if (output == "count") return "elements each rank receives";
  return "elements each rank sends to each rank";
}

// A v-collective's buffers follow its counts (docs/oracle.md).
void vector_sizes(Collective c, std::string& input, std::string& output, std::string& meaning) {
  switch (c) {
    case Collective::AllGatherV:
      input = "counts[r]";
      output = "sum(counts)";
      meaning = "n: sum of counts, one per rank";
      break;
    case Collective::ReduceScatterV:
      input = "sum(counts)";
      output = "counts[r]";
      meaning = "n: sum of counts, one per rank";
      break;
    default:
      input = "row r of counts";
      output = "column r of counts";
      meaning = "n: sum of counts, ranks*ranks";
      break;
  }
}

void print_collectives(std::ostream& out) {
  out << "collectives (input and output: elements in one rank's buffers):\n";
  TextTable table;
  table.add_row({"name", "reduces", "same on all ranks", "rooted", "input", "output", "count is"});
  for (Collective c : all_collectives()) {
    std::string input = elements_formula(&input_elements, c);
    std::string output = elements_formula(&output_elements, c);
    std::string meaning = count_meaning(input, output);
    if (per_rank_counts(c)) vector_sizes(c, input, output, meaning);
    table.add_row({std::string(name(c)), yes_no(reduces(c)), yes_no(rank_identical(c)), yes_no(rooted(c)), input,
                   output, meaning});
  }
  table.print(out);
}

std::string dtype_kind(DType dtype) {
  if (is_float(dtype)) return "float";
  return is_signed(dtype) ? "signed integer" : "unsigned integer";
}

void print_dtypes(std::ostream& out) {
  out << "dtypes:\n";
  TextTable table;
  table.add_row({"name", "bytes", "long name", "nccl name", "kind"});
  for (DType dtype : all_dtypes()) {
    table.add_row({std::string(name(dtype)), std::to_string(size_of(dtype)), std::string(long_name(dtype)),
                   std::string(nccl_name(dtype)), dtype_kind(dtype)});
  }
  table.print(out);
}

void print_ops(std::ostream& out) {
  std::string users;
  for (Collective c : all_collectives()) {
    if (reduces(c)) users += (users.empty() ? "" : ", ") + std::string(name(c));
  }
  out << "ops (used by " << users << "):\n";
  TextTable table;
  for (RedOp op : all_ops()) table.add_row({std::string(name(op))});
  table.print(out);
}

void print_value_kinds(std::ostream& out) {
  struct Kind {
    ValueKind kind;
    const char* checked;
  };
  constexpr Kind kinds[] = {
      {ValueKind::Exact, "every partial result exact in any order; checked bit for bit"},
      {ValueKind::Real, "random reals; checked against a sound error bound"},
      {ValueKind::Special, "reals with NaN, inf, -0, subnormals and largest finite mixed in"},
  };
  out << "value kinds:\n";
  TextTable table;
  for (const Kind& kind : kinds) table.add_row({std::string(name(kind.kind)), kind.checked});
  table.print(out);
}

void print_algorithms(std::ostream& out) {
  out << "algorithms (prove and simulate with --algorithm NAME; check and replay with --backend NAME@sim, on the\n"
         "cuda engine with NAME@cuda-host (host threads) or NAME@cuda (CUDA devices), one process per rank with\n"
         "NAME@cuda-host:mode=processes or NAME@cuda:mode=processes, across processes NAME@proc):\n";
  TextTable table;
  table.add_row({"  name", "collective", "what it does"});
  for (const Algorithm& algorithm : all_algorithms()) {
    table.add_row({"  " + std::string(algorithm.name), std::string(name(algorithm.collective)),
                   std::string(algorithm.description)});
  }
  table.print(out);
}

void print_mutants(std::ostream& out) {
  out << "mutants (deliberately broken variants: check --backend mutant:NAME@sim):\n";
  TextTable table;
  table.add_row({"  name", "caught by", "what it gets wrong"});
  for (const Mutant& mutant : all_mutants()) {
    std::string caught;
    for (std::string_view property : mutant.caught_by) caught += (caught.empty() ? "" : ", ") + std::string(property);
    const std::string under = mutant.faults.empty() ? "" : " (shows under --faults '" + mutant.faults + "')";
    table.add_row({"  " + mutant.variant.name, caught, mutant.variant.description + under});
  }
  table.print(out);
}

// Backends across processes: ours on `proc`, and the vendors this build has.
void print_process_backends(std::ostream& out) {
  out << "backends across processes (check --backend; docs/processes.md, docs/vendors.md):\n"
      << "  ALGORITHM@proc, all@proc, mutant:NAME@proc (also mutant:hang@proc, mutant:crash@proc, mutant:throw@proc)\n";
#if COLLCHECK_HAVE_MPI
  out << "  mpi, mpi:COLL=ALG[,COLL_segsize=BYTES], mpi:all-algorithms; Open MPI's coll/tuned algorithms:\n";
  std::istringstream table(mpi_algorithm_table());
  for (std::string line; std::getline(table, line);) out << "    " << line << '\n';
  out << "    (" << mpi_dtype_note() << ")\n";
#endif
#if COLLCHECK_HAVE_GLOO
  std::string names;
  if (auto specs = rank_backend_specs("gloo:all-algorithms")) {
    for (const RankBackendSpec& spec : *specs) names += (names.empty() ? "" : ", ") + spec.name;
  }
  out << "  gloo:NAME[:OPTIONS], gloo:all-algorithms; Gloo's algorithms:\n    " << names << '\n';
#endif
  out << "  plugin:PATH[:key=value,...]; a backend of your own in C, ABI version " << COLLCHECK_PLUGIN_ABI_VERSION
      << " (include/collcheck/plugin.h, docs/plugins.md)\n";
}

void print_topologies(std::ostream& out) {
  out << "topologies (simulate --topology): " << topology_presets() << ", or a topology file\n";
}

}  // namespace

const CommandHelp& list_help() {
  static constexpr CommandHelp help{
      "list",          "print the collectives, dtypes, ops, algorithms, value kinds and optional parts", {}, "", "",
      "collcheck list"};
  return help;
}

int run_list(std::ostream& out) {
  print_collectives(out);
  out << '\n';
  print_dtypes(out);
  out << '\n';
  print_ops(out);
  out << '\n';
  print_value_kinds(out);
  out << '\n';
  print_algorithms(out);
  out << '\n';
  print_mutants(out);
  out << '\n';
  print_process_backends(out);
  out << '\n';
  print_topologies(out);
  out << '\n';
  out << "optional parts:\n";
  print_optional_parts(out);
  return 0;
}

}  // namespace collcheck::cli
