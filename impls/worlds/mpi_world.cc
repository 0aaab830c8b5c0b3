// The launched world over MPI: MPI_Init_thread once, a duplicate of MPI_COMM_WORLD for control
// traffic, allgather by MPI_Allgatherv, MPI_Finalize at exit.
#include "impls/worlds/mpi_world.h"

#include <cstdint>
#include <cstdlib>
#include <ctime>
#include <string>
#include <string_view>
#include <vector>

#include <sched.h>
#include <unistd.h>

#include "collcheck/config.h"

#if COLLCHECK_HAVE_MPI
#include <mpi.h>
#endif

namespace collcheck {

bool launched_by_launcher() {
  for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK", "SLURM_NTASKS"}) {
    const char* value = std::getenv(name);
    if (value != nullptr && *value != '\0') {
      if (std::string_view(name) == "SLURM_NTASKS" && std::getenv("SLURM_PROCID") == nullptr) continue;
      return true;
    }
  }
  return false;
}

void leave_launcher_environment() {
  // What mpirun and srun set for their ranks; Open MPI's user settings (OMPI_MCA_btl, ...) stay.
  constexpr std::string_view kPrefixes[] = {"PMIX_",         "PMI_",          "OMPI_COMM_WORLD_", "OMPI_MCA_orte_",
                                            "OMPI_MCA_ess",  "OMPI_MCA_pmix", "OMPI_UNIVERSE_",   "OMPI_FIRST_RANKS",
                                            "OMPI_FILE_",    "OMPI_COMMAND",  "OMPI_ARGV",        "OMPI_NUM_APP_CTX",
                                            "OMPI_APP_CTX_", "SLURM_PROCID"};
  std::vector<std::string> names;
  for (char** entry = environ; *entry != nullptr; ++entry) {
    const std::string_view variable(*entry);
    const std::string_view name = variable.substr(0, variable.find('='));
    for (std::string_view prefix : kPrefixes) {
      if (name.starts_with(prefix)) names.emplace_back(name);
    }
  }
  for (const std::string& name : names) ::unsetenv(name.c_str());
}

#if COLLCHECK_HAVE_MPI
namespace {

class MpiWorld final : public World {
 public:
  MpiWorld() {
    MPI_Comm_dup(MPI_COMM_WORLD, &control_);
    MPI_Comm_rank(control_, &rank_);
    MPI_Comm_size(control_, &size_);
    // The job name, the same everywhere: the one a launching collcheck gave its world (its pid
    // and the world's number, as in the world's directory), else rank 0's pid and time.
    std::uint64_t id[2] = {static_cast<std::uint64_t>(::getpid()), static_cast<std::uint64_t>(std::time(nullptr))};
    MPI_Bcast(id, 2, MPI_UINT64_T, 0, control_);
    const char* launched_job = std::getenv(kJobVariable);
    job_ = launched_job != nullptr && *launched_job != '\0'
               ? std::string(launched_job)
               : "mpi-" + std::to_string(id[0]) + "-" + std::to_string(id[1]);
  }
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string job() const override { return job_; }

  std::vector<std::vector<std::byte>> allgather(std::span<const std::byte> mine) override {
    const int bytes = static_cast<int>(mine.size());
    std::vector<int> counts(static_cast<std::size_t>(size_));
    MPI_Request request = MPI_REQUEST_NULL;
    MPI_Iallgather(&bytes, 1, MPI_INT, counts.data(), 1, MPI_INT, control_, &request);
    wait(request, "allgather");
    std::vector<int> displacements(counts.size());
    long long total = 0;
    for (std::size_t r = 0; r < counts.size(); ++r) {
      displacements[r] = static_cast<int>(total);
      total += counts[r];
    }
    std::vector<std::byte> all(static_cast<std::size_t>(total));
    MPI_Iallgatherv(mine.data(), bytes, MPI_BYTE, all.data(), counts.data(), displacements.data(), MPI_BYTE, control_,
                    &request);
    wait(request, "allgather");
    // NOLINTNEXTLINE(clang-analyzer-optin.mpi.MPI-Checker): wait() completed it (see there)
    std::vector<std::vector<std::byte>> out(counts.size());
    for (std::size_t r = 0; r < counts.size(); ++r) {
      out[r].assign(all.begin() + displacements[r], all.begin() + displacements[r] + counts[r]);
    }
    return out;
  }

  void barrier() override {
    MPI_Request request = MPI_REQUEST_NULL;
    MPI_Ibarrier(control_, &request);
    wait(request, "barrier");
  }

  void set_deadline(std::chrono::steady_clock::time_point deadline) override { deadline_ = deadline; }

 private:
  // Without a deadline, MPI's own blocking wait; with one, polling until it passes. Every request
  // is complete on return (MPI_Wait, or MPI_Test until done); a WorldTimeout leaves it pending, and
  // the world is broken then (a collective cannot be cancelled). The analyzer's MPI checker models
  // MPI_Wait but neither MPI_Test nor the nonblocking collectives MPI_Iallgatherv and MPI_Ibarrier,
  // so it reports requests with no wait and a wait with no request: false positives, silenced.
  void wait(MPI_Request& request, const char* what) {
    if (deadline_ == std::chrono::steady_clock::time_point::max()) {
      MPI_Wait(&request, MPI_STATUS_IGNORE);  // NOLINT(clang-analyzer-optin.mpi.MPI-Checker): see above
      return;
    }
    for (int done = 0;;) {
      MPI_Test(&request, &done, MPI_STATUS_IGNORE);
      if (done) return;
      if (std::chrono::steady_clock::now() > deadline_) {
        throw WorldTimeout{"rank " + std::to_string(rank_) + ": the control world's " + what +
                           " did not complete by the run's deadline (a rank never joined)"};
      }
      sched_yield();
    }
  }

  std::chrono::steady_clock::time_point deadline_ = std::chrono::steady_clock::time_point::max();
  MPI_Comm control_ = MPI_COMM_NULL;
  int rank_ = 0;
  int size_ = 1;
  std::string job_;
};

void finalize() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) MPI_Finalize();
}

}  // namespace

Result<World*> launched_world() {
  static MpiWorld* world = [] {
    int initialized = 0;
    MPI_Initialized(&initialized);
    if (!initialized) {
      int provided = 0;
      MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided);
      std::atexit(finalize);
    }
    return new MpiWorld();
  }();
  return static_cast<World*>(world);
}

std::vector<std::optional<std::vector<std::byte>>> gather_at_rank_zero(std::span<const std::byte> mine,
                                                                       std::chrono::steady_clock::time_point deadline) {
  constexpr int kShareTag = 0x5ca7;
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (rank != 0) {
    // Blocks until rank 0 takes it: rank 0 ends the job if it does not (abort_launched_world).
    MPI_Send(mine.data(), static_cast<int>(mine.size()), MPI_BYTE, 0, kShareTag, MPI_COMM_WORLD);
    return {};
  }
  std::vector<std::optional<std::vector<std::byte>>> all(static_cast<std::size_t>(size));
  all[0].emplace(mine.begin(), mine.end());
  for (int heard = 1; heard < size && std::chrono::steady_clock::now() < deadline;) {
    int arrived = 0;
    MPI_Status status;
    MPI_Iprobe(MPI_ANY_SOURCE, kShareTag, MPI_COMM_WORLD, &arrived, &status);
    if (!arrived) {
      ::usleep(1000);
      continue;
    }
    int bytes = 0;
    MPI_Get_count(&status, MPI_BYTE, &bytes);
    std::vector<std::byte> message(static_cast<std::size_t>(bytes));
    MPI_Recv(message.data(), bytes, MPI_BYTE, status.MPI_SOURCE, kShareTag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    all[static_cast<std::size_t>(status.MPI_SOURCE)] = std::move(message);
    ++heard;
  }
  return all;
}

void abort_launched_world(int code) {
  MPI_Abort(MPI_COMM_WORLD, code);
  std::_Exit(code);
}

#else

Result<World*> launched_world() {
  return Error{"--backend",
               "running across processes needs MPI (mpirun), and this build has none: " COLLCHECK_MPI_REASON};
}

std::vector<std::optional<std::vector<std::byte>>> gather_at_rank_zero(std::span<const std::byte> mine,
                                                                       std::chrono::steady_clock::time_point) {
  return {std::vector<std::byte>(mine.begin(), mine.end())};
}

void abort_launched_world(int code) { std::_Exit(code); }

#endif

}  // namespace collcheck
