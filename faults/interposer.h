// The C interface of libcollcheck-interpose.so, the LD_PRELOAD socket interposer: a process that
// has it preloaded finds these with dlsym(RTLD_DEFAULT, ...) and arms it for one run.
#pragma once

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

// What the callback decides for one outgoing call on a TCP socket.
struct collcheck_socket_action {
  double delay_seconds;  // sleep this long before sending (0: none)
  int reset;             // nonzero: shut the connection down and fail the call with ECONNRESET
};

// Called for every outgoing call (send, write, writev, sendmsg) on an AF_INET or AF_INET6 stream
// socket that is not excluded, while armed. `copy` holds a private copy of the call's bytes,
// which is what will be sent: the callback may flip bits in it (the caller's buffer is never
// touched). It may run on any thread, several at once; it must not throw.
typedef void (*collcheck_socket_callback)(void* context, int fd, unsigned char* copy, size_t bytes,
                                          struct collcheck_socket_action* action);

// Symbol names, for dlsym.
#define COLLCHECK_INTERPOSE_ARM "collcheck_interpose_arm"
#define COLLCHECK_INTERPOSE_DISARM "collcheck_interpose_disarm"
#define COLLCHECK_INTERPOSE_MAX_EXCLUDED 8

// Starts passing outgoing calls to `callback`; the `excluded` descriptors (at most
// COLLCHECK_INTERPOSE_MAX_EXCLUDED, e.g. the worker's control connection) are never touched.
// Returns 0, or -1 when already armed or given too many descriptors.
typedef int (*collcheck_interpose_arm_function)(collcheck_socket_callback callback, void* context, const int* excluded,
                                                int excluded_count);
// Stops calling the callback; returns once no call is inside it any more.
typedef void (*collcheck_interpose_disarm_function)(void);

#ifdef __cplusplus
}
#endif
