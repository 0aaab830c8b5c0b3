// Faults on vendor sockets: each outgoing call becomes a Message for a FaultInjector, whose
// decision becomes the interposer's action (reset, sleep, flipped bits in the copy sent).
#include "faults/socket_faults.h"

#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>

#include <dlfcn.h>
#include <netinet/in.h>
#include <sys/socket.h>

namespace collcheck {
namespace {

// Loopback TCP moves about a gigabyte a second here: the bandwidth a straggler's `factor`
// multiplies the transfer time of (the injector's default is sim's 25 GB/s links).
constexpr double kSocketBandwidth = 1e9;

FaultPlan socket_plan(const FaultPlan& plan) {
  FaultPlan out;
  for (const Fault& f : plan.faults) {
    if (injectable_on_sockets(f.kind)) out.faults.push_back(f);
  }
  return out;
}

std::optional<unsigned> port_of(const sockaddr_storage& address) {
  if (address.ss_family == AF_INET) return ntohs(reinterpret_cast<const sockaddr_in&>(address).sin_port);
  if (address.ss_family == AF_INET6) return ntohs(reinterpret_cast<const sockaddr_in6&>(address).sin6_port);
  return std::nullopt;
}

// The inode of the TCP socket whose local port is `local` and remote port `remote`, from the
// kernel's tables (/proc/net/tcp and tcp6 list every socket of this network namespace).
std::optional<std::string> socket_inode(unsigned local, unsigned remote) {
  for (const char* table : {"/proc/net/tcp", "/proc/net/tcp6"}) {
    std::ifstream in(table);
    std::string line;
    std::getline(in, line);  // the header
    while (std::getline(in, line)) {
      std::istringstream fields(line);
      std::string slot, local_address, remote_address, state, queues, timer, retransmits, uid, timeout, inode;
      fields >> slot >> local_address >> remote_address >> state >> queues >> timer >> retransmits >> uid >> timeout >>
          inode;
      const auto port = [](const std::string& address) {
        const std::size_t colon = address.rfind(':');
        return colon == std::string::npos ? 0u
                                          : static_cast<unsigned>(std::stoul(address.substr(colon + 1), nullptr, 16));
      };
      if (!inode.empty() && port(local_address) == local && port(remote_address) == remote) return inode;
    }
  }
  return std::nullopt;
}

bool process_holds(long pid, const std::string& link) {
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator("/proc/" + std::to_string(pid) + "/fd", error)) {
    std::error_code ignored;
    if (std::filesystem::read_symlink(entry.path(), ignored).string() == link) return true;
  }
  return false;
}

}  // namespace

bool injectable_on_sockets(FaultKind kind) {
  switch (kind) {
    case FaultKind::Drop:
    case FaultKind::LinkDown:
    case FaultKind::LinkFlap:
    case FaultKind::Delay:
    case FaultKind::Straggler:
    case FaultKind::Corrupt: return true;
    case FaultKind::Duplicate:
    case FaultKind::Reorder:
    case FaultKind::Stop:
    case FaultKind::Kill: return false;
  }
  return false;
}

SocketFaults::SocketFaults(const FaultPlan& plan, std::uint64_t seed, double deadline, int rank,
                           std::vector<long> peer_pids)
    : injector_(socket_plan(plan), seed, deadline, kSocketBandwidth), rank_(rank), peer_pids_(std::move(peer_pids)),
      start_(std::chrono::steady_clock::now()) {
  for (const Fault& f : plan.faults) {
    if (!injectable_on_sockets(f.kind)) skipped_.push_back(f);
    has_link_faults_ = has_link_faults_ || (injectable_on_sockets(f.kind) && f.target.scope == Target::Scope::Link);
  }
}

// The peer process is the one holding the socket at the other end: same ports, swapped.
int SocketFaults::peer_of(int fd) {
  sockaddr_storage mine{}, theirs{};
  socklen_t mine_length = sizeof mine, their_length = sizeof theirs;
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&mine), &mine_length) != 0 ||
      ::getpeername(fd, reinterpret_cast<sockaddr*>(&theirs), &their_length) != 0)
    return -1;
  const std::optional<unsigned> local = port_of(mine), remote = port_of(theirs);
  if (!local || !remote) return -1;
  const std::optional<std::string> inode = socket_inode(*remote, *local);
  if (!inode) return -1;
  for (std::size_t r = 0; r < peer_pids_.size(); ++r) {
    if (static_cast<int>(r) != rank_ && process_holds(peer_pids_[r], "socket:[" + *inode + "]"))
      return static_cast<int>(r);
  }
  return -1;
}

SocketFaults::Decision SocketFaults::decide(Message message, std::span<std::byte> copy) {
  message.from = rank_;
  message.channel = 0;
  message.bytes = copy.size();
  message.time = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  const std::vector<std::uint64_t> before = injector_.affected_per_fault();
  Decision decision{injector_.on_send(message, copy), {}};
  const std::vector<std::uint64_t> after = injector_.affected_per_fault();
  for (std::size_t i = 0; i < after.size(); ++i) {
    if (after[i] > before[i]) decision.fired[static_cast<std::size_t>(injector_.plan().faults[i].kind)] = true;
  }
  if (decision.send.drop || decision.fired[static_cast<std::size_t>(FaultKind::Corrupt)]) {
    const std::lock_guard<std::mutex> lock(mutex_);
    broke_ = true;
  }
  return decision;
}

collcheck_socket_action SocketFaults::on_send(int fd, std::span<std::byte> copy) {
  Message message;
  {
    const std::lock_guard<std::mutex> lock(mutex_);
    auto [at, fresh] = sockets_.try_emplace(fd);
    // Only a link target needs the peer's rank, and finding it reads /proc: done once per socket.
    if (fresh && has_link_faults_) at->second.peer = peer_of(fd);
    message.to = at->second.peer;
    message.sequence = at->second.calls++;
    if (message.to < 0 && has_link_faults_) ++unknown_peer_calls_;
  }
  const Decision decision = decide(message, copy);
  return collcheck_socket_action{decision.send.delay, decision.send.drop ? 1 : 0};
}

int SocketFaults::rank_of_pid(long pid) const {
  for (std::size_t r = 0; r < peer_pids_.size(); ++r) {
    if (static_cast<int>(r) != rank_ && peer_pids_[r] == pid) return static_cast<int>(r);
  }
  return -1;
}

collcheck_net_action SocketFaults::on_net_message(const collcheck_net_message& sent) {
  Message message;
  message.to = rank_of_pid(sent.peer_pid);
  message.sequence = sent.sequence;
  if (message.to < 0 && has_link_faults_) {
    const std::lock_guard<std::mutex> lock(mutex_);
    ++unknown_peer_calls_;
  }
  const Decision decision = decide(message, {reinterpret_cast<std::byte*>(sent.copy), sent.bytes});
  const auto fired = [&](FaultKind kind) { return decision.fired[static_cast<std::size_t>(kind)] ? 1 : 0; };
  collcheck_net_action action{decision.send.delay, 0, 0, 0};
  if (decision.send.drop) {
    action.close_connection = fired(FaultKind::LinkDown);
    action.fail = fired(FaultKind::LinkFlap) & (1 - action.close_connection);
    action.lose = action.close_connection == 0 && action.fail == 0 ? 1 : 0;
  }
  return action;
}

std::string SocketFaults::summary() const {
  std::string text = injector_.summary();
  for (const Fault& f : skipped_) text += "; not injected on sockets: " + to_string(f);
  const std::lock_guard<std::mutex> lock(mutex_);
  if (unknown_peer_calls_ > 0) text += "; " + std::to_string(unknown_peer_calls_) + " calls to a peer of unknown rank";
  return text;
}

bool SocketFaults::broke_connections() const {
  const std::lock_guard<std::mutex> lock(mutex_);
  return broke_;
}

void SocketFaults::callback(void* context, int fd, unsigned char* copy, std::size_t bytes,
                            collcheck_socket_action* action) {
  try {
    *action = static_cast<SocketFaults*>(context)->on_send(fd, {reinterpret_cast<std::byte*>(copy), bytes});
  } catch (...) {
    *action = collcheck_socket_action{0, 0};  // nothing may cross into the vendor's C code
  }
}

void SocketFaults::net_callback(void* context, const collcheck_net_message* message, collcheck_net_action* action) {
  try {
    *action = static_cast<SocketFaults*>(context)->on_net_message(*message);
  } catch (...) {
    *action = collcheck_net_action{0, 0, 0, 0};  // nothing may cross into NCCL
  }
}

bool interposer_loaded() { return ::dlsym(RTLD_DEFAULT, COLLCHECK_INTERPOSE_ARM) != nullptr; }

ArmedInterposer::ArmedInterposer(SocketFaults& faults, std::vector<int> excluded) {
  auto arm = reinterpret_cast<collcheck_interpose_arm_function>(::dlsym(RTLD_DEFAULT, COLLCHECK_INTERPOSE_ARM));
  if (arm == nullptr || excluded.size() > COLLCHECK_INTERPOSE_MAX_EXCLUDED) return;
  armed_ = arm(&SocketFaults::callback, &faults, excluded.data(), static_cast<int>(excluded.size())) == 0;
}

ArmedInterposer::~ArmedInterposer() {
  if (!armed_) return;
  auto disarm =
      reinterpret_cast<collcheck_interpose_disarm_function>(::dlsym(RTLD_DEFAULT, COLLCHECK_INTERPOSE_DISARM));
  if (disarm != nullptr) disarm();
}

ArmedNcclNet::ArmedNcclNet(SocketFaults& faults, const std::string& plugin_path) {
  library_ = ::dlopen(plugin_path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (library_ == nullptr) {
    const char* error = ::dlerror();
    why_ = "cannot load the NCCL net plugin " + plugin_path + ": " + (error != nullptr ? error : "unknown error");
    return;
  }
  auto arm = reinterpret_cast<collcheck_net_arm_function>(::dlsym(library_, COLLCHECK_NET_ARM));
  if (arm == nullptr) {
    why_ = plugin_path + " has no " COLLCHECK_NET_ARM ": not collcheck's NCCL net plugin";
    return;
  }
  armed_ = arm(&SocketFaults::net_callback, &faults) == 0;
  if (!armed_) why_ = "the NCCL net plugin " + plugin_path + " is armed by another run";
}

ArmedNcclNet::~ArmedNcclNet() {
  if (armed_) {
    if (auto disarm = reinterpret_cast<collcheck_net_disarm_function>(::dlsym(library_, COLLCHECK_NET_DISARM)))
      disarm();
  }
  if (library_ != nullptr) ::dlclose(library_);
}

}  // namespace collcheck
