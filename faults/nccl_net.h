// The C interface of libnccl-net-collcheck.so, NCCL's network plugin that carries NCCL's traffic
// over TCP and applies a fault plan to it message by message: a process that loaded it (NCCL
// through NCCL_NET_PLUGIN, the worker with dlopen of the same path) arms it for one run with a
// callback that decides the fate of every message sent. The plugin's side of NCCL is
// faults/nccl_net_v8.h; the decisions come from faults/socket_faults.h (NcclNetFaults).
#pragma once

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

// One message NCCL hands to isend, as the callback sees it.
struct collcheck_net_message {
  long peer_pid;        // the process at the receiving end (it wrote the listen handle)
  uint64_t connection;  // this process's count of connections made before this one
  uint64_t sequence;    // the message's index on its connection, from 0
  int tag;              // NCCL's tag
  unsigned char* copy;  // a private copy of the bytes, which is what goes: the callback may flip bits
  size_t bytes;
};

// What the callback decides for one message. Everything zero: sent as it is.
struct collcheck_net_action {
  double delay_seconds;  // the message leaves this long after isend (later ones queue behind it)
  int lose;              // never sent, though the sender's request completes: the receiver meets
                         // the gap in sequence numbers and waits there, as on a link that lost it
  int close_connection;  // the link goes down: the connection is shut, requests at both ends fail
  int fail;              // `test` returns an error for this request; the connection stays
};

// Called in isend for every message while armed, on NCCL's proxy threads (several at once);
// it must not throw.
typedef void (*collcheck_net_callback)(void* context, const struct collcheck_net_message* message,
                                       struct collcheck_net_action* action);

// Symbol names, for dlsym on the plugin's handle.
#define COLLCHECK_NET_ARM "collcheck_net_arm"
#define COLLCHECK_NET_DISARM "collcheck_net_disarm"
// The environment variable naming the IPv4 address the plugin listens on (default 127.0.0.1;
// set it to the host's address on a network when ranks span hosts).
#define COLLCHECK_NET_ADDRESS "COLLCHECK_NET_ADDRESS"

// Starts passing messages to `callback`; 0, or -1 when armed already.
typedef int (*collcheck_net_arm_function)(collcheck_net_callback callback, void* context);
// Stops calling the callback; returns once no call is inside it any more.
typedef void (*collcheck_net_disarm_function)(void);

#ifdef __cplusplus
}
#endif
