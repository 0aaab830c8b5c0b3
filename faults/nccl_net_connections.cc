// The plugin's connections: frames out of a SendComm's queue and into a ReceiveComm's posted
// receives, never blocking (see nccl_net_connections.h).
#include "faults/nccl_net_connections.h"

#include <cerrno>
#include <cstring>

#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

namespace collcheck::nccl_net {
namespace {

// Reads up to `bytes` into `into` without blocking: the count read, 0 when nothing is there yet,
// -1 after failing the connection (the peer closed it, or an error).
ssize_t read_some(ReceiveComm& comm, void* into, std::size_t bytes) {
  const ssize_t got = ::recv(comm.fd, into, bytes, MSG_DONTWAIT);
  if (got > 0) return got;
  if (got == 0) {
    comm.fail("the connection from the process " + std::to_string(comm.peer_pid) + " was closed");
    return -1;
  }
  if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) return 0;
  comm.fail(system_error("receive from the process " + std::to_string(comm.peer_pid) + " failed"));
  return -1;
}

// Checks a complete header against the receive it is for; false after failing the connection
// or stopping at a gap.
bool accept_header(ReceiveComm& comm, const Request& request) {
  const Frame& frame = comm.header;
  const std::string from = " from the process " + std::to_string(comm.peer_pid);
  if (frame.magic != kFrameMagic) {
    comm.fail("a message" + from + " does not start with a frame");
    return false;
  }
  if (frame.sequence != comm.expected_sequence) {
    comm.at_gap = true;  // the lost message never comes: nothing after it is delivered
    warn("message " + std::to_string(comm.expected_sequence) + from + " never arrived (the next one is " +
         std::to_string(frame.sequence) + "); the connection waits for it");
    return false;
  }
  if (frame.tag != request.tag) {
    comm.fail("message " + std::to_string(frame.sequence) + from + " has tag " + std::to_string(frame.tag) +
              " where NCCL posted a receive for tag " + std::to_string(request.tag));
    return false;
  }
  if (frame.size > request.size) {
    comm.fail("message " + std::to_string(frame.sequence) + from + " has " + std::to_string(frame.size) +
              " bytes, more than the " + std::to_string(request.size) + " NCCL posted");
    return false;
  }
  return true;
}

}  // namespace

collcheck_nccl_result Connection::fail(std::string text) {
  if (error.empty()) {
    error = std::move(text);
    warn(error);
  }
  return collcheck_nccl_system_error;
}

double now_seconds() {
  timespec now{};
  ::clock_gettime(CLOCK_MONOTONIC, &now);
  return static_cast<double>(now.tv_sec) + static_cast<double>(now.tv_nsec) * 1e-9;
}

std::string system_error(const std::string& what) { return what + ": " + std::strerror(errno); }

bool set_non_blocking(int fd) {
  const int flags = ::fcntl(fd, F_GETFL);
  return flags >= 0 && ::fcntl(fd, F_SETFL, flags | O_NONBLOCK) == 0;
}

void no_delay(int fd) {
  const int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

// Sends what the front requests still have to send, without blocking.
collcheck_nccl_result progress(SendComm& comm) {
  while (comm.error.empty() && !comm.queue.empty()) {
    Request& request = *comm.queue.front();
    if (request.lose || request.fail) {
      request.moved = request.size;  // a lost message looks sent to its sender
      request.done = true;
      comm.queue.pop_front();
      continue;
    }
    if (now_seconds() < request.not_before) return collcheck_nccl_success;
    const std::size_t total = sizeof(Frame) + request.size;
    iovec parts[2];
    int count = 0;
    if (request.written < sizeof(Frame)) {
      parts[count++] = {reinterpret_cast<unsigned char*>(&request.frame) + request.written,
                        sizeof(Frame) - request.written};
    }
    const std::size_t payload_sent = request.written > sizeof(Frame) ? request.written - sizeof(Frame) : 0;
    if (request.size > payload_sent) parts[count++] = {request.data + payload_sent, request.size - payload_sent};
    msghdr message{};
    message.msg_iov = parts;
    message.msg_iovlen = static_cast<std::size_t>(count);
    const ssize_t sent = count == 0 ? 0 : ::sendmsg(comm.fd, &message, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (sent < 0) {
      if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) return collcheck_nccl_success;
      return comm.fail(system_error("send to the process " + std::to_string(comm.peer_pid) + " failed"));
    }
    request.written += static_cast<std::size_t>(sent);
    if (request.written < total) return collcheck_nccl_success;  // the socket's buffer is full
    request.moved = request.size;
    request.done = true;
    comm.queue.pop_front();
  }
  return comm.error.empty() ? collcheck_nccl_success : collcheck_nccl_system_error;
}

// Receives into the posted requests, in order, what has arrived, without blocking.
collcheck_nccl_result progress(ReceiveComm& comm) {
  while (comm.error.empty() && !comm.at_gap && !comm.posted.empty()) {
    Request& request = *comm.posted.front();
    if (comm.header_read < sizeof(Frame)) {
      const ssize_t got = read_some(comm, reinterpret_cast<unsigned char*>(&comm.header) + comm.header_read,
                                    sizeof(Frame) - comm.header_read);
      if (got <= 0) break;
      comm.header_read += static_cast<std::size_t>(got);
      if (comm.header_read < sizeof(Frame) || !accept_header(comm, request)) continue;
    }
    if (comm.payload_read < comm.header.size) {
      const ssize_t got = read_some(comm, request.data + comm.payload_read, comm.header.size - comm.payload_read);
      if (got <= 0) break;
      comm.payload_read += static_cast<std::size_t>(got);
      if (comm.payload_read < comm.header.size) continue;
    }
    request.moved = comm.header.size;
    request.done = true;
    comm.posted.pop_front();
    ++comm.expected_sequence;
    comm.header_read = 0;
    comm.payload_read = 0;
  }
  return comm.error.empty() ? collcheck_nccl_success : collcheck_nccl_system_error;
}

}  // namespace collcheck::nccl_net
