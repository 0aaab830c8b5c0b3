// The connections of libnccl-net-collcheck.so (nccl_net_plugin.cc says how it works): the
// handle, hello and frame on the wire, the comms and requests NCCL holds pointers to, and their
// non-blocking progress. Only the plugin's library includes this.
#pragma once

#include <cstdint>
#include <deque>
#include <string>
#include <vector>

#include <sys/types.h>
#include <unistd.h>

#include "faults/nccl_net_v8.h"

namespace collcheck::nccl_net {

constexpr std::uint32_t kHandleMagic = 0x636e6831;  // "cnh1"
constexpr std::uint32_t kHelloMagic = 0x636e6c31;   // "cnl1"
constexpr std::uint32_t kFrameMagic = 0x636e6631;   // "cnf1"
constexpr int kHelloTimeoutMs = 10000;

struct Handle {
  std::uint32_t magic;
  std::uint32_t address;  // IPv4, network order
  std::uint16_t port;     // network order
  std::uint16_t unused;
  std::int64_t pid;
};
static_assert(sizeof(Handle) <= COLLCHECK_NCCL_NET_HANDLE_MAXSIZE);

struct Hello {
  std::uint32_t magic;
  std::uint32_t unused;
  std::int64_t pid;
};

struct Frame {
  std::uint32_t magic;
  std::int32_t tag;
  std::uint64_t sequence;
  std::uint64_t size;
};

struct Connection {
  int fd = -1;
  long peer_pid = 0;
  std::string error;  // set once: every request on the connection then fails with it

  ~Connection() {
    if (fd >= 0) ::close(fd);
  }
  // Records the connection's error (the first one stays) and tells NCCL's logger.
  collcheck_nccl_result fail(std::string text);
};

struct SendComm;
struct ReceiveComm;

struct Request {
  SendComm* sender = nullptr;  // exactly one of the two
  ReceiveComm* receiver = nullptr;
  unsigned char* data = nullptr;  // what goes (the copy when armed) or where it lands
  std::size_t size = 0;           // bytes to send, or the receive's capacity
  int tag = 0;
  std::vector<unsigned char> copy;
  Frame frame{};
  std::size_t written = 0;  // of the frame and the bytes
  double not_before = 0;
  bool lose = false;
  bool fail = false;
  bool done = false;
  std::size_t moved = 0;  // bytes sent or received
};

struct SendComm : Connection {
  std::uint64_t connection = 0;
  std::uint64_t next_sequence = 0;
  std::deque<Request*> queue;  // in isend order; the front is the one on the wire
};

struct ReceiveComm : Connection {
  std::uint64_t expected_sequence = 0;
  std::deque<Request*> posted;
  Frame header{};
  std::size_t header_read = 0;
  std::size_t payload_read = 0;
  bool at_gap = false;
};

struct ListenComm {
  int fd = -1;
  ~ListenComm() {
    if (fd >= 0) ::close(fd);
  }
};

// NCCL's logger (given to init) at warning level, when there is one.
void warn(const std::string& text);
double now_seconds();
// `what: strerror(errno)`.
std::string system_error(const std::string& what);
bool set_non_blocking(int fd);
void no_delay(int fd);
// Sends what the front requests still have to send, without blocking.
collcheck_nccl_result progress(SendComm& comm);
// Receives into the posted requests, in order, what has arrived, without blocking.
collcheck_nccl_result progress(ReceiveComm& comm);

}  // namespace collcheck::nccl_net
