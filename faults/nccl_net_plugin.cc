// libnccl-net-collcheck.so: a network plugin for NCCL (the v8 interface of faults/nccl_net_v8.h)
// that carries NCCL's messages over TCP and, once armed (faults/nccl_net.h), lets a fault plan
// decide each message's fate: delayed, corrupted, lost, failed in `test`, or its link taken down.
// NCCL loads it with NCCL_NET_PLUGIN=<path> NCCL_NET=collcheck; with P2P and SHM disabled, GPUs
// on one host talk through it too, so every message of a collective passes the fault plan.
//
// It works as follows. `listen` binds a TCP socket (COLLCHECK_NET_ADDRESS, default 127.0.0.1)
// and writes a Handle: the address, the port and this process's id, which tells the sender's
// faults which rank is at the receiving end. `connect` connects (a listening socket completes
// the connection from its backlog, so this returns at once) and sends a Hello; `accept` polls
// the listening socket without blocking. Every `isend` is one Frame (magic, tag, sequence, size)
// followed by the bytes, queued on its SendComm in order; every `irecv` one posted receive on
// its ReceiveComm. Nothing moves outside `test`: it progresses the request's connection with
// non-blocking calls (sendmsg of the frame and the bytes; recv of a header, then of the bytes
// straight into the posted buffer), so NCCL's proxy thread is never blocked. A receiver checks
// each frame's magic, sequence (a gap, left by a lost message, stops the connection where it is:
// later messages are never delivered in the lost one's place), tag and size against the posted
// receive; anything wrong is an error of the connection, which every request on it then returns.
// Armed, `isend` copies the bytes and passes the copy to the callback, whose action is applied.
#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdarg>
#include <cstring>
#include <deque>
#include <memory>
#include <new>
#include <string>
#include <vector>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "faults/armed_callback.h"
#include "faults/nccl_net.h"
#include "faults/nccl_net_connections.h"
#include "faults/nccl_net_v8.h"

namespace {

collcheck::ArmedCallback<collcheck_net_callback> arming;
std::atomic<collcheck_nccl_logger> logger{nullptr};
std::atomic<std::uint64_t> connections{0};
char plugin_name[] = "collcheck";

}  // namespace

namespace collcheck::nccl_net {

void warn(const std::string& text) {
  if (collcheck_nccl_logger log = logger.load()) log(2, 16, __FILE__, __LINE__, "NET/collcheck: %s", text.c_str());
}

}  // namespace collcheck::nccl_net

namespace {

using namespace collcheck::nccl_net;

// Every entry point: no exception may cross into NCCL's C code.
template <typename Body>
collcheck_nccl_result guarded(Body body) noexcept {
  try {
    return body();
  } catch (const std::bad_alloc&) {
    warn("out of memory");
    return collcheck_nccl_system_error;
  } catch (...) {
    return collcheck_nccl_internal_error;
  }
}

collcheck_nccl_result plugin_init(collcheck_nccl_logger given) {
  logger.store(given);
  return collcheck_nccl_success;
}

collcheck_nccl_result plugin_devices(int* count) {
  *count = 1;
  return collcheck_nccl_success;
}

collcheck_nccl_result plugin_get_properties(int device, collcheck_nccl_net_properties_v8* properties) {
  if (device != 0) return collcheck_nccl_invalid_argument;
  *properties = collcheck_nccl_net_properties_v8{};
  properties->name = plugin_name;
  properties->pci_path = nullptr;  // a virtual device, as NCCL's socket transport on loopback
  properties->guid = 0x636f6c6c63686bULL;
  properties->ptr_support = COLLCHECK_NCCL_PTR_HOST;
  properties->speed = 10000;
  properties->max_comms = 65536;
  properties->max_recvs = 1;
  return collcheck_nccl_success;
}

collcheck_nccl_result plugin_listen(int device, void* handle, void** listen_comm) {
  return guarded([&] {
    *listen_comm = nullptr;
    if (device != 0) return collcheck_nccl_invalid_argument;
    sockaddr_in address{};
    address.sin_family = AF_INET;
    const char* configured = ::getenv(COLLCHECK_NET_ADDRESS);
    const char* text = configured != nullptr && *configured != '\0' ? configured : "127.0.0.1";
    if (::inet_pton(AF_INET, text, &address.sin_addr) != 1) {
      warn(std::string(COLLCHECK_NET_ADDRESS) + "=" + text + " is not an IPv4 address (such as 10.0.0.7)");
      return collcheck_nccl_invalid_argument;
    }
    auto comm = std::make_unique<ListenComm>();
    comm->fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    socklen_t length = sizeof address;
    if (comm->fd < 0 || ::bind(comm->fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0 ||
        ::listen(comm->fd, 256) != 0 || ::getsockname(comm->fd, reinterpret_cast<sockaddr*>(&address), &length) != 0 ||
        !set_non_blocking(comm->fd)) {
      warn(system_error(std::string("cannot listen on ") + text));
      return collcheck_nccl_system_error;
    }
    Handle written{kHandleMagic, address.sin_addr.s_addr, address.sin_port, 0, ::getpid()};
    std::memset(handle, 0, COLLCHECK_NCCL_NET_HANDLE_MAXSIZE);
    std::memcpy(handle, &written, sizeof written);
    *listen_comm = comm.release();
    return collcheck_nccl_success;
  });
}

collcheck_nccl_result plugin_connect(int device, void* handle, void** send_comm,
                                     collcheck_nccl_net_device_handle_v8** /*device_comm*/) {
  return guarded([&] {
    *send_comm = nullptr;
    Handle peer{};
    std::memcpy(&peer, handle, sizeof peer);
    if (device != 0 || peer.magic != kHandleMagic) return collcheck_nccl_invalid_argument;
    auto comm = std::make_unique<SendComm>();
    comm->peer_pid = static_cast<long>(peer.pid);
    comm->fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = peer.address;
    address.sin_port = peer.port;
    Hello hello{kHelloMagic, 0, ::getpid()};
    if (comm->fd < 0 || ::connect(comm->fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0 ||
        ::send(comm->fd, &hello, sizeof hello, MSG_NOSIGNAL) != static_cast<ssize_t>(sizeof hello) ||
        !set_non_blocking(comm->fd)) {
      return comm->fail(system_error("cannot connect to the process " + std::to_string(peer.pid)));
    }
    no_delay(comm->fd);
    comm->connection = connections.fetch_add(1);
    *send_comm = comm.release();
    return collcheck_nccl_success;
  });
}

collcheck_nccl_result plugin_accept(void* listen_comm, void** receive_comm,
                                    collcheck_nccl_net_device_handle_v8** /*device_comm*/) {
  return guarded([&] {
    *receive_comm = nullptr;
    const int fd = ::accept4(static_cast<ListenComm*>(listen_comm)->fd, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) return collcheck_nccl_success;
      warn(system_error("accept failed"));
      return collcheck_nccl_system_error;
    }
    auto comm = std::make_unique<ReceiveComm>();
    comm->fd = fd;
    // The connector sent its Hello right after connecting: it is there or on its way.
    Hello hello{};
    pollfd readable{fd, POLLIN, 0};
    if (::poll(&readable, 1, kHelloTimeoutMs) != 1 ||
        ::recv(fd, &hello, sizeof hello, MSG_WAITALL) != static_cast<ssize_t>(sizeof hello) ||
        hello.magic != kHelloMagic || !set_non_blocking(fd)) {
      return comm->fail("a connection to this listener did not introduce itself");
    }
    no_delay(fd);
    comm->peer_pid = static_cast<long>(hello.pid);
    *receive_comm = comm.release();
    return collcheck_nccl_success;
  });
}

int registered;  // the memory handle every registration returns: nothing to register over TCP

collcheck_nccl_result plugin_register_memory(void* /*comm*/, void* /*data*/, std::size_t /*size*/, int type,
                                             void** memory_handle) {
  *memory_handle = &registered;
  return type == COLLCHECK_NCCL_PTR_HOST ? collcheck_nccl_success : collcheck_nccl_internal_error;
}

collcheck_nccl_result plugin_register_memory_dmabuf(void*, void*, std::size_t, int, std::uint64_t, int, void**) {
  return collcheck_nccl_internal_error;  // host memory only (ptr_support says so)
}

collcheck_nccl_result plugin_deregister_memory(void* /*comm*/, void* /*memory_handle*/) {
  return collcheck_nccl_success;
}

// Asks the armed callback about one message and applies its action to the request.
void decide(SendComm& comm, Request& request) {
  request.copy.assign(request.data, request.data + request.size);
  request.data = request.copy.data();
  collcheck_net_message message{comm.peer_pid, comm.connection,     request.frame.sequence,
                                request.tag,   request.copy.data(), request.size};
  collcheck_net_action action{0, 0, 0, 0};
  if (collcheck_net_callback callback = arming.callback()) callback(arming.context(), &message, &action);
  arming.leave();
  if (action.delay_seconds > 0) request.not_before = now_seconds() + action.delay_seconds;
  request.lose = action.lose != 0;
  request.fail = action.fail != 0;
  if (action.close_connection != 0) {
    ::shutdown(comm.fd, SHUT_RDWR);
    comm.fail("the link to the process " + std::to_string(comm.peer_pid) + " went down (a collcheck fault)");
  }
}

collcheck_nccl_result plugin_isend(void* send_comm, void* data, int size, int tag, void* /*memory_handle*/,
                                   void** request_out) {
  return guarded([&] {
    *request_out = nullptr;
    auto& comm = *static_cast<SendComm*>(send_comm);
    if (size < 0) return collcheck_nccl_invalid_argument;
    auto request = std::make_unique<Request>();
    request->sender = &comm;
    request->data = static_cast<unsigned char*>(data);
    request->size = static_cast<std::size_t>(size);
    request->tag = tag;
    request->frame = Frame{kFrameMagic, tag, comm.next_sequence++, request->size};
    if (arming.enter()) decide(comm, *request);
    comm.queue.push_back(request.get());
    *request_out = request.release();
    progress(comm);  // a failed connection shows in `test`, where NCCL looks for it
    return collcheck_nccl_success;
  });
}

collcheck_nccl_result plugin_irecv(void* receive_comm, int count, void** data, int* sizes, int* tags,
                                   void** /*memory_handles*/, void** request_out) {
  return guarded([&] {
    *request_out = nullptr;
    if (count != 1 || sizes[0] < 0) return collcheck_nccl_invalid_argument;  // max_recvs is 1
    auto& comm = *static_cast<ReceiveComm*>(receive_comm);
    auto request = std::make_unique<Request>();
    request->receiver = &comm;
    request->data = static_cast<unsigned char*>(data[0]);
    request->size = static_cast<std::size_t>(sizes[0]);
    request->tag = tags[0];
    comm.posted.push_back(request.get());
    *request_out = request.release();
    progress(comm);  // a failed connection shows in `test`, where NCCL looks for it
    return collcheck_nccl_success;
  });
}

collcheck_nccl_result plugin_iflush(void*, int, void**, int*, void**, void** request) {
  *request = nullptr;  // host memory: nothing to make visible
  return collcheck_nccl_success;
}

collcheck_nccl_result plugin_test(void* request_in, int* done, int* sizes) {
  return guarded([&] {
    auto* request = static_cast<Request*>(request_in);
    *done = 0;
    if (!request->done) {
      const collcheck_nccl_result progressed =
          request->sender != nullptr ? progress(*request->sender) : progress(*request->receiver);
      if (progressed != collcheck_nccl_success) return progressed;
    }
    if (!request->done) return collcheck_nccl_success;
    *done = 1;
    if (sizes != nullptr) *sizes = static_cast<int>(request->moved);
    const bool failed = request->fail;
    delete request;
    if (failed) {
      warn("a send failed (a collcheck fault)");
      return collcheck_nccl_system_error;
    }
    return collcheck_nccl_success;
  });
}

// Closing frees the requests the comm still holds: NCCL tests none after closing.
template <typename Comm>
void close_comm(Comm* comm, std::deque<Request*>& pending) {
  for (Request* request : pending) delete request;
  delete comm;
}

collcheck_nccl_result plugin_close_send(void* send_comm) {
  auto* comm = static_cast<SendComm*>(send_comm);
  close_comm(comm, comm->queue);
  return collcheck_nccl_success;
}

collcheck_nccl_result plugin_close_receive(void* receive_comm) {
  auto* comm = static_cast<ReceiveComm*>(receive_comm);
  close_comm(comm, comm->posted);
  return collcheck_nccl_success;
}

collcheck_nccl_result plugin_close_listen(void* listen_comm) {
  delete static_cast<ListenComm*>(listen_comm);
  return collcheck_nccl_success;
}

collcheck_nccl_result plugin_get_device_memory(void*, void*, void** device_handle) {
  *device_handle = nullptr;
  return collcheck_nccl_success;
}

collcheck_nccl_result plugin_receive_consumed(void*, int, void*) { return collcheck_nccl_success; }

}  // namespace

extern "C" {

__attribute__((visibility("default"))) collcheck_nccl_net_v8 ncclNetPlugin_v8 = {
    plugin_name,
    plugin_init,
    plugin_devices,
    plugin_get_properties,
    plugin_listen,
    plugin_connect,
    plugin_accept,
    plugin_register_memory,
    plugin_register_memory_dmabuf,
    plugin_deregister_memory,
    plugin_isend,
    plugin_irecv,
    plugin_iflush,
    plugin_test,
    plugin_close_send,
    plugin_close_receive,
    plugin_close_listen,
    plugin_get_device_memory,
    plugin_receive_consumed,
};

__attribute__((visibility("default"))) int collcheck_net_arm(collcheck_net_callback callback, void* context) {
  return arming.arm(callback, context) ? 0 : -1;
}

__attribute__((visibility("default"))) void collcheck_net_disarm(void) { arming.disarm(); }

}  // extern "C"
