// The narrow interface through which the `ib` transport talks to RDMA hardware: the few verbs it
// uses (register memory, reliable-connected queue pairs, RDMA_WRITE_WITH_IMM, zero-length
// receives that take the immediates, completion queues), with two implementations: the real one
// over libibverbs (loaded at run time) and an in-process loopback (loopback_verbs.h) that follows
// the reliable-connected rules the transport relies on, so that the transport runs everywhere.
//
// The rules, as InfiniBand's reliable-connected service gives them and the loopback enforces:
// - a queue pair sends only once connected to its peer; a work request posted before fails;
// - writes on one queue pair land in the order they were posted, each exactly once;
// - an RDMA write lands only inside a region the peer registered with remote write access, named
//   by its remote key; anything else fails at the sender (RemoteAccess) and nothing is written;
// - the local bytes of a request must lie inside a region registered here, named by its local
//   key (else LocalProtection); they are read when the write is carried out, not when posted, so
//   they must stay untouched until the request's completion;
// - a write with immediate consumes one posted receive at the peer, whose completion carries the
//   immediate and the write's length; with none posted the peer is not ready and the write waits
//   (receiver-not-ready retries) and, past the retry limit, fails (ReceiverNotReady);
// - after any failure the queue pair is in error: the failed request completes with its status
//   and every other outstanding or later request, send or receive, completes as Flushed;
// - an unsignalled write produces no completion of its own: a later signalled one on the same
//   queue pair completing says it is done too.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "reference/result.h"

namespace collcheck::ib {

enum class CompletionStatus {
  Success,
  LocalProtection,   // IBV_WC_LOC_PROT_ERR: local bytes outside the named region
  RemoteAccess,      // IBV_WC_REM_ACCESS_ERR: a bad remote key, range or permission
  ReceiverNotReady,  // IBV_WC_RNR_RETRY_EXC_ERR: the peer never posted a receive in time
  RetryExceeded,     // IBV_WC_RETRY_EXC_ERR: the peer did not answer (a link or a process gone)
  Flushed,           // IBV_WC_WR_FLUSH_ERR: the queue pair was already in error
  Other,             // any other status, named in `detail`
};
std::string_view name(CompletionStatus);

enum class CompletionKind { Write, Receive };

struct Completion {
  std::uint64_t work_id = 0;
  CompletionStatus status = CompletionStatus::Success;
  CompletionKind kind = CompletionKind::Write;
  std::uint32_t immediate = 0;   // a receive's immediate
  std::uint32_t bytes = 0;       // a receive's: the length of the write that consumed it
  std::uint32_t queue_pair = 0;  // the number of the queue pair it belongs to
};

// Access a region grants (bits).
enum Access : unsigned { LocalWrite = 1, RemoteWrite = 2 };

struct MemoryRegion {
  std::byte* address = nullptr;
  std::size_t bytes = 0;
  std::uint32_t local_key = 0;
  std::uint32_t remote_key = 0;
  std::uint64_t handle = 0;  // the implementation's
};

// What a peer needs to connect to a queue pair, as it travels over the control channel.
struct QueuePairAddress {
  std::uint32_t number = 0;
  std::uint16_t lid = 0;               // InfiniBand: the port's local identifier
  std::array<std::uint8_t, 16> gid{};  // RoCE (and routed InfiniBand): the port's GID
  std::uint8_t uses_gid = 0;
  std::uint8_t port = 1;
  std::uint8_t gid_index = 0;
  std::uint8_t unused = 0;
};

struct WriteRequest {
  std::uint64_t work_id = 0;
  const std::byte* local = nullptr;  // inside the region of local_key
  std::size_t bytes = 0;
  std::uint32_t local_key = 0;
  std::uint64_t remote_address = 0;  // inside the peer's region of remote_key
  std::uint32_t remote_key = 0;
  bool with_immediate = false;
  std::uint32_t immediate = 0;
  bool signaled = true;
};

class CompletionQueue {
 public:
  virtual ~CompletionQueue() = default;
  // Up to out.size() completions, oldest first; how many. Never blocks.
  virtual std::size_t poll(std::span<Completion> out) = 0;
};

class QueuePair {
 public:
  virtual ~QueuePair() = default;
  virtual QueuePairAddress address() const = 0;
  // Connects to the peer's queue pair (to ready-to-send): once, before anything is posted.
  virtual Status connect(const QueuePairAddress& peer) = 0;
  // Posting fails outright (an error, nothing queued) only for a malformed request or a queue
  // that is full; what happens to a queued request comes back as its completion.
  virtual Status post_write(const WriteRequest&) = 0;
  // A zero-length receive for one write with immediate.
  virtual Status post_receive(std::uint64_t work_id) = 0;
  virtual bool in_error() const = 0;
};

// One port of one device, with its protection domain.
class Device {
 public:
  virtual ~Device() = default;
  virtual std::string name() const = 0;  // `mlx5_0 port 1 (RoCE, gid 3)`, `loopback`
  virtual Result<MemoryRegion> register_memory(std::byte* address, std::size_t bytes, unsigned access) = 0;
  // Memory of another device (a GPU's) by its dma-buf file descriptor: `bytes` from `offset` in the
  // buffer, addressed as `address` in work requests (ibv_reg_dmabuf_mr with iova = address). An
  // error where the verbs or the device cannot (the loopback reaches no device memory).
  virtual Result<MemoryRegion> register_dmabuf(int /*fd*/, std::uint64_t /*offset*/, std::size_t /*bytes*/,
                                               std::byte* /*address*/, unsigned /*access*/) {
    return Error{"ib", name() + " registers no dma-buf"};
  }
  virtual void deregister(const MemoryRegion&) = 0;
  virtual Result<std::unique_ptr<CompletionQueue>> create_completion_queue(int depth) = 0;
  // A reliable-connected queue pair whose sends complete on `sends` and receives on `receives`.
  virtual Result<std::unique_ptr<QueuePair>> create_queue_pair(CompletionQueue& sends, CompletionQueue& receives,
                                                               int depth) = 0;
};

// Which verbs a transport over them opens, and where (`verbs=ibverbs|loopback`, `dev=NAME`,
// `port=N`, `gid=N`): the in-process loopback (whose ends must be threads of one process), or
// libibverbs on a device and port.
struct VerbsChoice {
  bool loopback = false;
  std::string device;  // empty: the first with an active port
  int port = 0;        // 0: the device's first active port
  int gid_index = 0;
};

// Where the transport finds devices: the names it could open, and opening one.
class Verbs {
 public:
  virtual ~Verbs() = default;
  virtual std::string name() const = 0;  // `libibverbs`, `loopback`
  virtual Result<std::vector<std::string>> devices() = 0;
  // `device` empty: the first with an active port; `port` 0: its first active port.
  virtual Result<std::unique_ptr<Device>> open(const std::string& device, int port, int gid_index) = 0;
};

}  // namespace collcheck::ib
