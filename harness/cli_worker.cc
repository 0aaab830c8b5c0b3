// `collcheck worker`: one rank of a launched world. It says hello (rank, pid, host), then runs
// every case it is sent and sends back its rank's results; it says how it dies when it dies,
// and exits at once when the launching process goes away.
#include "harness/cli_worker.h"

#include <csignal>
#include <cstring>
#include <exception>
#include <thread>

#include <poll.h>
#include <unistd.h>

#include "faults/injector.h"
#include "faults/plan.h"
#include "harness/arguments.h"
#include "impls/control_socket.h"
#include "impls/mpi_world.h"
#include "impls/rank_backend.h"
#include "impls/wire.h"

namespace collcheck::cli {
namespace {

int control_fd = -1;  // for the signal handlers, which may only write()

// Sends a Dying frame by hand (kind 4, length, text): async-signal-safe.
void say_dying(const char* words) {
  if (control_fd < 0) return;
  const std::size_t length = std::strlen(words);
  unsigned char header[12] = {4, 0, 0, 0};
  for (std::size_t i = 0; i < 8; ++i) header[4 + i] = static_cast<unsigned char>(static_cast<std::uint64_t>(length) >> (8 * i));
  (void)!::write(control_fd, header, sizeof header);
  (void)!::write(control_fd, words, length);
}

void on_fatal_signal(int signal) {
  const char* words = signal == SIGSEGV ? "signal 11 (SIGSEGV)"
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

std::vector<std::byte> hello(int rank, const std::string& error) {
  char host[256] = {};
  ::gethostname(host, sizeof host - 1);
  wire::Writer w;
  w.u64(static_cast<std::uint64_t>(rank));
  w.u64(static_cast<std::uint64_t>(::getpid()));
  w.text(host);
  w.text(error);
  return std::move(w.data());
}

Result<std::unique_ptr<RankBackend>> make_backend(std::string_view name, World& world) {
  Result<std::vector<RankBackendSpec>> specs = rank_backend_specs(name);
  if (!specs) return specs.error();
  if (specs->size() != 1) return Error{"--backend", "'" + std::string(name) + "' names several backends; a worker runs one"};
  return specs->front().make(world);
}

// The run under the request's fault plan: this process's own injector, drawn from the same seed
// as every other rank's, applied to the messages this rank sends.
RankRun run_with_faults(RankBackend& backend, wire::RunRequest& request) {
  if (request.fault_plan.empty()) return backend.run(request.c, request.options);
  Result<FaultPlan> plan = parse_fault_plan(request.fault_plan);
  if (!plan) return RankRun{Outcome::Crash, plan.error().text(), {}, 0};
  FaultInjector injector(*plan, request.fault_seed, request.options.deadline);
  request.options.hook = &injector;
  return backend.run(request.c, request.options);
}

int serve(ControlSocket& control, RankBackend& backend) {
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
      run = run_with_faults(backend, *request);
    }
    if (!control.send(FrameKind::Result, wire::encode(run))) return 3;
  }
}

}  // namespace

int run_worker(std::span<const std::string_view> args, std::ostream&, std::ostream& err) {
  constexpr std::string_view kFlags[] = {"backend", "connect"};
  Result<Arguments> arguments = Arguments::parse(args, kFlags, {});
  if (!arguments) {
    err << "collcheck worker: " << arguments.error().text() << '\n';
    return 2;
  }
  const std::string connect = arguments->get("connect");
  const std::size_t colon = connect.rfind(':');
  if (!arguments->has("backend") || colon == std::string::npos) {
    err << "collcheck worker: --backend B and --connect HOST:PORT are required (workers are launched by check and bench)\n";
    return 2;
  }
  Result<World*> world = launched_world();
  if (!world) {
    err << "collcheck worker: " << world.error().text() << '\n';
    return 2;
  }
  Result<ControlSocket> control = ControlSocket::connect(connect.substr(0, colon), std::atoi(connect.c_str() + colon + 1),
                                                         std::chrono::steady_clock::now() + std::chrono::seconds(30));
  if (!control) {
    err << "collcheck worker: " << control.error().text() << '\n';
    return 2;
  }
  control_fd = control->fd();
  watch_launcher(control->fd());
  for (int s : {SIGSEGV, SIGABRT, SIGBUS, SIGFPE, SIGILL}) std::signal(s, on_fatal_signal);
  std::set_terminate(on_terminate);
  Result<std::unique_ptr<RankBackend>> backend = make_backend(arguments->get("backend"), **world);
  if (!control->send(FrameKind::Hello, hello((*world)->rank(), backend ? "" : backend.error().text()))) return 3;
  if (!backend) return 2;
  return serve(*control, **backend);
}

}  // namespace collcheck::cli
