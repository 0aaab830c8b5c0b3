/* An example collcheck backend plugin in plain C (docs/plugins.md): ring all-reduce, all-gather
 * and reduce-scatter over TCP sockets, connected through collcheck's out-of-band allgather.
 *
 * The ring works as follows. At init every rank listens on a TCP port, the ranks exchange their
 * addresses through the out-of-band allgather, and each rank connects to the next rank
 * (rank + 1 mod nranks) and accepts the previous one: one socket to send on, one to receive on.
 * A call moves blocks around the ring in nranks - 1 steps; in each step a rank sends one block to
 * the next rank while it receives one from the previous rank (both at once, with poll, so that no
 * two ranks wait on each other's full socket buffers).
 *   - reduce-scatter: rank r's working copy of its input has one block per rank; in step s it
 *     sends block r - s - 1 and receives block r - s - 2, which it reduces into its own copy. After
 *     the last step its block r holds every rank's contribution and goes to its output.
 *   - all-gather: rank r's block starts in its slot of the output; in step s it sends block r - s
 *     and receives block r - s - 1 into its slot.
 *   - all-reduce: the output is cut into nranks blocks (their boundaries spread the remainder over
 *     the first blocks); a reduce-scatter phase leaves block r + 1 fully reduced on rank r, and an
 *     all-gather phase passes the reduced blocks on around the ring.
 *
 * `bug=NAME` turns on one realistic bug, so that a user sees what a finding looks like:
 *   - block-boundary: all-reduce's blocks begin at ceil(b * count / nranks) and end at
 *     floor((b + 1) * count / nranks), so where nranks does not divide count an element between
 *     two blocks belongs to neither and is never reduced.
 *   - odd-ranks: the reduce-scatter phases run (nranks / 2) * 2 - 1 steps, a loop bound written
 *     for pairs: on an odd rank count one rank's contribution is missing.
 *   - in-place-offset: in place, reduce-scatter writes its block at the start of the buffer, where
 *     MPI_Reduce_scatter_block puts it, instead of at rank * count, where NCCL and collcheck do.
 * `address=IPV4` is the address the ranks listen on and publish (127.0.0.1: one host); the knob
 * `slice` (bytes per send call, 64..1048576) is drawn by collcheck per call. */
#define _POSIX_C_SOURCE 200809L
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "collcheck/plugin.h"

enum ring_bug { BUG_NONE, BUG_BLOCK_BOUNDARY, BUG_ODD_RANKS, BUG_IN_PLACE_OFFSET };
static const char* const bug_names[] = {"none", "block-boundary", "odd-ranks", "in-place-offset"};

struct ring {
  int rank, nranks;
  int next_fd, previous_fd; /* send to rank + 1, receive from rank - 1; -1 on one rank */
  enum ring_bug bug;
  size_t option_slice; /* bytes per send call, as the options say */
  size_t slice;        /* bytes per send call, this call's */
  double deadline;     /* seconds one call may wait */
  char* error;         /* where the current call's message goes */
  size_t error_size;
};

/* The address a rank publishes through the out-of-band allgather. */
struct ring_address {
  uint32_t ip;   /* network order */
  uint16_t port; /* network order */
  uint16_t unused;
};

static const collcheck_knob_v1 ring_knobs[] = {{"slice", 64, 1u << 20, 1u << 16}};

static int fail(char* error, size_t error_size, const char* format, const char* detail) {
  snprintf(error, error_size, format, detail);
  return COLLCHECK_PLUGIN_ERROR;
}

/* ---- options ------------------------------------------------------------------------------ */

struct ring_options {
  enum ring_bug bug;
  uint32_t ip;
  size_t slice;
};

static int parse_size(const char* text, size_t low, size_t high, size_t* out) {
  char* end = NULL;
  unsigned long long value = strtoull(text, &end, 10);
  if (end == text || *end != '\0' || value < low || value > high) return 0;
  *out = (size_t)value;
  return 1;
}

static int parse_options(const collcheck_option_v1* options, int count, struct ring_options* out, char* error,
                         size_t error_size) {
  out->bug = BUG_NONE;
  out->ip = htonl(INADDR_LOOPBACK);
  out->slice = 1u << 16;
  for (int i = 0; i < count; ++i) {
    const char* key = options[i].key;
    const char* value = options[i].value;
    if (strcmp(key, "bug") == 0) {
      int found = 0;
      for (int b = 0; b < (int)(sizeof bug_names / sizeof bug_names[0]); ++b) {
        if (strcmp(value, bug_names[b]) == 0) {
          out->bug = (enum ring_bug)b;
          found = 1;
        }
      }
      if (!found)
        return fail(error, error_size, "bug=%s: must be none, block-boundary, odd-ranks or in-place-offset", value);
    } else if (strcmp(key, "address") == 0) {
      struct in_addr address;
      if (inet_pton(AF_INET, value, &address) != 1)
        return fail(error, error_size, "address=%s: must be an IPv4 address", value);
      out->ip = address.s_addr;
    } else if (strcmp(key, "slice") == 0) {
      if (!parse_size(value, 64, 1u << 20, &out->slice))
        return fail(error, error_size, "slice=%s: must be 64..1048576 bytes", value);
    } else {
      return fail(error, error_size, "unknown option %s: allowed bug, address, slice", key);
    }
  }
  return COLLCHECK_PLUGIN_OK;
}

static int ring_capabilities(const collcheck_option_v1* options, int option_count,
                             collcheck_capabilities_v1* capabilities, char* error, size_t error_size) {
  struct ring_options parsed;
  if (parse_options(options, option_count, &parsed, error, error_size) != COLLCHECK_PLUGIN_OK)
    return COLLCHECK_PLUGIN_ERROR;
  capabilities->collectives = 1u << COLLCHECK_ALLREDUCE | 1u << COLLCHECK_ALLGATHER | 1u << COLLCHECK_REDUCESCATTER;
  capabilities->dtypes = 1u << COLLCHECK_INT32 | 1u << COLLCHECK_UINT32 | 1u << COLLCHECK_INT64 |
                         1u << COLLCHECK_UINT64 | 1u << COLLCHECK_FLOAT32 | 1u << COLLCHECK_FLOAT64;
  capabilities->ops = 1u << COLLCHECK_SUM | 1u << COLLCHECK_PROD | 1u << COLLCHECK_MIN | 1u << COLLCHECK_MAX;
  capabilities->in_place = 1;
  capabilities->memory = COLLCHECK_MEMORY_HOST;
  capabilities->min_ranks = 1;
  capabilities->max_ranks = 256;
  capabilities->deterministic = 1;
  capabilities->knobs = ring_knobs;
  capabilities->knob_count = 1;
  return COLLCHECK_PLUGIN_OK;
}

/* ---- connecting the ring ------------------------------------------------------------------ */

static int listen_on(uint32_t ip, struct ring_address* published) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in address;
  socklen_t length = sizeof address;
  memset(&address, 0, sizeof address);
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = ip;
  if (fd < 0 || bind(fd, (struct sockaddr*)&address, sizeof address) != 0 || listen(fd, 4) != 0 ||
      getsockname(fd, (struct sockaddr*)&address, &length) != 0) {
    if (fd >= 0) close(fd);
    return -1;
  }
  published->ip = ip;
  published->port = address.sin_port;
  published->unused = 0;
  return fd;
}

static int connect_to(const struct ring_address* peer) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in address;
  memset(&address, 0, sizeof address);
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = peer->ip;
  address.sin_port = peer->port;
  if (fd < 0 || connect(fd, (struct sockaddr*)&address, sizeof address) != 0) {
    if (fd >= 0) close(fd);
    return -1;
  }
  return fd;
}

static void tune(int fd) {
  int on = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &on, sizeof on);
}

/* Connects the ring: listen, publish the address, connect to the next rank, accept the previous
 * one. On an error, `ring` keeps what it opened, for ring_finalize. */
static int connect_ring(struct ring* ring, uint32_t ip, collcheck_allgather_v1 allgather, void* oob, char* error,
                        size_t error_size) {
  struct ring_address mine;
  int rc = COLLCHECK_PLUGIN_ERROR;
  const int listener = listen_on(ip, &mine);
  struct ring_address* all = calloc((size_t)ring->nranks, sizeof *all);
  if (all == NULL) {
    fail(error, error_size, "%s", "out of memory");
  } else if (listener < 0) {
    fail(error, error_size, "cannot listen on a TCP port: %s", strerror(errno));
  } else if (allgather(oob, &mine, sizeof mine, all) != COLLCHECK_PLUGIN_OK) {
    fail(error, error_size, "%s", "the out-of-band allgather of the ring's addresses failed");
  } else if (ring->nranks == 1) {
    rc = COLLCHECK_PLUGIN_OK;
  } else if ((ring->next_fd = connect_to(&all[(ring->rank + 1) % ring->nranks])) < 0) {
    fail(error, error_size, "cannot connect to the next rank: %s", strerror(errno));
  } else if ((ring->previous_fd = accept(listener, NULL, NULL)) < 0) {
    fail(error, error_size, "cannot accept the previous rank: %s", strerror(errno));
  } else {
    tune(ring->next_fd);
    tune(ring->previous_fd);
    rc = COLLCHECK_PLUGIN_OK;
  }
  if (listener >= 0) close(listener);
  free(all);
  return rc;
}

static void ring_finalize(void* context);

static int ring_init(int rank, int nranks, const collcheck_option_v1* options, int option_count,
                     collcheck_allgather_v1 allgather, void* oob, void** context, char* error, size_t error_size) {
  struct ring_options parsed;
  if (parse_options(options, option_count, &parsed, error, error_size) != COLLCHECK_PLUGIN_OK)
    return COLLCHECK_PLUGIN_ERROR;
  struct ring* ring = calloc(1, sizeof *ring);
  if (ring == NULL) return fail(error, error_size, "%s", "out of memory");
  ring->rank = rank;
  ring->nranks = nranks;
  ring->next_fd = ring->previous_fd = -1;
  ring->bug = parsed.bug;
  ring->option_slice = parsed.slice;
  if (connect_ring(ring, parsed.ip, allgather, oob, error, error_size) != COLLCHECK_PLUGIN_OK) {
    ring_finalize(ring);
    return COLLCHECK_PLUGIN_ERROR;
  }
  *context = ring;
  return COLLCHECK_PLUGIN_OK;
}

static void ring_finalize(void* context) {
  struct ring* ring = context;
  if (ring == NULL) return;
  if (ring->next_fd >= 0) close(ring->next_fd);
  if (ring->previous_fd >= 0) close(ring->previous_fd);
  free(ring);
}

/* ---- moving bytes ------------------------------------------------------------------------- */

static double now_seconds(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* Sends `out` to the next rank while receiving `in` from the previous one. */
static int exchange(struct ring* ring, const char* out, size_t out_bytes, char* in, size_t in_bytes) {
  const double give_up = now_seconds() + (ring->deadline > 0 ? ring->deadline : 60);
  size_t sent = 0, received = 0;
  while (sent < out_bytes || received < in_bytes) {
    /* A side that is done is left out (a negative descriptor), so its hangups are not seen. */
    struct pollfd waits[2] = {{sent < out_bytes ? ring->next_fd : -1, POLLOUT, 0},
                              {received < in_bytes ? ring->previous_fd : -1, POLLIN, 0}};
    const double left = give_up - now_seconds();
    if (left <= 0)
      return fail(ring->error, ring->error_size, "timed out waiting for %s",
                  sent < out_bytes ? "the next rank" : "the previous rank");
    const int ready = poll(waits, 2, (int)(left * 1000) + 1);
    if (ready < 0 && errno != EINTR) return fail(ring->error, ring->error_size, "poll: %s", strerror(errno));
    if (ready <= 0) continue;
    if (waits[0].revents & (POLLOUT | POLLERR | POLLHUP)) {
      size_t bytes = out_bytes - sent < ring->slice ? out_bytes - sent : ring->slice;
      ssize_t done = send(ring->next_fd, out + sent, bytes, MSG_DONTWAIT | MSG_NOSIGNAL);
      if (done < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
        return fail(ring->error, ring->error_size, "sending to the next rank: %s", strerror(errno));
      if (done > 0) sent += (size_t)done;
    }
    if (waits[1].revents & (POLLIN | POLLERR | POLLHUP)) {
      ssize_t done = recv(ring->previous_fd, in + received, in_bytes - received, MSG_DONTWAIT);
      if (done == 0) return fail(ring->error, ring->error_size, "%s", "the previous rank closed its connection");
      if (done < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
        return fail(ring->error, ring->error_size, "receiving from the previous rank: %s", strerror(errno));
      if (done > 0) received += (size_t)done;
    }
  }
  return COLLCHECK_PLUGIN_OK;
}

/* ---- reductions --------------------------------------------------------------------------- */

/* into[i] = into[i] OP from[i]; min and max of floats propagate NaN (collcheck's contract, as a
 * NaN operand gives NaN), which `x != x` tells for a NaN. */
#define RING_REDUCE(TYPE)                                                            \
  static void reduce_##TYPE(TYPE* into, const TYPE* from, size_t count, int op) {    \
    for (size_t i = 0; i < count; ++i) {                                             \
      if (op == COLLCHECK_SUM) into[i] = (TYPE)(into[i] + from[i]);                  \
      else if (op == COLLCHECK_PROD) into[i] = (TYPE)(into[i] * from[i]);            \
      else if (into[i] != into[i]) continue;                                         \
      else if (from[i] != from[i]) into[i] = from[i];                                \
      else if (op == COLLCHECK_MIN) into[i] = from[i] < into[i] ? from[i] : into[i]; \
      else into[i] = from[i] > into[i] ? from[i] : into[i];                          \
    }                                                                                \
  }
RING_REDUCE(int32_t)
RING_REDUCE(uint32_t)
RING_REDUCE(int64_t)
RING_REDUCE(uint64_t)
RING_REDUCE(float)
RING_REDUCE(double)

static size_t element_size(int dtype) {
  return dtype == COLLCHECK_INT32 || dtype == COLLCHECK_UINT32 || dtype == COLLCHECK_FLOAT32 ? 4 : 8;
}

/* Signed sums and products wrap (collcheck's inputs overflow on purpose): they are computed as
 * unsigned. */
static void reduce(void* into, const void* from, size_t count, int dtype, int op) {
  switch (dtype) {
    case COLLCHECK_INT32:
      if (op == COLLCHECK_SUM || op == COLLCHECK_PROD) reduce_uint32_t(into, from, count, op);
      else reduce_int32_t(into, from, count, op);
      break;
    case COLLCHECK_UINT32: reduce_uint32_t(into, from, count, op); break;
    case COLLCHECK_INT64:
      if (op == COLLCHECK_SUM || op == COLLCHECK_PROD) reduce_uint64_t(into, from, count, op);
      else reduce_int64_t(into, from, count, op);
      break;
    case COLLCHECK_UINT64: reduce_uint64_t(into, from, count, op); break;
    case COLLCHECK_FLOAT32: reduce_float(into, from, count, op); break;
    default: reduce_double(into, from, count, op); break;
  }
}

/* ---- the ring ----------------------------------------------------------------------------- */

/* Block b of nranks blocks over count elements: [begin, end). */
static void block_bounds(const struct ring* ring, size_t count, int b, size_t* begin, size_t* end) {
  const size_t n = (size_t)ring->nranks;
  if (ring->bug == BUG_BLOCK_BOUNDARY) {
    *begin = ((size_t)b * count + n - 1) / n;
    *end = ((size_t)b + 1) * count / n;
    if (*end < *begin) *end = *begin;
    return;
  }
  const size_t base = count / n, extra = count % n, index = (size_t)b;
  *begin = index * base + (index < extra ? index : extra);
  *end = *begin + base + (index < extra ? 1 : 0);
}

static int wrap(int index, int n) { return ((index % n) + n) % n; }

/* The steps of a reduce-scatter phase: nranks - 1, or the pairs' bound of bug=odd-ranks. */
static int reduce_steps(const struct ring* ring) {
  return ring->bug == BUG_ODD_RANKS ? ring->nranks / 2 * 2 - 1 : ring->nranks - 1;
}

/* The ring over `work`, whose blocks block_bounds gives (all-reduce) or are `count` long each. */
static int ring_pass(struct ring* ring, char* work, size_t count, int dtype, int op, int fixed_blocks, int reducing,
                     int first_send, char* scratch) {
  const size_t element = element_size(dtype);
  const int n = ring->nranks;
  const int steps = reducing ? reduce_steps(ring) : n - 1;
  for (int step = 0; step < steps; ++step) {
    const int out_block = wrap(first_send - step, n), in_block = wrap(first_send - step - 1, n);
    size_t out_begin = (size_t)out_block * count, out_end = out_begin + count;
    size_t in_begin = (size_t)in_block * count, in_end = in_begin + count;
    if (!fixed_blocks) {
      block_bounds(ring, count, out_block, &out_begin, &out_end);
      block_bounds(ring, count, in_block, &in_begin, &in_end);
    }
    char* in = reducing ? scratch : work + in_begin * element;
    if (exchange(ring, work + out_begin * element, (out_end - out_begin) * element, in,
                 (in_end - in_begin) * element) != COLLCHECK_PLUGIN_OK)
      return COLLCHECK_PLUGIN_ERROR;
    if (reducing) reduce(work + in_begin * element, scratch, in_end - in_begin, dtype, op);
  }
  return COLLCHECK_PLUGIN_OK;
}

static int all_reduce(struct ring* ring, const collcheck_call_v1* call) {
  const size_t element = element_size(call->dtype);
  char* work = call->recv;
  if (call->count == 0) return COLLCHECK_PLUGIN_OK;
  if (work != call->send) memcpy(work, call->send, call->count * element);
  if (ring->nranks == 1) return COLLCHECK_PLUGIN_OK;
  char* scratch = malloc((call->count / (size_t)ring->nranks + 1) * element);
  if (scratch == NULL) return fail(ring->error, ring->error_size, "%s", "out of memory");
  int rc = ring_pass(ring, work, call->count, call->dtype, call->op, 0, 1, ring->rank, scratch);
  /* Rank r now holds block r + 1 reduced; the all-gather phase starts by sending it. */
  if (rc == COLLCHECK_PLUGIN_OK)
    rc = ring_pass(ring, work, call->count, call->dtype, call->op, 0, 0, ring->rank + 1, NULL);
  free(scratch);
  return rc;
}

static int all_gather(struct ring* ring, const collcheck_call_v1* call) {
  const size_t bytes = call->count * element_size(call->dtype);
  char* mine = (char*)call->recv + (size_t)ring->rank * bytes;
  if (call->count == 0) return COLLCHECK_PLUGIN_OK;
  if (mine != call->send) memcpy(mine, call->send, bytes);
  return ring_pass(ring, call->recv, call->count, call->dtype, call->op, 1, 0, ring->rank, NULL);
}

static int reduce_scatter(struct ring* ring, const collcheck_call_v1* call) {
  const size_t bytes = call->count * element_size(call->dtype);
  if (call->count == 0) return COLLCHECK_PLUGIN_OK;
  char* work = malloc(bytes * (size_t)ring->nranks + bytes);
  if (work == NULL) return fail(ring->error, ring->error_size, "%s", "out of memory");
  memcpy(work, call->send, bytes * (size_t)ring->nranks);
  int rc = ring_pass(ring, work, call->count, call->dtype, call->op, 1, 1, ring->rank - 1,
                     work + bytes * (size_t)ring->nranks);
  if (rc == COLLCHECK_PLUGIN_OK) {
    char* out = call->recv;
    if (call->in_place && ring->bug == BUG_IN_PLACE_OFFSET) out = (char*)call->send;
    memcpy(out, work + (size_t)ring->rank * bytes, bytes);
  }
  free(work);
  return rc;
}

static int ring_run(void* context, const collcheck_call_v1* call, char* error, size_t error_size) {
  struct ring* ring = context;
  ring->error = error;
  ring->error_size = error_size;
  ring->deadline = call->deadline;
  ring->slice = ring->option_slice;
  for (int k = 0; k < call->knob_count; ++k) {
    if (strcmp(call->knobs[k].key, "slice") == 0 && !parse_size(call->knobs[k].value, 64, 1u << 20, &ring->slice))
      return fail(error, error_size, "slice=%s: must be 64..1048576 bytes", call->knobs[k].value);
  }
  switch (call->collective) {
    case COLLCHECK_ALLREDUCE: return all_reduce(ring, call);
    case COLLCHECK_ALLGATHER: return all_gather(ring, call);
    case COLLCHECK_REDUCESCATTER: return reduce_scatter(ring, call);
    default: return fail(error, error_size, "%s", "not a collective of this plugin");
  }
}

__attribute__((visibility("default"))) const collcheck_backend_v1 collcheck_backend_plugin_v1 = {
    COLLCHECK_PLUGIN_ABI_VERSION_1, "ring example", ring_capabilities, ring_init, ring_run, ring_finalize};
