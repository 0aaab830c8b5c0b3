// The proc transport's executor: a shared-memory FIFO per (from, to, channel) between processes
// of one host, TCP frames between hosts, and one polling progress engine per process.
#include "impls/proc_transport.h"

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <deque>
#include <limits>
#include <map>
#include <sstream>
#include <vector>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include "impls/reduce_op.h"

namespace collcheck {
namespace {

// ---------------------------------------------------------------------------------------------
// The links between processes, set up once per transport: every process's segment (shared
// memory, or a file under /tmp where shm_open fails), mapped by the processes of its host, and
// TCP connections between processes that do not share memory (or all of them, transport=tcp).

struct Key {
  int from = 0, to = 0, channel = 0;
  auto operator<=>(const Key&) const = default;
};

// A TCP frame carries one piece of a message. `epoch` counts cases, so that a frame of a case
// that ended in an error, still on the wire when the next case begins, is recognised and dropped.
struct FrameHeader {
  std::uint32_t epoch;
  std::int32_t from, to, channel;
  std::uint64_t sequence;
  std::uint64_t bytes;
};
static_assert(sizeof(FrameHeader) == 32);

constexpr std::size_t kTcpWindow = std::size_t{4} << 20;  // bytes queued per socket, at most

struct Connection {
  int fd = -1;
  int peer = -1;
  std::vector<std::byte> out;  // whole frames; the socket takes them as it can
  std::size_t out_sent = 0;
  FrameHeader header{};
  std::size_t header_got = 0;
  std::vector<std::byte> payload;
  std::size_t payload_got = 0;
};

struct Piece {
  std::uint64_t sequence;
  std::vector<std::byte> data;
};

struct Peers {
  std::vector<std::string> hosts;       // per rank
  std::vector<std::byte*> segments;     // per rank: its segment, where this process mapped it
  std::vector<Connection> connections;  // per rank; fd -1: none
};

constexpr std::size_t kSegmentBytes = std::size_t{16} << 20;

std::string system_error(const std::string& what) { return what + ": " + std::strerror(errno); }

// Creates this process's segment; returns its name ('s' shm or 'f' file, then the path).
Result<std::string> create_segment(const std::string& job, int rank, std::byte*& base) {
  std::string name = "/collcheck-";
  for (char c : job) name += std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '.' ? c : '_';
  name += "-" + std::to_string(rank);
  int fd = ::shm_open(name.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
  std::string kept = "s" + name;
  if (fd < 0) {
    name = "/tmp" + name;
    kept = "f" + name;
    fd = ::open(name.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
    if (fd < 0) return Error{"proc", system_error("cannot create a segment (shm_open, then " + name + ")")};
  }
  void* mapped = MAP_FAILED;
  if (::ftruncate(fd, static_cast<off_t>(kSegmentBytes)) == 0) {
    mapped = ::mmap(nullptr, kSegmentBytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  }
  const std::string error = system_error("cannot size or map " + name);
  ::close(fd);
  if (mapped == MAP_FAILED) {
    kept[0] == 's' ? ::shm_unlink(name.c_str()) : ::unlink(name.c_str());
    return Error{"proc", error};
  }
  base = static_cast<std::byte*>(mapped);
  return kept;
}

std::byte* map_segment(const std::string& kept, std::string& error) {
  const std::string path = kept.substr(1);
  const int fd = kept[0] == 's' ? ::shm_open(path.c_str(), O_RDWR, 0) : ::open(path.c_str(), O_RDWR);
  if (fd < 0) {
    error = system_error("cannot open " + path);
    return nullptr;
  }
  void* mapped = ::mmap(nullptr, kSegmentBytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (mapped == MAP_FAILED) error = system_error("cannot map " + path);
  ::close(fd);
  return mapped == MAP_FAILED ? nullptr : static_cast<std::byte*>(mapped);
}

void remove_segment(const std::string& kept) {
  const std::string path = kept.substr(1);
  kept[0] == 's' ? ::shm_unlink(path.c_str()) : ::unlink(path.c_str());
}

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

// Every process listens; each connects to the lower ranks it needs (the kernel completes those
// without waiting for accept) and then accepts the higher ones, so no order can deadlock.
std::string open_connections(World& world, const std::vector<bool>& need, Peers& peers) {
  const int rank = world.rank();
  std::string port, error;
  const int listener = listen_any(port, error);
  const std::vector<std::string> ports = allgather_text(world, error.empty() ? port : "!" + error);
  for (std::size_t q = 0; q < ports.size() && error.empty(); ++q) {
    if (!ports[q].empty() && ports[q][0] == '!') error = "rank " + std::to_string(q) + ": " + ports[q].substr(1);
  }
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
    if (fd < 0 || !transfer_all(fd, &me, sizeof me, true)) error = system_error("cannot connect to rank " + std::to_string(q));
    peers.connections[static_cast<std::size_t>(q)].fd = fd;
  }
  for (std::size_t accepted = 0; accepted < expected && error.empty(); ++accepted) {
    pollfd waiting{listener, POLLIN, 0};
    const int fd = ::poll(&waiting, 1, 60000) == 1 ? ::accept(listener, nullptr, nullptr) : -1;
    std::int32_t peer = -1;
    if (fd < 0 || !transfer_all(fd, &peer, sizeof peer, false) || peer <= rank || peer >= world.size()) {
      error = "no connection from a higher rank within 60 s";
    } else {
      peers.connections[static_cast<std::size_t>(peer)].fd = fd;
    }
  }
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

void close_peers(Peers& peers) {
  for (std::byte* segment : peers.segments) {
    if (segment != nullptr) ::munmap(segment, kSegmentBytes);
  }
  for (Connection& c : peers.connections) {
    if (c.fd >= 0) ::close(c.fd);
  }
  peers = Peers{};
}

// Collective. The segment's name is removed as soon as every process has mapped what it needs
// (the allgather is the barrier), so a crash later leaves nothing behind in /dev/shm.
Status connect_peers(World& world, ProcLinks links, Peers& peers) {
  const int rank = world.rank();
  const auto size = static_cast<std::size_t>(world.size());
  char hostname[256] = {};
  ::gethostname(hostname, sizeof hostname - 1);
  peers.segments.assign(size, nullptr);
  peers.connections.assign(size, Connection{});
  std::byte* own = nullptr;
  Result<std::string> kept = create_segment(world.job(), rank, own);
  const std::vector<std::string> all =
      allgather_text(world, std::string(hostname) + "\n" + (kept ? *kept : "!" + kept.error().message));
  std::vector<std::string> errors(size), names(size);
  for (std::size_t q = 0; q < size; ++q) {
    const std::size_t newline = all[q].find('\n');
    peers.hosts.push_back(all[q].substr(0, newline));
    names[q] = all[q].substr(newline + 1);
    if (names[q].starts_with("!")) errors[q] = names[q].substr(1);
  }
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
    peers.segments[q] = map_segment(names[q], mapping);
  }
  const std::string mapped = first_error(allgather_text(world, mapping));
  if (kept) remove_segment(*kept);
  if (error.empty()) error = mapped;
  std::vector<bool> need(size, false);
  bool any = false;
  for (std::size_t q = 0; q < size; ++q) {
    need[q] = q != static_cast<std::size_t>(rank) && (links == ProcLinks::Tcp || peers.hosts[q] != hostname);
    any = any || (links == ProcLinks::Tcp && size > 1) || peers.hosts[q] != peers.hosts[0];
  }
  if (error.empty() && any) error = open_connections(world, need, peers);
  if (error.empty()) return Ok{};
  close_peers(peers);
  return Error{"proc", error};
}

template <typename Deliver>
bool read_frames(Connection& c, std::vector<std::vector<std::byte>>& spare, std::string& error, Deliver deliver) {
  bool progressed = false;
  for (;;) {
    const bool in_header = c.header_got < sizeof c.header;
    char* at = in_header ? reinterpret_cast<char*>(&c.header) + c.header_got
                         : reinterpret_cast<char*>(c.payload.data()) + c.payload_got;
    const std::size_t want = in_header ? sizeof c.header - c.header_got : c.header.bytes - c.payload_got;
    ssize_t n = 0;
    if (want > 0) {
      n = ::recv(c.fd, at, want, MSG_DONTWAIT);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return progressed;
      if (n <= 0) {
        error = n == 0 ? "rank " + std::to_string(c.peer) + " closed its connection" : system_error("reading from rank " + std::to_string(c.peer));
        ::close(c.fd);
        c.fd = -1;
        return progressed;
      }
      progressed = true;
    }
    if (in_header) {
      c.header_got += static_cast<std::size_t>(n);
      if (c.header_got < sizeof c.header) continue;
      if (c.header.bytes > kProcSlotBytes) {
        error = "a frame of " + std::to_string(c.header.bytes) + " bytes from rank " + std::to_string(c.peer);
        return progressed;
      }
      if (spare.empty()) spare.emplace_back();
      c.payload = std::move(spare.back());
      spare.pop_back();
      c.payload.resize(c.header.bytes);
      c.payload_got = 0;
    } else {
      c.payload_got += static_cast<std::size_t>(n);
    }
    if (c.header_got == sizeof c.header && c.payload_got == c.header.bytes) {
      deliver(c.header, std::move(c.payload));
      c.header_got = 0;
      c.payload = {};
    }
  }
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
  c.out.insert(c.out.end(), data, data + header.bytes);
}


// ---------------------------------------------------------------------------------------------
// Native reduction. reduce_elements decodes every element through double, which is exact but
// about twenty times slower than memory; for float32 and float64 the native operation gives the
// same bits: a sum or product of two floats computed in double and rounded once equals the
// float operation (53 >= 2*24+2, so double rounding is innocuous), and min and max compare
// exactly. Only a NaN's payload depends on how the contract computes it, so an element whose
// result is NaN is computed again by reduce_elements itself. Blocks of L1 size keep the inputs
// intact until then, since `out` may be `a` or `b`.

template <typename T>
void reduce_native(DType dtype, RedOp op, const std::byte* a, const std::byte* b, std::byte* out, std::size_t count) {
  constexpr std::size_t kBlock = 2048;
  T block[kBlock];
  auto load = [](const std::byte* p, std::size_t i) {
    T v;
    std::memcpy(&v, p + i * sizeof(T), sizeof(T));
    return v;
  };
  const T nan = std::numeric_limits<T>::quiet_NaN();
  for (std::size_t first = 0; first < count; first += kBlock) {
    const std::size_t n = std::min(kBlock, count - first);
    const std::byte* x = a + first * sizeof(T);
    const std::byte* y = b + first * sizeof(T);
    bool any_nan = false;
    auto run = [&](auto combine) {
      for (std::size_t i = 0; i < n; ++i) {
        block[i] = combine(load(x, i), load(y, i));
        any_nan |= block[i] != block[i];
      }
    };
    switch (op) {
      case RedOp::Prod: run([](T p, T q) { return p * q; }); break;
      case RedOp::Min: run([nan](T p, T q) { return p != p || q != q ? nan : (q < p ? q : p); }); break;
      case RedOp::Max: run([nan](T p, T q) { return p != p || q != q ? nan : (q > p ? q : p); }); break;
      default: run([](T p, T q) { return p + q; }); break;
    }
    for (std::size_t i = 0; any_nan && i < n; ++i) {
      if (block[i] != block[i]) {
        reduce_elements(dtype, op, x + i * sizeof(T), y + i * sizeof(T), reinterpret_cast<std::byte*>(&block[i]), 1);
      }
    }
    std::memcpy(out + first * sizeof(T), block, n * sizeof(T));
  }
}

// ---------------------------------------------------------------------------------------------
// The FIFOs. A receiver's segment holds one FIFO per message stream into the participants it
// hosts. Every process computes the whole schedule, so every sender knows where the FIFOs of
// every receiver lie without asking: the streams into a receiver, in (from, to, channel) order,
// share its segment equally. Single producer (the sender's process), single consumer: `tail`
// is written only by the producer and `head` only by the consumer, on their own cache lines,
// so a piece costs two atomic stores and no per-element synchronisation.

constexpr std::size_t kSlotHeader = 64;  // keeps payloads cache-line aligned

struct FifoControl {
  alignas(64) std::atomic<std::uint64_t> tail;
  alignas(64) std::atomic<std::uint64_t> head;
};

struct SlotHeader {
  std::uint64_t sequence;
  std::uint64_t bytes;
};

struct FifoShape {
  std::size_t slot_bytes = kProcSlotBytes;
  std::size_t slots = kProcSlots;
  std::size_t stride() const { return kSlotHeader + slot_bytes; }
  std::size_t bytes() const { return sizeof(FifoControl) + slots * stride(); }
};

// The largest FIFOs that let `fifos` of them share one segment: fewer slots first (down to
// four), then smaller slots (down to 4 KiB), then two slots.
FifoShape fifo_shape(std::size_t fifos) {
  FifoShape shape;
  if (fifos == 0) return shape;
  const std::size_t room = kSegmentBytes / fifos;
  while (shape.bytes() > room && shape.slots > 4) shape.slots /= 2;
  while (shape.bytes() > room && shape.slot_bytes > 4096) shape.slot_bytes /= 2;
  while (shape.bytes() > room && shape.slots > 2) shape.slots /= 2;
  return shape;
}

struct Fifo {
  FifoControl* control = nullptr;
  std::byte* slots = nullptr;
  FifoShape shape;
  std::byte* slot(std::uint64_t index) const { return slots + (index % shape.slots) * shape.stride(); }
};

Fifo fifo_at(std::byte* segment, std::size_t index, FifoShape shape) {
  std::byte* base = segment + index * shape.bytes();
  return Fifo{reinterpret_cast<FifoControl*>(base), base + sizeof(FifoControl), shape};
}

// ---------------------------------------------------------------------------------------------
// Messages in flight, seen from the sender. A send completes when posted, but its bytes are
// not copied then: the message keeps pointing at the sender's buffer (`lazy`) and the progress
// loop copies it straight into the receiver's FIFO as slots free up. Only when a later step is
// about to write over the range that is still unsent, or the call ends (the caller refills
// inputs and finishes avg), is the rest copied into a private buffer. A schedule therefore never
// deadlocks on the bounded FIFOs, and a ring moves each byte with one copy in and one copy or
// reduction out.

struct Outgoing {
  std::uint64_t sequence = 0;
  const std::byte* source = nullptr;  // lazy: the sender's buffer; null once staged
  std::vector<std::byte> owned;       // staged: bytes [owned_base, bytes)
  std::size_t owned_base = 0;
  std::size_t bytes = 0;
  std::size_t pushed = 0;
  bool started = false;               // a zero-byte message still travels as one empty piece
  double not_before = 0;              // a hook's delay

  bool lazy() const { return source != nullptr; }
  const std::byte* at(std::size_t offset) const { return lazy() ? source + offset : owned.data() + (offset - owned_base); }
  bool done() const { return started && pushed == bytes; }
  void stage() {
    owned.assign(source + pushed, source + bytes);
    owned_base = pushed;
    source = nullptr;
  }
};

struct Outbound {
  Key key;
  Fifo fifo;                       // shm: in the receiver's segment
  Connection* connection = nullptr;  // tcp
  std::uint64_t per_call = 0;      // messages on this stream per call
  std::uint64_t next = 0;          // the sequence number to deliver next
  std::uint64_t broken_from = std::numeric_limits<std::uint64_t>::max();  // a hook dropped it
  std::uint64_t tail = 0, head_seen = 0;
  std::deque<Outgoing> queue;      // posted, by sequence
};

struct Inbound {
  Key key;
  Fifo fifo;                // shm: in this process's segment
  bool tcp = false;
  std::deque<Piece> pieces;  // tcp: frames read, not yet taken
  std::uint64_t per_call = 0;
  std::uint64_t consumed = 0;  // messages fully taken
  std::uint64_t head = 0, tail_seen = 0;
};

// A receive or send step's stream (index into inbound or outbound) and its ordinal there: the
// k-th send step (in step order) from a to b on channel c is message k of the call on that
// stream, and the k-th receive step takes it, as the schedule's validator counts them.
struct StepLink {
  int link = -1;
  std::uint64_t ordinal = 0;
};

struct Stream {
  std::vector<int> steps;
  std::size_t next = 0;
  std::size_t received = 0;  // bytes of the current receive taken so far
  bool started = false;
};

struct Hosted {
  int participant = 0;
  std::vector<Stream> streams;
  std::vector<StepLink> links;  // per step
  std::vector<std::uint8_t> done;
  std::size_t remaining = 0;
  ProcBuffers buffers;
};

enum class Taken { Nothing, Some, All };

std::string seconds_text(double seconds) {
  std::ostringstream out;
  out << seconds;
  return out.str();
}

}  // namespace

std::string_view name(ProcLinks links) {
  switch (links) {
    case ProcLinks::Shm: return "shm";
    case ProcLinks::Tcp: return "tcp";
    default: return "auto";
  }
}

Result<ProcLinks> parse_proc_links(std::string_view text) {
  if (text == "auto") return ProcLinks::Auto;
  if (text == "shm") return ProcLinks::Shm;
  if (text == "tcp") return ProcLinks::Tcp;
  return Error{"transport", "'" + std::string(text) + "': must be auto, shm or tcp"};
}

void reduce_elements_fast(DType dtype, RedOp op, const std::byte* a, const std::byte* b, std::byte* out,
                          std::size_t count) {
  if (dtype == DType::Float32) return reduce_native<float>(dtype, op, a, b, out, count);
  if (dtype == DType::Float64) return reduce_native<double>(dtype, op, a, b, out, count);
  reduce_elements(dtype, op, a, b, out, count);
}

struct ProcTransport::State {
  State(World& w, ProcLinks l) : world(w), links(l), rank(w.rank()), size(w.size()) {}
  ~State();

  World& world;
  ProcLinks links;
  int rank, size;
  Peers peers;  // hosts, segments and connections, from connect()
  std::uint32_t epoch = 0;

  // The case in progress.
  const Schedule* schedule = nullptr;
  ProcRunOptions options;
  std::size_t element = 1;
  std::vector<Outbound> outbound;
  std::vector<Inbound> inbound;
  std::map<Key, int> inbound_index;
  std::vector<Hosted> hosted;
  std::size_t lazy = 0;  // lazy messages in the outbound queues
  std::uint64_t call = 0;
  std::string failure;   // set by a step or a link; ends the run
  std::vector<std::vector<std::byte>> spare;  // tcp payload buffers for reuse

  int host(int participant) const { return proc_host(participant, schedule->nranks()); }
  bool via_shm(const Key& key) const {
    const int from = host(key.from), to = host(key.to);
    return from == to || (links != ProcLinks::Tcp && peers.hosts[static_cast<std::size_t>(from)] ==
                                                          peers.hosts[static_cast<std::size_t>(to)]);
  }
  double now() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - options.start).count();
  }
  std::string participant_name(int p) const {
    return p < schedule->nranks() ? "rank " + std::to_string(p) : "switch " + std::to_string(p - schedule->nranks());
  }

  Status plan(const Schedule&);
  void plan_hosted();
  void reset_inbound();

  std::byte* address(const Hosted& h, const Range& range) const {
    const ProcBuffers& b = h.buffers;
    std::byte* base = range.buffer == BufferKind::Input ? b.input : range.buffer == BufferKind::Output ? b.output : b.scratch;
    return base == nullptr ? nullptr : base + range.offset * element;
  }
  void reduce(const std::byte* a, const std::byte* b, std::byte* out, std::size_t bytes) const {
    auto apply = options.reduction.reduce ? options.reduction.reduce : &reduce_elements_fast;
    apply(schedule->shape.dtype, schedule->shape.op, a, b, out, bytes / element);
  }

  void protect(const std::byte* at, std::size_t bytes);
  void settle();
  void post(const Hosted& h, const Step& step, const StepLink& link);
  Taken receive(Hosted& h, const Step& step, const StepLink& link, Stream& stream);
  bool advance(Hosted& h, Stream& stream);
  bool pop_finished(Outbound& o);
  bool drain_shm(Outbound& o, double now);
  bool drain_tcp(Outbound& o, double now);
  bool pump();
  void deliver(const FrameHeader& header, std::vector<std::byte> payload);
  bool outbound_empty() const;
  std::string stuck(double deadline) const;
};

ProcTransport::State::~State() { close_peers(peers); }

ProcTransport::ProcTransport(std::unique_ptr<State> state) : state_(std::move(state)) {}
ProcTransport::~ProcTransport() = default;

Result<std::unique_ptr<ProcTransport>> ProcTransport::connect(World& world, ProcLinks links) {
  auto state = std::make_unique<State>(world, links);
  Status connected = connect_peers(world, links, state->peers);
  if (!connected) return connected.error();
  return std::unique_ptr<ProcTransport>(new ProcTransport(std::move(state)));
}

std::string ProcTransport::links() const {
  const bool tcp = std::any_of(state_->peers.connections.begin(), state_->peers.connections.end(),
                               [](const Connection& c) { return c.fd >= 0; });
  return tcp ? (state_->size > 1 && state_->links != ProcLinks::Tcp ? "shm+tcp" : "tcp") : "shm";
}

// Every stream of the schedule, each receiver's FIFO layout, and this process's ends of them.
// Everything here depends only on the schedule, so every process decides the same (an error
// included) before anyone waits at the barrier.
Status ProcTransport::State::plan(const Schedule& s) {
  schedule = &s;
  element = size_of(s.shape.dtype);
  std::map<Key, std::uint64_t> per_call;
  for (int p = 0; p < s.nparticipants(); ++p) {
    for (const Step& step : s.participants[static_cast<std::size_t>(p)].steps) {
      if (step.sends()) ++per_call[Key{p, step.peer, step.channel}];
    }
  }
  std::vector<std::size_t> fifos(static_cast<std::size_t>(size), 0);
  std::map<Key, std::size_t> fifo_index;
  for (const auto& entry : per_call) {
    if (via_shm(entry.first)) fifo_index[entry.first] = fifos[static_cast<std::size_t>(host(entry.first.to))]++;
  }
  for (int r = 0; r < size; ++r) {
    const std::size_t n = fifos[static_cast<std::size_t>(r)];
    if (n * fifo_shape(n).bytes() > kSegmentBytes) {
      return Error{"schedule", "rank " + std::to_string(r) + " receives on " + std::to_string(n) +
                                   " streams; the proc transport's segment holds at most " +
                                   std::to_string(kSegmentBytes / fifo_shape(1 << 20).bytes())};
    }
  }
  outbound.clear();
  inbound.clear();
  inbound_index.clear();
  for (const auto& [key, count] : per_call) {
    const int to = host(key.to);
    const bool shm = via_shm(key);
    const FifoShape shape = fifo_shape(fifos[static_cast<std::size_t>(to)]);
    if (host(key.from) == rank) {
      Outbound o;
      o.key = key;
      o.per_call = count;
      if (shm) o.fifo = fifo_at(peers.segments[static_cast<std::size_t>(to)], fifo_index[key], shape);
      else o.connection = &peers.connections[static_cast<std::size_t>(to)];
      outbound.push_back(std::move(o));
    }
    if (to == rank) {
      Inbound in;
      in.key = key;
      in.per_call = count;
      in.tcp = !shm;
      if (shm) in.fifo = fifo_at(peers.segments[static_cast<std::size_t>(rank)], fifo_index[key], shape);
      inbound_index[key] = static_cast<int>(inbound.size());
      inbound.push_back(std::move(in));
    }
  }
  plan_hosted();
  return Ok{};
}

// The participants this process runs: their streams, and each step's link and ordinal.
void ProcTransport::State::plan_hosted() {
  std::map<Key, int> outbound_index;
  for (std::size_t i = 0; i < outbound.size(); ++i) outbound_index[outbound[i].key] = static_cast<int>(i);
  hosted.clear();
  for (int p = 0; p < schedule->nparticipants(); ++p) {
    if (host(p) != rank) continue;
    const std::vector<Step>& steps = schedule->participants[static_cast<std::size_t>(p)].steps;
    Hosted h;
    h.participant = p;
    h.links.resize(steps.size());
    std::map<int, std::vector<int>> by_stream;
    std::map<Key, std::uint64_t> sends, receives;
    for (int k = 0; k < static_cast<int>(steps.size()); ++k) {
      const Step& step = steps[static_cast<std::size_t>(k)];
      by_stream[step.stream].push_back(k);
      StepLink& link = h.links[static_cast<std::size_t>(k)];
      if (step.sends()) {
        const Key key{p, step.peer, step.channel};
        link = StepLink{outbound_index.at(key), sends[key]++};
      } else if (step.receives()) {
        const Key key{step.peer, p, step.channel};
        link = StepLink{inbound_index.at(key), receives[key]++};
      }
    }
    for (auto& entry : by_stream) h.streams.push_back(Stream{std::move(entry.second)});
    hosted.push_back(std::move(h));
  }
}

void ProcTransport::State::reset_inbound() {
  for (Inbound& in : inbound) {
    if (in.tcp) continue;
    in.fifo.control->tail.store(0, std::memory_order_relaxed);
    in.fifo.control->head.store(0, std::memory_order_relaxed);
  }
}

// Two barriers: the first makes sure no process still writes into any FIFO under the last
// case's layout (a run that ended in an error leaves its peers sending until their deadline);
// the second that every inbound FIFO is empty before anyone sends under the new one. TCP frames
// of an earlier case still on the wire carry an older epoch and are dropped when read.
Status ProcTransport::begin(const Schedule& schedule, const ProcRunOptions& options) {
  State& s = *state_;
  s.options = options;
  s.call = 0;
  s.lazy = 0;
  s.failure.clear();
  ++s.epoch;
  Status planned = s.plan(schedule);
  if (!planned) return planned;
  s.world.barrier();
  s.reset_inbound();
  s.world.barrier();
  return Ok{};
}

// Before a step writes [at, at + bytes): the unsent rest of every lazy message it overlaps is
// copied aside first, so that the message carries the bytes it had when it was posted.
void ProcTransport::State::protect(const std::byte* at, std::size_t bytes) {
  if (lazy == 0 || bytes == 0) return;
  for (Outbound& o : outbound) {
    for (Outgoing& m : o.queue) {
      if (m.lazy() && at < m.source + m.bytes && m.source + m.pushed < at + bytes) {
        m.stage();
        --lazy;
      }
    }
  }
}

void ProcTransport::State::settle() {
  for (Outbound& o : outbound) {
    for (Outgoing& m : o.queue) {
      if (m.lazy()) m.stage();
    }
  }
  lazy = 0;
}

void ProcTransport::State::post(const Hosted& h, const Step& step, const StepLink& link) {
  Outbound& o = outbound[static_cast<std::size_t>(link.link)];
  Outgoing m;
  m.sequence = call * o.per_call + link.ordinal;
  if (m.sequence >= o.broken_from) return;  // behind a dropped message: never delivered
  m.bytes = step.from.count * element;
  m.source = address(h, step.from);
  if (options.hook != nullptr) {
    // The hook may change the payload, so it sees a copy, taken now.
    m.stage();
    const double time = now();
    const Message message{o.key.from, o.key.to, o.key.channel, m.sequence, m.bytes, time};
    const SendDecision decision = options.hook->on_send(message, m.owned);
    if (decision.drop) {
      o.broken_from = m.sequence;
      while (!o.queue.empty() && o.queue.back().sequence > m.sequence) {
        if (o.queue.back().lazy()) --lazy;
        o.queue.pop_back();
      }
      return;
    }
    m.not_before = time + decision.delay;
  } else {
    ++lazy;
  }
  auto place = o.queue.end();
  while (place != o.queue.begin() && std::prev(place)->sequence > m.sequence) --place;
  o.queue.insert(place, std::move(m));
}

Taken ProcTransport::State::receive(Hosted& h, const Step& step, const StepLink& link, Stream& stream) {
  Inbound& in = inbound[static_cast<std::size_t>(link.link)];
  const std::uint64_t sequence = call * in.per_call + link.ordinal;
  if (in.consumed != sequence) return Taken::Nothing;  // an earlier message is not yet taken
  const std::size_t bytes = step.to.count * element;
  std::byte* to = address(h, step.to);
  const std::byte* from = step.kind == StepKind::RecvReduce ? address(h, step.from) : nullptr;
  if (!stream.started) protect(to, bytes);
  Taken taken = Taken::Nothing;
  for (;;) {
    const std::byte* data = nullptr;
    SlotHeader piece{};
    if (in.tcp) {
      if (in.pieces.empty()) return taken;
      piece = SlotHeader{in.pieces.front().sequence, in.pieces.front().data.size()};
      data = in.pieces.front().data.data();
    } else {
      if (in.head == in.tail_seen) in.tail_seen = in.fifo.control->tail.load(std::memory_order_acquire);
      if (in.head == in.tail_seen) return taken;
      const std::byte* slot = in.fifo.slot(in.head);
      std::memcpy(&piece, slot, sizeof piece);
      data = slot + kSlotHeader;
    }
    if (piece.sequence != sequence || stream.received + piece.bytes > bytes) {
      failure = participant_name(h.participant) + ": message " + std::to_string(piece.sequence) + " (" +
                std::to_string(piece.bytes) + " bytes) from " + participant_name(in.key.from) + " where message " +
                std::to_string(sequence) + " of " + std::to_string(bytes) + " bytes was due";
      return taken;
    }
    if (piece.bytes > 0) {
      if (from == nullptr) std::memcpy(to + stream.received, data, piece.bytes);
      else reduce(from + stream.received, data, to + stream.received, piece.bytes);
    }
    stream.received += piece.bytes;
    stream.started = true;
    taken = Taken::Some;
    if (in.tcp) {
      spare.push_back(std::move(in.pieces.front().data));
      in.pieces.pop_front();
    } else {
      in.fifo.control->head.store(++in.head, std::memory_order_release);
    }
    if (stream.received == bytes) {
      ++in.consumed;
      return Taken::All;
    }
  }
}

// Runs the stream's steps until one has to wait; true when anything moved.
bool ProcTransport::State::advance(Hosted& h, Stream& stream) {
  const std::vector<Step>& steps = schedule->participants[static_cast<std::size_t>(h.participant)].steps;
  bool progressed = false;
  while (stream.next < stream.steps.size() && failure.empty()) {
    const int k = stream.steps[stream.next];
    const Step& step = steps[static_cast<std::size_t>(k)];
    for (int earlier : step.after) {
      if (h.done[static_cast<std::size_t>(earlier)] == 0) return progressed;
    }
    const StepLink& link = h.links[static_cast<std::size_t>(k)];
    const std::size_t bytes = step.to.count * element;
    switch (step.kind) {
      case StepKind::Send: post(h, step, link); break;
      case StepKind::Copy:
        protect(address(h, step.to), bytes);
        if (bytes > 0) std::memmove(address(h, step.to), address(h, step.from), bytes);
        break;
      case StepKind::Reduce:
        protect(address(h, step.to), bytes);
        if (bytes > 0) reduce(address(h, step.to), address(h, step.from), address(h, step.to), bytes);
        break;
      default: {
        const Taken taken = receive(h, step, link, stream);
        if (taken != Taken::All) return progressed || taken == Taken::Some;
      }
    }
    h.done[static_cast<std::size_t>(k)] = 1;
    --h.remaining;
    ++stream.next;
    stream.received = 0;
    stream.started = false;
    progressed = true;
  }
  return progressed;
}

bool ProcTransport::State::pop_finished(Outbound& o) {
  Outgoing& m = o.queue.front();
  if (!m.done()) return false;
  if (m.lazy()) --lazy;
  o.queue.pop_front();
  ++o.next;
  return true;
}

// Pushes the stream's next messages, in sequence, into the receiver's FIFO while slots are free.
bool ProcTransport::State::drain_shm(Outbound& o, double now) {
  bool progressed = false;
  while (!o.queue.empty()) {
    Outgoing& m = o.queue.front();
    if (m.sequence != o.next || m.sequence >= o.broken_from || m.not_before > now) break;
    while (!m.done()) {
      if (o.tail - o.head_seen >= o.fifo.shape.slots) {
        o.head_seen = o.fifo.control->head.load(std::memory_order_acquire);
        if (o.tail - o.head_seen >= o.fifo.shape.slots) return progressed;
      }
      std::byte* slot = o.fifo.slot(o.tail);
      const std::size_t n = std::min(o.fifo.shape.slot_bytes, m.bytes - m.pushed);
      const SlotHeader header{m.sequence, n};
      std::memcpy(slot, &header, sizeof header);
      if (n > 0) std::memcpy(slot + kSlotHeader, m.at(m.pushed), n);
      o.fifo.control->tail.store(++o.tail, std::memory_order_release);
      m.pushed += n;
      m.started = true;
      progressed = true;
    }
    pop_finished(o);
  }
  return progressed;
}

// The same over TCP: frames of at most one slot, appended to the connection's bounded buffer.
bool ProcTransport::State::drain_tcp(Outbound& o, double now) {
  bool progressed = false;
  Connection& c = *o.connection;
  while (!o.queue.empty()) {
    Outgoing& m = o.queue.front();
    if (m.sequence != o.next || m.sequence >= o.broken_from || m.not_before > now) break;
    while (!m.done()) {
      if (c.out.size() - c.out_sent >= kTcpWindow) return progressed;
      const std::size_t n = std::min(kProcSlotBytes, m.bytes - m.pushed);
      const FrameHeader header{epoch, o.key.from, o.key.to, o.key.channel, m.sequence, n};
      append_frame(c, header, m.at(m.pushed));
      m.pushed += n;
      m.started = true;
      progressed = true;
    }
    pop_finished(o);
  }
  return progressed;
}

void ProcTransport::State::deliver(const FrameHeader& header, std::vector<std::byte> payload) {
  if (header.epoch != epoch) return;  // from a case that ended before this one began
  const auto found = inbound_index.find(Key{header.from, header.to, header.channel});
  if (found == inbound_index.end()) {
    failure = "a frame from " + participant_name(header.from) + " to " + participant_name(header.to) + " on channel " +
              std::to_string(header.channel) + ", which the schedule never sends";
    return;
  }
  inbound[static_cast<std::size_t>(found->second)].pieces.push_back(Piece{header.sequence, std::move(payload)});
}

// Moves every outbound stream and socket along; true when anything moved.
bool ProcTransport::State::pump() {
  bool progressed = false;
  const double time = now();
  for (Outbound& o : outbound) progressed |= o.connection != nullptr ? drain_tcp(o, time) : drain_shm(o, time);
  for (Connection& c : peers.connections) {
    if (c.fd < 0) continue;
    std::string error;
    progressed |= write_some(c, error);
    progressed |= read_frames(c, spare, error, [this](const FrameHeader& header, std::vector<std::byte> payload) {
      deliver(header, std::move(payload));
    });
    if (!error.empty() && failure.empty()) failure = error;
  }
  return progressed;
}

bool ProcTransport::State::outbound_empty() const {
  for (const Outbound& o : outbound) {
    if (!o.queue.empty() && o.queue.front().sequence < o.broken_from) return false;
  }
  for (const Connection& c : peers.connections) {
    if (c.fd >= 0 && c.out_sent < c.out.size()) return false;
  }
  return true;
}

// What this process waits for at the deadline: a receive that has no message, preferably.
std::string ProcTransport::State::stuck(double deadline) const {
  const std::string after = " after " + seconds_text(deadline) + " s";
  std::string first;
  for (const Hosted& h : hosted) {
    const std::vector<Step>& steps = schedule->participants[static_cast<std::size_t>(h.participant)].steps;
    for (const Stream& stream : h.streams) {
      if (stream.next == stream.steps.size()) continue;
      const int k = stream.steps[stream.next];
      const Step& step = steps[static_cast<std::size_t>(k)];
      const bool ready = std::all_of(step.after.begin(), step.after.end(),
                                     [&](int e) { return h.done[static_cast<std::size_t>(e)] != 0; });
      if (ready && step.receives()) {
        return participant_name(h.participant) + " step " + std::to_string(k) + " (" + std::string(name(step.kind)) +
               " from " + participant_name(step.peer) + ", channel " + std::to_string(step.channel) + "): no message" +
               after + " (call " + std::to_string(call) + ")";
      }
      if (first.empty()) first = describe(*schedule, h.participant, k) + ": not done" + after;
    }
  }
  return first.empty() ? "rank " + std::to_string(rank) + ": stuck" + after : first;
}

Status ProcTransport::run_call(std::span<const ProcBuffers> buffers) {
  State& s = *state_;
  for (Hosted& h : s.hosted) {
    const std::size_t steps = s.schedule->participants[static_cast<std::size_t>(h.participant)].steps.size();
    h.buffers = buffers[static_cast<std::size_t>(h.participant)];
    h.done.assign(steps, 0);
    h.remaining = steps;
    for (Stream& stream : h.streams) stream = Stream{std::move(stream.steps)};
  }
  auto unfinished = [&] {
    return std::any_of(s.hosted.begin(), s.hosted.end(), [](const Hosted& h) { return h.remaining > 0; });
  };
  while (unfinished()) {
    bool progressed = false;
    for (Hosted& h : s.hosted) {
      for (Stream& stream : h.streams) progressed |= s.advance(h, stream);
    }
    progressed |= s.pump();
    if (!s.failure.empty()) return Error{"proc", s.failure};
    if (progressed) continue;
    if (s.now() > s.options.deadline) return Error{"proc", s.stuck(s.options.deadline)};
    sched_yield();  // ranks may outnumber cores: let the peer we wait for run
  }
  s.settle();
  ++s.call;
  return Ok{};
}

Status ProcTransport::finish() {
  State& s = *state_;
  s.settle();
  while (!s.outbound_empty()) {
    const bool progressed = s.pump();
    if (!s.failure.empty()) return Error{"proc", s.failure};
    if (progressed) continue;
    if (s.now() > s.options.deadline) {
      for (const Outbound& o : s.outbound) {
        if (o.queue.empty()) continue;
        return Error{"proc", s.participant_name(o.key.from) + ": messages to " + s.participant_name(o.key.to) +
                                 " on channel " + std::to_string(o.key.channel) + " not taken after " +
                                 seconds_text(s.options.deadline) + " s"};
      }
      return Error{"proc", "rank " + std::to_string(s.rank) + ": socket data not sent after " +
                               seconds_text(s.options.deadline) + " s"};
    }
    sched_yield();
  }
  return Ok{};
}

}  // namespace collcheck
