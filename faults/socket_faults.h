// Faults on the TCP traffic of vendor backends (gloo, mpi over btl/tcp): the decision for each
// outgoing socket call the LD_PRELOAD interposer reports, drawn by a FaultInjector from the plan.
#pragma once

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "faults/injector.h"
#include "faults/interposer.h"
#include "faults/nccl_net.h"
#include "faults/plan.h"

namespace collcheck {

// What a byte stream can take: drop, link-down and link-flap as a reset connection (the socket
// shut down, the call failed with ECONNRESET); delay and straggler as a sleep before the call;
// corrupt as bit flips in the bytes sent. Duplicate and reorder cannot be done on a stream
// (it has no message boundaries to repeat or swap), and stop and kill are signals to the
// rank's process (harness/cli_worker.cc): none of those four is injected here.
bool injectable_on_sockets(FaultKind);

// One run's faults on this rank's sockets. Each outgoing call is a Message {from = this rank,
// to = the peer's rank when the plan has a link target and it can be told (-1 otherwise: link
// targets then never match),
// channel 0, sequence = the socket's call count, bytes = the call's bytes, time = seconds
// since construction}. A call, not a collective's message: a vendor may split one message into
// several calls or join several into one, so `after=K` counts calls.
class SocketFaults {
 public:
  // `peer_pids[r]`: the process id of rank r, to tell which rank a loopback socket leads to
  // (through /proc); empty, or a peer on another host: unknown (to = -1).
  SocketFaults(const FaultPlan&, std::uint64_t seed, double deadline, int rank, std::vector<long> peer_pids);

  collcheck_socket_action on_send(int fd, std::span<std::byte> copy);
  // The same plan on NCCL's messages through libnccl-net-collcheck.so: each isend is one Message
  // {from = this rank, to = the rank whose process listened, channel 0, sequence = the message's
  // index on its connection}. Drop loses the message (the receiver waits at the gap: a hang),
  // link-down shuts the connection (both ends fail), link-flap fails the send's `test`, delay and
  // straggler hold it back, corrupt flips bits in what goes.
  collcheck_net_action on_net_message(const collcheck_net_message&);

  // `drop 1, corrupt 2`, then what was not injected and calls whose peer was unknown.
  std::string summary() const;
  // A reset or corrupted stream: the vendor's connections cannot be trusted for another run.
  bool broke_connections() const;
  int peer_of(int fd);              // the rank the socket leads to, -1: unknown (cached per descriptor)
  int rank_of_pid(long pid) const;  // the other rank whose process that is, -1: unknown

  // The interposer's callback; `context` is a SocketFaults. Never throws.
  static void callback(void* context, int fd, unsigned char* copy, std::size_t bytes, collcheck_socket_action* action);
  // The net plugin's callback; `context` is a SocketFaults. Never throws.
  static void net_callback(void* context, const collcheck_net_message* message, collcheck_net_action* action);

 private:
  // The injector's decision on one message, and the kinds of the faults that fired.
  struct Decision {
    SendDecision send;
    std::array<bool, fault_kind_count> fired{};
  };
  Decision decide(Message, std::span<std::byte> copy);

  struct Socket {
    int peer = -1;
    std::uint64_t calls = 0;
  };

  FaultInjector injector_;
  std::vector<Fault> skipped_;  // the plan's faults this transport does not inject
  bool has_link_faults_ = false;
  int rank_;
  std::vector<long> peer_pids_;
  std::chrono::steady_clock::time_point start_;
  mutable std::mutex mutex_;
  std::map<int, Socket> sockets_;
  std::uint64_t unknown_peer_calls_ = 0;
  bool broke_ = false;
};

// True when this process has libcollcheck-interpose.so preloaded.
bool interposer_loaded();

// Arms the interposer with `faults` while it lives (excluding `excluded` descriptors) and
// disarms it, waiting for calls inside the callback, when it goes. armed() is false when the
// interposer is not loaded or was armed already.
class ArmedInterposer {
 public:
  ArmedInterposer(SocketFaults& faults, std::vector<int> excluded);
  ~ArmedInterposer();
  ArmedInterposer(const ArmedInterposer&) = delete;
  ArmedInterposer& operator=(const ArmedInterposer&) = delete;
  bool armed() const { return armed_; }

 private:
  bool armed_ = false;
};

// Arms libnccl-net-collcheck.so at `plugin_path` (loading it, or finding the copy NCCL loaded
// from the same path) with `faults` while it lives. armed() is false, with why() saying so, when
// the library does not load or was armed already.
class ArmedNcclNet {
 public:
  ArmedNcclNet(SocketFaults& faults, const std::string& plugin_path);
  ~ArmedNcclNet();
  ArmedNcclNet(const ArmedNcclNet&) = delete;
  ArmedNcclNet& operator=(const ArmedNcclNet&) = delete;
  bool armed() const { return armed_; }
  const std::string& why() const { return why_; }

 private:
  void* library_ = nullptr;
  bool armed_ = false;
  std::string why_;
};

}  // namespace collcheck
