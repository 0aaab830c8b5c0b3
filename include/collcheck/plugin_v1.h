/* collcheck's backend plugin ABI, version 1: the C struct a user's backend exports so that
 * `collcheck --backend plugin:PATH[:key=value,...]` can load it with dlopen and test it.
 * Kept as it is once released; a later version comes beside it in plugin_v2.h (plugin.h). */
#ifndef COLLCHECK_PLUGIN_V1_H
#define COLLCHECK_PLUGIN_V1_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The symbol a version-1 plugin exports: a collcheck_backend_v1 with abi_version = 1. */
#define COLLCHECK_PLUGIN_SYMBOL_V1 "collcheck_backend_plugin_v1"

/* Return codes of every function below. */
#define COLLCHECK_PLUGIN_OK 0
#define COLLCHECK_PLUGIN_ERROR 1

/* Collectives, as collcheck means them (docs/oracle.md), with NCCL's counts: all-gather's count
 * is what each rank contributes, reduce-scatter's what each rank receives. */
typedef enum {
  COLLCHECK_ALLREDUCE = 0,
  COLLCHECK_ALLGATHER = 1,
  COLLCHECK_REDUCESCATTER = 2,
  COLLCHECK_ALLTOALL = 3,
  COLLCHECK_BROADCAST = 4,
  COLLCHECK_REDUCE = 5
} collcheck_collective_v1;

typedef enum {
  COLLCHECK_INT8 = 0,
  COLLCHECK_UINT8 = 1,
  COLLCHECK_INT32 = 2,
  COLLCHECK_UINT32 = 3,
  COLLCHECK_INT64 = 4,
  COLLCHECK_UINT64 = 5,
  COLLCHECK_FLOAT16 = 6,
  COLLCHECK_BFLOAT16 = 7,
  COLLCHECK_FLOAT32 = 8,
  COLLCHECK_FLOAT64 = 9
} collcheck_dtype_v1;

typedef enum {
  COLLCHECK_SUM = 0,
  COLLCHECK_PROD = 1,
  COLLCHECK_MIN = 2,
  COLLCHECK_MAX = 3,
  COLLCHECK_AVG = 4
} collcheck_op_v1;

/* Where a plugin's buffers live. */
typedef enum { COLLCHECK_MEMORY_HOST = 0, COLLCHECK_MEMORY_CUDA = 1 } collcheck_memory_v1;

/* One `key=value` of the plugin's options (`plugin:./libmine.so:bug=offset,ports=2`) or of the
 * knobs collcheck drew for one call. Both strings are NUL-terminated and owned by collcheck. */
typedef struct {
  const char* key;
  const char* value;
} collcheck_option_v1;

/* A knob the plugin takes as an option, which collcheck may draw per call as a search over the
 * plugin's variants: an integer in low..high, `fallback` when the options leave it out. */
typedef struct {
  const char* name;
  uint64_t low, high, fallback;
} collcheck_knob_v1;

/* What the plugin runs. A bit set holds 1u << value for each value it takes
 * (1u << COLLCHECK_ALLREDUCE | 1u << COLLCHECK_ALLGATHER, ...). Cases outside are never run. */
typedef struct {
  uint32_t collectives;           /* bits of collcheck_collective_v1 */
  uint32_t dtypes;                /* bits of collcheck_dtype_v1 */
  uint32_t ops;                   /* bits of collcheck_op_v1 (for the collectives that reduce) */
  int in_place;                   /* nonzero: runs in place (send inside recv, as NCCL lays them out) */
  int memory;                     /* a collcheck_memory_v1 */
  int min_ranks;                  /* 1 or more */
  int max_ranks;                  /* min_ranks or more */
  int deterministic;              /* nonzero: the same call twice gives the same bits */
  const collcheck_knob_v1* knobs; /* knob_count entries, owned by the plugin, alive while it is loaded */
  int knob_count;
} collcheck_capabilities_v1;

/* The out-of-band allgather collcheck lends the plugin during init, over a channel that no fault
 * touches (the launched world's control channel; MPI under mpirun). Collective: every rank calls
 * it, the same number of times, with the same `bytes`.
 * Inputs:  - oob: init's `oob` argument
 *          - mine: this rank's `bytes` bytes
 * Outputs: - all: nranks * bytes bytes, rank r's block at all + r * bytes
 * Returns COLLCHECK_PLUGIN_OK, or COLLCHECK_PLUGIN_ERROR when a rank is gone (give up init). */
typedef int (*collcheck_allgather_v1)(void* oob, const void* mine, size_t bytes, void* all);

/* One collective call on one rank. Every rank of the world makes the same call at once. */
typedef struct {
  int collective; /* a collcheck_collective_v1 the capabilities list */
  int dtype;      /* a collcheck_dtype_v1 they list */
  int op;         /* a collcheck_op_v1 they list; meaningless where the collective does not reduce */
  size_t count;   /* elements, NCCL's count for the collective (see collcheck_collective_v1) */
  int root;       /* broadcast and reduce: the root rank; any rank otherwise: ignore it */
  /* This rank's input (send) and output (recv), laid out as NCCL lays them. Sizes in elements:
   * all-reduce, broadcast, reduce count/count; all-gather count/nranks*count; reduce-scatter
   * nranks*count/count; all-to-all nranks*count/nranks*count. They may be misaligned by a few
   * elements, and may be NULL where empty. In place (in_place nonzero) one buffer holds both:
   * all-gather's send is recv + rank*count, reduce-scatter's recv is send + rank*count, the
   * others' send == recv. Bytes just outside either buffer must stay untouched. */
  const void* send;
  void* recv;
  int in_place;
  void* stream;    /* memory COLLCHECK_MEMORY_CUDA: the cudaStream_t to run on; NULL on the host */
  double deadline; /* seconds the call may wait for its peers before it gives up with an error */
  /* Knobs collcheck drew for this call (capabilities' names), on top of the options. */
  const collcheck_option_v1* knobs;
  int knob_count;
} collcheck_call_v1;

typedef struct {
  /* COLLCHECK_PLUGIN_ABI_VERSION_1 (1): the loader refuses any other value. */
  int abi_version;

  /* The plugin's name, for reports. */
  const char* name;

  /* What the plugin runs with these options. Called in the process that drives the test (which
   * never calls init), before any world exists, and in every rank.
   * Inputs:  - options, option_count: the plugin's own `key=value` options
   *          - error, error_size: room for a NUL-terminated message
   * Outputs: - capabilities: filled in
   * Returns COLLCHECK_PLUGIN_OK, or COLLCHECK_PLUGIN_ERROR with a message in `error` (an unknown
   * option, a bad value): collcheck reports it naming the plugin, before it starts any world. */
  int (*capabilities)(const collcheck_option_v1* options, int option_count, collcheck_capabilities_v1* capabilities,
                      char* error, size_t error_size);

  /* Sets up one rank: every rank of the world calls it at once, in its own process (or thread,
   * in collcheck's own tests: keep every state in the context). The plugin builds its transport
   * (sockets, MPI, NCCL ids, IPC handles) by exchanging what it needs through `allgather`.
   * Inputs:  - rank, nranks: this rank and the world's size
   *          - options, option_count: the plugin's own `key=value` options
   *          - allgather, oob: the out-of-band allgather (valid during init only)
   *          - error, error_size: room for a NUL-terminated message
   * Outputs: - context: the plugin's state for this rank, passed to run and finalize
   * Returns COLLCHECK_PLUGIN_OK, or COLLCHECK_PLUGIN_ERROR with a message in `error`. */
  int (*init)(int rank, int nranks, const collcheck_option_v1* options, int option_count,
              collcheck_allgather_v1 allgather, void* oob, void** context, char* error, size_t error_size);

  /* Runs one collective call and returns when this rank's output is complete.
   * Inputs:  - context: init's
   *          - call: the call (see collcheck_call_v1)
   *          - error, error_size: room for a NUL-terminated message
   * Returns COLLCHECK_PLUGIN_OK, or COLLCHECK_PLUGIN_ERROR with a message in `error` (a peer
   * gone, a timeout): collcheck counts the call as detected, not as a wrong result. A call that
   * never returns is a hang and a process that dies a crash; either costs a world, not the run. */
  int (*run)(void* context, const collcheck_call_v1* call, char* error, size_t error_size);

  /* Releases what init set up. Every rank calls it at once as its world ends in order (a world
   * that hung or crashed is killed instead). context: init's. */
  void (*finalize)(void* context);
} collcheck_backend_v1;

#define COLLCHECK_PLUGIN_ABI_VERSION_1 1

#ifdef __cplusplus
}
#endif

#endif /* COLLCHECK_PLUGIN_V1_H */
