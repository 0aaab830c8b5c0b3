// The worker's core: it connects to the launching process, says hello (rank, pid, host), then
// runs every case it is sent, under the case's faults (which the layer above applies), and sends
// back its rank's results; it says how it dies when it dies, and exits at once when the
// launching process goes away.
#include "impls/worlds/worker.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <string>
#include <thread>

#include <poll.h>
#include <unistd.h>

#include "impls/worlds/shared_segment.h"
#include "reference/numbers.h"

namespace collcheck {
namespace {

// The control connections of this process (one per rank it serves: several where its ranks are
// threads), for the signal handlers, which may only write(): each as its descriptor plus one, so
// that a slot still zero (reserved, not yet written) is skipped.
constexpr int kMostControlConnections = 1024;
std::array<std::atomic<int>, kMostControlConnections> control_fds_plus_one;
std::atomic<int> control_count{0};

void on_fatal_signal(int signal) {
  const char* words = signal == SIGSEGV   ? "signal 11 (SIGSEGV)"
                      : signal == SIGABRT ? "signal 6 (SIGABRT)"
                      : signal == SIGBUS  ? "signal 7 (SIGBUS)"
                      : signal == SIGFPE  ? "signal 8 (SIGFPE)"
                                          : "signal 4 (SIGILL)";
  say_dying(words);
  std::signal(signal, SIG_DFL);
  std::raise(signal);
}

void on_terminate() {
  std::string words = "an exception escaped";
  if (std::exception_ptr current = std::current_exception()) {
    try {
      std::rethrow_exception(current);
    } catch (const std::exception& e) {
      words += ": " + std::string(e.what());
    } catch (...) {
    }
  }
  say_dying(words.c_str());
  std::signal(SIGABRT, SIG_DFL);
  std::abort();
}

// Exits the process as soon as the launching process closes the connection, even while the
// main thread is stuck inside a vendor's collective.
void watch_launcher(int fd) {
  std::thread([fd] {
    for (;;) {
      pollfd p{fd, POLLRDHUP, 0};
      if (::poll(&p, 1, -1) > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR))) ::_exit(3);
    }
  }).detach();
}

// Every rank's pid, gathered while no fault is armed (every rank is here at once).
std::vector<long> every_pid(World& world) {
  std::vector<long> pids;
  const std::uint64_t pid = static_cast<std::uint64_t>(::getpid());
  for (const auto& bytes : world.allgather({reinterpret_cast<const std::byte*>(&pid), sizeof pid})) {
    std::uint64_t other = 0;
    std::memcpy(&other, bytes.data(), std::min(bytes.size(), sizeof other));
    pids.push_back(static_cast<long>(other));
  }
  return pids;
}

// One run with the control world's calls bounded by the run's deadline: a rank that never joins
// a barrier (stopped, killed) ends the run `detected` here instead of leaving this rank waiting,
// and the world, whose control channel now has a call pending, is relaunched. An exception the
// rank's backend throws (a broken invariant, a refused value) ends the run `detected` with its
// message, never with the buffers as they happen to be (rank_run_caught).
template <class Run>
RankRun run_bounded(World& world, const Run& run, double deadline) {
  using Clock = std::chrono::steady_clock;
  world.set_deadline(deadline > 0 ? clock_after(Clock::now(), deadline) : Clock::time_point::max());
  RankRun result;
  try {
    result = rank_run_caught(run);
  } catch (const WorldTimeout& timeout) {
    result = RankRun::ended(Outcome::Detected, timeout.what);
    result.world_broken = true;
  }
  world.set_deadline(Clock::time_point::max());
  return result;
}

}  // namespace

RankRun rank_run_caught(const std::function<RankRun()>& run) {
  std::string what;
  try {
    return run();
  } catch (const WorldTimeout&) {
    throw;
  } catch (const std::exception& e) {
    what = e.what();
  } catch (...) {
    what = "an exception that is not a std::exception";
  }
  RankRun failed = RankRun::ended(Outcome::Detected, std::string(kExceptionWords) + what);
  failed.world_broken = true;
  failed.refused = says_no_room_for_segment(what);  // the cuda engine's rings between processes
  return failed;
}

void say_dying(const char* words) {
  const std::size_t length = std::strlen(words);
  // The frame's header: its kind (4 bytes), then its length (8), little-endian.
  unsigned char header[12] = {static_cast<unsigned char>(FrameKind::Dying), 0, 0, 0};
  for (std::size_t i = 0; i < 8; ++i)
    header[4 + i] = static_cast<unsigned char>(static_cast<std::uint64_t>(length) >> (8 * i));
  const int count = std::min(control_count.load(), kMostControlConnections);
  for (int c = 0; c < count; ++c) {
    const int fd = control_fds_plus_one[static_cast<std::size_t>(c)].load() - 1;
    if (fd < 0) continue;
    (void)!::write(fd, header, sizeof header);
    (void)!::write(fd, words, length);
  }
}

Result<ControlSocket> connect_to_launcher(const std::string& host, int port) {
  Result<ControlSocket> control =
      ControlSocket::connect(host, port, std::chrono::steady_clock::now() + std::chrono::seconds(30));
  if (!control) return control;
  if (const int slot = control_count.fetch_add(1); slot < kMostControlConnections)
    control_fds_plus_one[static_cast<std::size_t>(slot)].store(control->fd() + 1);
  watch_launcher(control->fd());
  for (int s : {SIGSEGV, SIGABRT, SIGBUS, SIGFPE, SIGILL}) std::signal(s, on_fatal_signal);
  std::set_terminate(on_terminate);
  return control;
}

int serve_launcher(ControlSocket& control, World& world, const MakeRankBackend& make_backend,
                   const RunUnderFaults& run_under_faults) {
  const WorkerRank rank{world.rank(), every_pid(world), control.fd()};
  Result<std::unique_ptr<RankBackend>> backend = make_backend(world);
  const wire::Hello hello{world.rank(), static_cast<long>(::getpid()), this_host_name(),
                          backend ? "" : backend.error().text()};
  if (!control.send(FrameKind::Hello, wire::encode(hello))) return 3;
  if (!backend) return 2;
  for (;;) {
    Result<Frame> frame = control.receive(SteadyTime::max());
    if (!frame || frame->kind == FrameKind::Quit) return 0;
    if (frame->kind != FrameKind::Run) continue;
    Result<wire::RunRequest> request = wire::decode_request(frame->payload);
    RankRun run;
    if (!request) {
      run.outcome = Outcome::Crash;
      run.error = request.error().text();
    } else {
      if (request->input) request->options.input = &*request->input;
      run = run_bounded(
          world,
          [&] {
            if (request->fault_plan.empty()) return (*backend)->run(request->c, request->options);
            return run_under_faults(**backend, *request, rank);
          },
          request->options.deadline);
    }
    if (!control.send(FrameKind::Result, wire::encode(std::move(run)))) return 3;
  }
}

int serve_launcher_in_threads(const std::string& host, int port, int nranks, const MakeRankBackend& make_backend,
                              const RunUnderFaults& run_under_faults) {
  std::vector<std::unique_ptr<World>> worlds = make_thread_worlds(nranks);
  std::vector<int> statuses(static_cast<std::size_t>(nranks), 0);
  std::vector<std::thread> ranks;
  ranks.reserve(static_cast<std::size_t>(nranks));
  for (int r = 0; r < nranks; ++r) {
    ranks.emplace_back([&, r] {
      Result<ControlSocket> control = connect_to_launcher(host, port);
      if (!control) {
        // The others would wait for this rank in their first allgather: the process ends here.
        std::fprintf(stderr, "collcheck worker: rank %d: %s\n", r, control.error().text().c_str());
        std::_Exit(2);
      }
      statuses[static_cast<std::size_t>(r)] =
          serve_launcher(*control, *worlds[static_cast<std::size_t>(r)], make_backend, run_under_faults);
      // Its descriptor closes with the connection and may be reused: no dying words go there.
      for (std::atomic<int>& slot : control_fds_plus_one) {
        int registered = control->fd() + 1;
        slot.compare_exchange_strong(registered, 0);
      }
    });
  }
  for (std::thread& rank : ranks) rank.join();
  return *std::max_element(statuses.begin(), statuses.end());
}

}  // namespace collcheck
