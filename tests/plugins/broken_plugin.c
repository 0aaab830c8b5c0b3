/* Plugins broken one way each, for the loader's tests (tests/impls/plugin_test.cc): built with
 * one of BROKEN_NO_SYMBOL, BROKEN_VERSION_2 (exports only a v2 symbol), BROKEN_ABI_FIELD (a v1
 * symbol whose abi_version says 7), BROKEN_INIT (init fails with a message), BROKEN_BAD_MEMORY
 * (its memory is 5, no collcheck_memory_v1) or BROKEN_CUDA_MEMORY (a good plugin on device
 * memory but for init, which fails everywhere). */
#include "collcheck/plugin.h"

#include <stdio.h>

static int capabilities(const collcheck_option_v1* options, int option_count, collcheck_capabilities_v1* out,
                        char* error, size_t error_size) {
  (void)options;
  (void)option_count;
  (void)error;
  (void)error_size;
  out->collectives = 1u << COLLCHECK_ALLREDUCE;
  out->dtypes = 1u << COLLCHECK_INT32;
  out->ops = 1u << COLLCHECK_SUM;
  out->min_ranks = 1;
  out->max_ranks = 8;
#if defined(BROKEN_CUDA_MEMORY)
  out->memory = COLLCHECK_MEMORY_CUDA;
#elif defined(BROKEN_BAD_MEMORY)
  out->memory = 5;
#endif
  return COLLCHECK_PLUGIN_OK;
}

static int init(int rank, int nranks, const collcheck_option_v1* options, int option_count,
                collcheck_allgather_v1 allgather, void* oob, void** context, char* error, size_t error_size) {
  (void)nranks;
  (void)options;
  (void)option_count;
  (void)allgather;
  (void)oob;
  (void)context;
  snprintf(error, error_size, "no transport for rank %d here", rank);
  return COLLCHECK_PLUGIN_ERROR;
}

static int run(void* context, const collcheck_call_v1* call, char* error, size_t error_size) {
  (void)context;
  (void)call;
  (void)error;
  (void)error_size;
  return COLLCHECK_PLUGIN_ERROR;
}

static void finalize(void* context) { (void)context; }

#if defined(BROKEN_VERSION_2)
__attribute__((visibility("default")))
const collcheck_backend_v1 collcheck_backend_plugin_v2 = {2, "broken", capabilities, init, run, finalize};
#elif defined(BROKEN_ABI_FIELD)
__attribute__((visibility("default")))
const collcheck_backend_v1 collcheck_backend_plugin_v1 = {7, "broken", capabilities, init, run, finalize};
#elif defined(BROKEN_INIT) || defined(BROKEN_CUDA_MEMORY) || defined(BROKEN_BAD_MEMORY)
__attribute__((visibility("default"))) const collcheck_backend_v1 collcheck_backend_plugin_v1 = {
    COLLCHECK_PLUGIN_ABI_VERSION_1, "broken", capabilities, init, run, finalize};
#else
/* BROKEN_NO_SYMBOL: the struct under a name the loader does not look for. */
__attribute__((visibility("default"))) const collcheck_backend_v1 collcheck_backend_plugin = {
    COLLCHECK_PLUGIN_ABI_VERSION_1, "broken", capabilities, init, run, finalize};
#endif
