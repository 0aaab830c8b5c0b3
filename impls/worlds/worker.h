// The worker's core: one rank of a launched world (`collcheck worker`), serving the launching
// process's run requests over the control channel; the launching end is launched_world.h.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "impls/backend/rank_backend.h"
#include "impls/backend/world.h"
#include "impls/worlds/control_socket.h"
#include "impls/worlds/wire.h"
#include "reference/result.h"

namespace collcheck {

// What a worker knows of its world for every run: its rank, every rank's process id (to tell
// which rank a vendor's socket leads to), and its control connection, which no fault may touch.
struct WorkerRank {
  int rank = 0;
  std::vector<long> pids;
  int control_fd = -1;
};

// Makes this rank's backend on the world (every rank at once).
using MakeRankBackend = std::function<Result<std::unique_ptr<RankBackend>>(World&)>;

// Runs one request whose fault plan is not empty on the rank's backend, under that plan: the
// layer that knows faults builds the plan's hook or arms the socket interposer (impls/ never
// includes faults/). The worker has already bounded the run's control-world calls by its deadline.
using RunUnderFaults = std::function<RankRun(RankBackend&, wire::RunRequest&, const WorkerRank&)>;

// Connects to the launching process at host:port (within 30 s). From then on the process tells
// the launcher how it dies (a fatal signal, an exception that escapes, say_dying()) and exits at
// once when the launcher closes the connection, even while stuck inside a vendor's collective.
Result<ControlSocket> connect_to_launcher(const std::string& host, int port);

// Serves as rank world.rank(): gathers every rank's pid, makes the backend, says hello (with the
// backend's error, if any), then runs every request it is sent and sends back its rank's run,
// until the launcher says quit or goes away. Returns the process's exit status: 0 then, 2 when
// the backend could not be made, 3 when a reply could not be sent.
int serve_launcher(ControlSocket& control, World& world, const MakeRankBackend& make_backend,
                   const RunUnderFaults& run_under_faults);

// Serves as every rank of a world of `nranks` threads of this process (a spec whose ranks must
// share a process: RankBackendSpec::ranks_are_threads): each rank a thread with its own control
// connection to host:port, serving as serve_launcher() does; the launcher sees a world of nranks
// ranks with one process id. Returns the highest of the ranks' exit statuses.
int serve_launcher_in_threads(const std::string& host, int port, int nranks, const MakeRankBackend& make_backend,
                              const RunUnderFaults& run_under_faults);

// Runs one rank's part of a run, `run()`, and turns an exception it throws (a broken invariant,
// a refused value, a vendor's error that escaped its adapter) into a run ended `detected` whose
// error is "an exception: " and its message, with the world marked broken (its peers may be left
// inside a collective); WorldTimeout passes through. Workers and lockstep ranks use it, so that
// no exception is ever judged as the data the buffers happen to hold.
RankRun rank_run_caught(const std::function<RankRun()>& run);
inline constexpr std::string_view kExceptionWords = "an exception: ";  // how its error starts

// Tells the launcher how this worker dies (a Dying frame written by hand on the control
// connection): async-signal-safe; nothing before connect_to_launcher().
void say_dying(const char* words);

}  // namespace collcheck
