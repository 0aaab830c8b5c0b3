// One launched world, as the launching process sees it: `mpirun -np N collcheck worker ...` in
// a session of its own (launched_world.cc), one control connection per rank, and the run of one
// case across them (launched_run.cc). The other end is worker.h.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "impls/backend/backend.h"
#include "impls/backend/rank_backend.h"
#include "impls/worlds/control_socket.h"
#include "impls/worlds/interrupts.h"

namespace collcheck {

// The lines of a world's log (mpirun's output and the ranks' stderr) that say how a process
// ended: signals, aborts, sanitizer reports, uncaught exceptions; each on its own indented line,
// the first `most` of them.
std::string notable_log_lines(const std::string& log_text, std::size_t most = 6);

// Whether mpirun's extra arguments (`--mpirun-args`) place ranks on other hosts: a host list or a
// host file in any of Open MPI's spellings (`--host`, `-H`, `-host`, `--hostfile`, `-hostfile`,
// `--machinefile`, `-machinefile`, `--default-hostfile`, each also as `NAME=VALUE`). Workers then
// connect to this host's name and run the program's path, not this process's image.
bool spans_hosts(const std::vector<std::string>& launcher_arguments);

// Whether the socket interposer (kInterposerFile) lies next to this collcheck binary.
bool interposer_built();
// Where NCCL's network plugin with faults (kNcclNetPluginFile) lies: next to this binary.
std::string nccl_net_plugin_path();

class LaunchedWorld {
 public:
  LaunchedWorld() = default;
  LaunchedWorld(const LaunchedWorld&) = delete;
  LaunchedWorld& operator=(const LaunchedWorld&) = delete;
  ~LaunchedWorld() { stop(false); }

  // `faulty`: the world will run cases under fault plans. mpirun gets SIGTERM when the calling
  // thread ends (PR_SET_PDEATHSIG): launch from a thread that outlives the world.
  Status launch(const RankBackendSpec& spec, int nranks, const BackendOptions& options, bool faulty);

  // A run left the world unusable: a rank stopped or killed by the plan, or a vendor's
  // connections reset or corrupted. The backend relaunches it.
  bool broken() const { return broken_; }

  // Whether any rank of this world said hello (even one whose launch failed later).
  bool reached_a_rank() const { return reached_a_rank_; }

  // Sends the request to every rank and waits for every reply until the deadline.
  RepeatedRun run(const Case& c, const RunOptions& options, double deadline);

  // Kills the world: a polite quit when it is healthy, else every local process below mpirun
  // and every worker we know of at once, then mpirun; removes its directory and segments.
  void stop(bool healthy);

 private:
  // launched_world.cc: the processes.
  static void fault_arguments(const RankBackendSpec& spec, bool many_hosts, std::vector<std::string>& argv);
  Status start(const std::vector<std::string>& argv, const TeardownLock& held);
  Status accept_ranks(Listener& listener, int nranks);
  Error launch_error(const std::string& what);
  void kill_planned(const std::vector<std::string>& planned);
  bool exited();
  bool wait_for_exit(SteadyTime deadline);
  void finish();

  // launched_run.cc: one case's replies.
  RepeatedRun collect(SteadyTime deadline, double seconds);
  RepeatedRun judge(std::vector<std::optional<RankRun>> replies, const std::vector<std::string>& died,
                    const std::vector<std::string>& planned, double seconds);
  static RepeatedRun ended(Outcome outcome, std::string error);

  pid_t mpirun_ = -1;
  std::uint64_t remembered_ = 0;  // the key of this world in the signal thread's list (interrupts.h)
  std::vector<long> killed_;      // the processes stop() killed, whose segments finish() removes
  std::vector<ControlSocket> ranks_;
  std::vector<long> local_pids_;
  std::map<int, long> pids_;  // per rank, on this host (0: elsewhere)
  bool broken_ = false;
  bool reached_a_rank_ = false;
  std::map<std::size_t, std::string> dying_words_;
  std::string directory_;
  std::string log_;
  std::string last_log_notes_;  // notable_log_lines of the last world's log, kept as finish() removes it
  std::string command_;
};

}  // namespace collcheck
