// libcollcheck-interpose.so: loaded with LD_PRELOAD into the ranks of a vendor backend (Gloo,
// Open MPI over btl/tcp), it delays, resets or corrupts their outgoing TCP traffic once armed.
//
// What the vendors call (nm -D on this machine's packages): Gloo's TCP pair sends with writev and
// receives with recv; Open MPI's btl/tcp sends with writev (fragments) and send (its connection
// handshake), and receives with readv, read and recv. Faults act where the sender hands bytes to
// the kernel, as the LinkHook does for our own executors, so the interposer wraps the sending
// calls (send, sendto without an address, write, writev, sendmsg without ancillary data); the
// receiving calls need no wrapper: a reset shuts both directions down and the peer sees it from
// its kernel. Until armed every wrapper costs one atomic load; armed, each call on a socket
// costs two getsockopt calls and a copy of its bytes (which is what gets sent, so the caller's
// buffer is never touched). The library holds no C++ exceptions and no static constructors
// beyond resolving the real functions, and its armed path takes no lock (Gloo sends from its
// own thread as well as the caller's).
#include "faults/interposer.h"

#include "faults/armed_callback.h"

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <ctime>

#include <dlfcn.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

namespace {

using SendFunction = ssize_t (*)(int, const void*, size_t, int);
using SendToFunction = ssize_t (*)(int, const void*, size_t, int, const sockaddr*, socklen_t);
using WriteFunction = ssize_t (*)(int, const void*, size_t);
using WritevFunction = ssize_t (*)(int, const iovec*, int);
using SendmsgFunction = ssize_t (*)(int, const msghdr*, int);

template <typename Function>
Function next(const char* name) {
  return reinterpret_cast<Function>(::dlsym(RTLD_NEXT, name));
}

// Resolved on first use (a library may call before our constructor ran); dlsym is idempotent,
// so two threads racing here store the same pointer.
struct Real {
  std::atomic<SendFunction> send{nullptr};
  std::atomic<SendToFunction> sendto{nullptr};
  std::atomic<WriteFunction> write{nullptr};
  std::atomic<WritevFunction> writev{nullptr};
  std::atomic<SendmsgFunction> sendmsg{nullptr};
} real;

template <typename Function>
Function resolve(std::atomic<Function>& slot, const char* name) {
  Function f = slot.load(std::memory_order_acquire);
  if (f == nullptr) {
    f = next<Function>(name);
    slot.store(f, std::memory_order_release);
  }
  return f;
}

// The armed state, and the descriptors the callback never sees (the worker's control socket).
collcheck::ArmedCallback<collcheck_socket_callback> arming;
int excluded[COLLCHECK_INTERPOSE_MAX_EXCLUDED];
std::atomic<int> excluded_count{0};

// An AF_INET or AF_INET6 stream socket that is not excluded. Keeps errno as it was.
bool eligible(int fd) {
  const int count = excluded_count.load(std::memory_order_acquire);
  for (int i = 0; i < count; ++i) {
    if (excluded[i] == fd) return false;
  }
  const int saved = errno;
  int type = 0, domain = 0;
  socklen_t length = sizeof type;
  bool yes = ::getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &length) == 0 && type == SOCK_STREAM;
  length = sizeof domain;
  yes = yes && ::getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &domain, &length) == 0 &&
        (domain == AF_INET || domain == AF_INET6);
  errno = saved;
  return yes;
}

// Enters the armed path when armed and the socket is eligible; the caller must leave().
bool enter(int fd) {
  if (!arming.enter()) return false;
  if (eligible(fd)) return true;
  arming.leave();
  return false;
}

// The armed path of every sending call, entered through enter(fd): copies the bytes, asks the
// callback, and sends the copy (MSG_NOSIGNAL: a peer that a reset took away must fail the call
// with EPIPE, not kill this process with SIGPIPE). `*handled` false: send as if unarmed.
ssize_t faulted(int fd, const iovec* iov, int count, int flags, bool* handled) {
  std::size_t total = 0;
  for (int i = 0; i < count; ++i) total += iov[i].iov_len;
  unsigned char* copy = total > 0 ? static_cast<unsigned char*>(std::malloc(total)) : nullptr;
  if (copy == nullptr) {
    arming.leave();
    *handled = false;
    return 0;
  }
  std::size_t at = 0;
  for (int i = 0; i < count; ++i) {
    if (iov[i].iov_len > 0) std::memcpy(copy + at, iov[i].iov_base, iov[i].iov_len);
    at += iov[i].iov_len;
  }
  collcheck_socket_action action{0, 0};
  if (collcheck_socket_callback decide = arming.callback()) decide(arming.context(), fd, copy, total, &action);
  arming.leave();  // the context is not touched below
  *handled = true;
  if (action.delay_seconds > 0) collcheck::sleep_seconds(action.delay_seconds);
  if (action.reset) {
    ::shutdown(fd, SHUT_RDWR);
    std::free(copy);
    errno = ECONNRESET;
    return -1;
  }
  const ssize_t sent = resolve(real.send, "send")(fd, copy, total, flags | MSG_NOSIGNAL);
  const int saved = errno;
  std::free(copy);
  errno = saved;
  return sent;
}

}  // namespace

extern "C" {

__attribute__((visibility("default"))) int collcheck_interpose_arm(collcheck_socket_callback decide, void* given,
                                                                   const int* fds, int count) {
  // Armed already: refused before the excluded list of the run in progress is touched.
  if (count < 0 || count > COLLCHECK_INTERPOSE_MAX_EXCLUDED || arming.armed()) return -1;
  for (int i = 0; i < count; ++i) excluded[i] = fds[i];
  excluded_count.store(count, std::memory_order_release);
  return arming.arm(decide, given) ? 0 : -1;
}

__attribute__((visibility("default"))) void collcheck_interpose_disarm(void) { arming.disarm(); }

__attribute__((visibility("default"))) ssize_t send(int fd, const void* data, size_t bytes, int flags) {
  if (enter(fd)) {
    iovec one{const_cast<void*>(data), bytes};
    bool handled = false;
    const ssize_t n = faulted(fd, &one, 1, flags, &handled);
    if (handled) return n;
  }
  return resolve(real.send, "send")(fd, data, bytes, flags);
}

__attribute__((visibility("default"))) ssize_t sendto(int fd, const void* data, size_t bytes, int flags,
                                                      const sockaddr* address, socklen_t length) {
  if (address == nullptr && enter(fd)) {
    iovec one{const_cast<void*>(data), bytes};
    bool handled = false;
    const ssize_t n = faulted(fd, &one, 1, flags, &handled);
    if (handled) return n;
  }
  return resolve(real.sendto, "sendto")(fd, data, bytes, flags, address, length);
}

__attribute__((visibility("default"))) ssize_t write(int fd, const void* data, size_t bytes) {
  if (enter(fd)) {
    iovec one{const_cast<void*>(data), bytes};
    bool handled = false;
    const ssize_t n = faulted(fd, &one, 1, 0, &handled);
    if (handled) return n;
  }
  return resolve(real.write, "write")(fd, data, bytes);
}

__attribute__((visibility("default"))) ssize_t writev(int fd, const iovec* iov, int count) {
  if (enter(fd)) {
    bool handled = false;
    const ssize_t n = faulted(fd, iov, count, 0, &handled);
    if (handled) return n;
  }
  return resolve(real.writev, "writev")(fd, iov, count);
}

__attribute__((visibility("default"))) ssize_t sendmsg(int fd, const msghdr* message, int flags) {
  // Messages with an address or ancillary data (descriptors, credentials) pass untouched.
  if (message != nullptr && message->msg_name == nullptr && message->msg_controllen == 0 && enter(fd)) {
    bool handled = false;
    const ssize_t n = faulted(fd, message->msg_iov, static_cast<int>(message->msg_iovlen), flags, &handled);
    if (handled) return n;
  }
  return resolve(real.sendmsg, "sendmsg")(fd, message, flags);
}

}  // extern "C"
