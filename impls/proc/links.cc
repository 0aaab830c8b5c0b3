// The links between processes: creating, mapping and removing the segments, and opening, reading
// and writing the TCP connections of the proc transport, once per transport; the links' names.
#include "impls/proc/links.h"

#include "impls/proc/rdma_links.h"

#include <cstring>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/mman.h>

#include "impls/worlds/interrupts.h"
#include "impls/worlds/leftovers.h"
#include "impls/worlds/shared_segment.h"

namespace collcheck::proc {

std::string system_error(const std::string& what) { return what + ": " + std::strerror(errno); }

namespace {

// The names of the segments this process removes on every way out of connect_peers: an error, a
// WorldTimeout thrown by the control world when a member never joins (killed while connecting:
// its own segment's name is removed here, by those who outlive it), or a signal meanwhile.
class SegmentNames {
 public:
  SegmentNames() = default;
  SegmentNames(const SegmentNames&) = delete;
  SegmentNames& operator=(const SegmentNames&) = delete;
  ~SegmentNames() { remove_all(); }

  // `kept`: 's' (shm_open's name) or 'f' (a file), then the path.
  void add(const std::string& kept) {
    if (kept.size() < 2 || (kept[0] != 's' && kept[0] != 'f')) return;
    const std::string path = kept[0] == 's' ? world_base().string() + kept.substr(1) : kept.substr(1);
    remember_file(path);
    paths_.push_back(path);
  }

  // The segments of the other members on `host`, which those who outlive a member remove.
  void add_others_on(const std::string& host, const std::vector<std::string>& hosts,
                     const std::vector<std::string>& names, int rank) {
    for (std::size_t q = 0; q < names.size(); ++q) {
      if (q != static_cast<std::size_t>(rank) && hosts[q] == host) add(names[q]);
    }
  }

  void remove_all() {
    for (const std::string& path : paths_) {
      ::unlink(path.c_str());
      forget_file(path);
    }
    paths_.clear();
  }

 private:
  std::vector<std::string> paths_;
};

std::vector<std::byte> as_bytes(const std::string& text) {
  const auto* begin = reinterpret_cast<const std::byte*>(text.data());
  return {begin, begin + text.size()};
}

std::vector<std::string> allgather_text(World& world, const std::string& mine) {
  std::vector<std::string> all;
  for (const std::vector<std::byte>& bytes : world.allgather(as_bytes(mine))) {
    all.emplace_back(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  }
  return all;
}

// The first member's error, the same on every member; "" when none failed.
std::string first_error(const std::vector<std::string>& errors) {
  for (std::size_t r = 0; r < errors.size(); ++r) {
    if (!errors[r].empty()) return "rank " + std::to_string(r) + ": " + errors[r];
  }
  return "";
}

bool transfer_all(int fd, void* data, std::size_t bytes, bool sending) {
  auto* at = static_cast<char*>(data);
  while (bytes > 0) {
    const ssize_t n = sending ? ::send(fd, at, bytes, MSG_NOSIGNAL) : ::recv(fd, at, bytes, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    at += n;
    bytes -= static_cast<std::size_t>(n);
  }
  return true;
}

int dial(const std::string& host, const std::string& port) {
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (::getaddrinfo(host.c_str(), port.c_str(), &hints, &found) != 0) return -1;
  int fd = -1;
  for (addrinfo* a = found; a != nullptr && fd < 0; a = a->ai_next) {
    fd = ::socket(a->ai_family, a->ai_socktype, a->ai_protocol);
    if (fd >= 0 && ::connect(fd, a->ai_addr, a->ai_addrlen) != 0) {
      ::close(fd);
      fd = -1;
    }
  }
  ::freeaddrinfo(found);
  return fd;
}

int listen_any(std::string& port, std::string& error) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_ANY);
  socklen_t length = sizeof address;
  if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0 || ::listen(fd, 4096) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
    error = system_error("cannot listen on a TCP port");
    if (fd >= 0) ::close(fd);
    return -1;
  }
  port = std::to_string(ntohs(address.sin_port));
  return fd;
}

// Connects to each lower rank it needs (on an error, stops and sets `error`); returns how many
// higher ranks will connect to this one.
std::size_t connect_lower(World& world, const std::vector<bool>& need, const std::vector<std::string>& ports,
                          Peers& peers, std::string& error) {
  const int rank = world.rank();
  std::size_t expected = 0;
  for (int q = 0; q < world.size() && error.empty(); ++q) {
    if (!need[static_cast<std::size_t>(q)]) continue;
    if (q > rank) {
      ++expected;
      continue;
    }
    const bool local = peers.hosts[static_cast<std::size_t>(q)] == peers.hosts[static_cast<std::size_t>(rank)];
    int fd = dial(local ? "127.0.0.1" : peers.hosts[static_cast<std::size_t>(q)], ports[static_cast<std::size_t>(q)]);
    std::int32_t me = rank;
    if (fd < 0 || !transfer_all(fd, &me, sizeof me, true))
      error = system_error("cannot connect to rank " + std::to_string(q));
    peers.connections[static_cast<std::size_t>(q)].fd = fd;
  }
  return expected;
}

// Accepts the `expected` connections of the higher ranks on `listener`, each naming its rank.
void accept_higher(World& world, int listener, std::size_t expected, Peers& peers, std::string& error) {
  for (std::size_t accepted = 0; accepted < expected && error.empty(); ++accepted) {
    pollfd waiting{listener, POLLIN, 0};
    const int fd = ::poll(&waiting, 1, 60000) == 1 ? ::accept(listener, nullptr, nullptr) : -1;
    std::int32_t peer = -1;
    if (fd < 0 || !transfer_all(fd, &peer, sizeof peer, false) || peer <= world.rank() || peer >= world.size()) {
      error = "no connection from a higher rank within 60 s";
    } else {
      peers.connections[static_cast<std::size_t>(peer)].fd = fd;
    }
  }
}

// Every process listens; each connects to the lower ranks it needs (the kernel completes those
// without waiting for accept) and then accepts the higher ones, so no order can deadlock.
std::string open_connections(World& world, const std::vector<bool>& need, Peers& peers) {
  std::string port, error;
  const int listener = listen_any(port, error);
  const std::vector<std::string> ports = allgather_text(world, error.empty() ? port : "!" + error);
  for (std::size_t q = 0; q < ports.size() && error.empty(); ++q) {
    if (!ports[q].empty() && ports[q][0] == '!') error = "rank " + std::to_string(q) + ": " + ports[q].substr(1);
  }
  const std::size_t expected = connect_lower(world, need, ports, peers, error);
  accept_higher(world, listener, expected, peers, error);
  if (listener >= 0) ::close(listener);
  for (std::size_t q = 0; q < peers.connections.size(); ++q) {
    Connection& c = peers.connections[q];
    c.peer = static_cast<int>(q);
    if (c.fd < 0) continue;
    const int one = 1;
    ::setsockopt(c.fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    ::fcntl(c.fd, F_SETFL, ::fcntl(c.fd, F_GETFL) | O_NONBLOCK);
  }
  return first_error(allgather_text(world, error));
}

}  // namespace

void close_peers(Peers& peers) {
  peers.rdma.reset();  // its queue pairs before the segment it registered
  for (std::byte* segment : peers.segments) {
    if (segment != nullptr) ::munmap(segment, kSegmentBytes);
  }
  for (Connection& c : peers.connections) {
    if (c.fd >= 0) ::close(c.fd);
  }
  peers = Peers{};
}

// Collective. The segments' names are removed as soon as every process has mapped what it needs
// (the allgather is the barrier), so a crash later leaves nothing behind in /dev/shm; a member
// killed before that leaves its name to those on its host that outlive it (and, killed with
// them, to the launcher's teardown and the next run's sweep: leftovers.h).
Status connect_peers(World& world, const ProcLinkOptions& options, Peers& peers) {
  const ProcLinks links = options.links;
  const int rank = world.rank();
  const auto size = static_cast<std::size_t>(world.size());
  char hostname[256] = {};
  ::gethostname(hostname, sizeof hostname - 1);
  peers.segments.assign(size, nullptr);
  peers.connections.assign(size, Connection{});
  sweep_leftovers();
  SegmentNames names_to_remove;
  std::byte* own = nullptr;
  Result<std::string> kept = create_segment(world.job(), rank, kSegmentBytes, own, "proc");
  if (kept) names_to_remove.add(*kept);
  const std::vector<std::string> all =
      allgather_text(world, std::string(hostname) + "\n" + (kept ? *kept : "!" + kept.error().message));
  std::vector<std::string> errors(size), names(size);
  for (std::size_t q = 0; q < size; ++q) {
    const std::size_t newline = all[q].find('\n');
    peers.hosts.push_back(all[q].substr(0, newline));
    names[q] = all[q].substr(newline + 1);
    if (names[q].starts_with("!")) errors[q] = names[q].substr(1);
  }
  names_to_remove.add_others_on(hostname, peers.hosts, names, rank);
  peers.segments[static_cast<std::size_t>(rank)] = own;
  std::string error = first_error(errors);
  for (std::size_t q = 0; q < size && error.empty() && links == ProcLinks::Shm; ++q) {
    if (peers.hosts[q] != peers.hosts[0]) {
      error = "transport=shm: rank 0 runs on " + peers.hosts[0] + " and rank " + std::to_string(q) + " on " +
              peers.hosts[q] + "; use transport=auto or tcp";
    }
  }
  std::string mapping;
  for (std::size_t q = 0; q < size && error.empty() && links != ProcLinks::Tcp; ++q) {
    if (q == static_cast<std::size_t>(rank) || peers.hosts[q] != hostname || !mapping.empty()) continue;
    peers.segments[q] = map_segment(names[q], kSegmentBytes, mapping);
  }
  const std::string mapped = first_error(allgather_text(world, mapping));
  names_to_remove.remove_all();
  if (error.empty()) error = mapped;
  std::vector<bool> need(size, false);
  bool any = false;
  for (std::size_t q = 0; q < size; ++q) {
    need[q] = q != static_cast<std::size_t>(rank) && (links == ProcLinks::Tcp || peers.hosts[q] != hostname);
    any = any || (links == ProcLinks::Tcp && size > 1) || peers.hosts[q] != peers.hosts[0];
  }
  if (error.empty() && any) error = open_connections(world, need, peers);
  if (error.empty() && links == ProcLinks::Ib) {
    Result<std::unique_ptr<RdmaLinks>> rdma = RdmaLinks::connect(world, own, kSegmentBytes, options);
    if (rdma) peers.rdma = std::move(*rdma);
    else error = rdma.error().text();
  }
  if (error.empty()) return Ok{};
  close_peers(peers);
  return Error{"proc", error};
}

ssize_t read_part(Connection& c, std::string& error) {
  const bool in_header = c.header_got < sizeof c.header;
  char* at = in_header ? reinterpret_cast<char*>(&c.header) + c.header_got
                       : reinterpret_cast<char*>(c.payload.data()) + c.payload_got;
  const std::size_t want = in_header ? sizeof c.header - c.header_got : c.header.piece.bytes - c.payload_got;
  if (want == 0) return 0;
  for (;;) {
    const ssize_t n = ::recv(c.fd, at, want, MSG_DONTWAIT);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return -1;
    if (n <= 0) {
      error = n == 0 ? "rank " + std::to_string(c.peer) + " closed its connection"
                     : system_error("reading from rank " + std::to_string(c.peer));
      ::close(c.fd);
      c.fd = -1;
      return -1;
    }
    return n;
  }
}

bool advance_frame(Connection& c, std::vector<std::vector<std::byte>>& spare, std::size_t bytes, std::string& error) {
  if (c.header_got == sizeof c.header) {
    c.payload_got += bytes;
    return true;
  }
  c.header_got += bytes;
  if (c.header_got < sizeof c.header) return true;
  if (c.header.piece.bytes > kProcSlotBytes) {
    error = "a frame of " + std::to_string(c.header.piece.bytes) + " bytes from rank " + std::to_string(c.peer);
    return false;
  }
  if (spare.empty()) spare.emplace_back();
  c.payload = std::move(spare.back());
  spare.pop_back();
  c.payload.resize(c.header.piece.bytes);
  c.payload_got = 0;
  return true;
}

bool write_some(Connection& c, std::string& error) {
  bool progressed = false;
  while (c.out_sent < c.out.size()) {
    const ssize_t n = ::send(c.fd, c.out.data() + c.out_sent, c.out.size() - c.out_sent, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
    if (n < 0) {
      error = system_error("sending to rank " + std::to_string(c.peer));
      break;
    }
    c.out_sent += static_cast<std::size_t>(n);
    c.written += static_cast<std::uint64_t>(n);
    progressed = true;
  }
  return progressed;
}

void append_frame(Connection& c, const FrameHeader& header, const std::byte* data) {
  if (c.out_sent == c.out.size()) {
    c.out.clear();
    c.out_sent = 0;
  } else if (c.out_sent > kTcpWindow) {
    c.out.erase(c.out.begin(), c.out.begin() + static_cast<std::ptrdiff_t>(c.out_sent));
    c.out_sent = 0;
  }
  const auto* head = reinterpret_cast<const std::byte*>(&header);
  c.out.insert(c.out.end(), head, head + sizeof header);
  if (header.piece.bytes > 0) c.out.insert(c.out.end(), data, data + header.piece.bytes);
  c.appended += sizeof header + header.piece.bytes;
}

}  // namespace collcheck::proc

namespace collcheck {

std::string_view name(ProcLinks links) {
  switch (links) {
    case ProcLinks::Shm: return "shm";
    case ProcLinks::Tcp: return "tcp";
    case ProcLinks::Ib: return "ib";
    default: return "auto";
  }
}

Result<ProcLinks> parse_proc_links(std::string_view text) {
  if (text == "auto") return ProcLinks::Auto;
  if (text == "shm") return ProcLinks::Shm;
  if (text == "tcp") return ProcLinks::Tcp;
  return Error{"transport", "'" + std::string(text) + "': must be auto, shm or tcp"};
}

}  // namespace collcheck
