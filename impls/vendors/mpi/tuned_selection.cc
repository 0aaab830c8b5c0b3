// Choosing Open MPI's algorithms in a running process: through MPI_T where the process has
// dynamic rules on, else by checking that the environment mpirun gave it already holds them.
#include <mpi.h>

#include <cstdint>
#include <cstdlib>
#include <optional>

#include "impls/vendors/mpi/tuned_algorithms.h"
#include "reference/numbers.h"

namespace collcheck::tuned {
namespace {

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
            MPI_SUCCESS ||
        wanted != name || MPI_T_cvar_handle_alloc(i, nullptr, &handle, &count) != MPI_SUCCESS) {
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
  // A variable already holding its value is left alone: not every one can be written (MPI_T
  // answers MPI_T_ERR_CVAR_SET_NEVER for some), and one that is 0 needs no write to stay 0.
  const auto holds = [](const std::string& name, int value) {
    return cvar(name) == value || cvar(name, value) == value;
  };
  bool ok = cvar("coll_tuned_use_dynamic_rules").value_or(0) != 0;
  for (std::size_t i = 0; ok && i < kTuned.size(); ++i) {
    const std::string prefix = "coll_tuned_" + std::string(kTuned[i].mca) + "_algorithm";
    ok = holds(prefix, s.algorithm[i]) && (!kTuned[i].segmented || holds(prefix + "_segmentsize", s.segment_bytes[i]));
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
  return Error{"--backend", quoted_input(spec) + " selects Open MPI's algorithms through the environment, and this " +
                                "process does not have it: add" + missing +
                                " to mpirun (or at least -x OMPI_MCA_coll_tuned_use_dynamic_rules=1, which lets "
                                "collcheck choose the rest at run time)"};
}

}  // namespace

Status select_algorithms(const Selection& s, const std::string& spec) {
  if (select_by_mpi_t(s)) return Ok{};
  if (!s.any()) return Ok{};  // Open MPI's own decisions: nothing was forced
  return check_environment(s, spec);
}

}  // namespace collcheck::tuned
