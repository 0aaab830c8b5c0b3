// nccl_avg_probe: NCCL's average on one rank with nothing of collcheck's harness in between, to
// tell NCCL's part from ours in what `check --backend nccl` found on an H200 (docs/gpu.md): plain
// cudaMalloc'd buffers, the inputs collcheck generates for the case, one ncclAllReduce (ncclAvg,
// and ncclSum beside it) on a one-rank communicator on a non-blocking stream, out of place and in
// place, then captured in a CUDA graph and replayed with new inputs written before each replay.
// Each run twice: `staged`, the inputs copied with cudaMemcpy from pageable memory and the call
// made at once, as the harness did (the copy's DMA may still be landing: CUDA's API
// synchronization behavior), and `landed`, the legacy stream waited for first, as it does now. On
// one rank every average is its input, so each output is compared with its input bit for bit.
// Prints one line per call; exits 1 where a `landed` output differs. Needs a GPU.
#include <cuda_runtime.h>
#include <nccl.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "impls/vendors/nccl/nccl_types.h"
#include "reference/case.h"
#include "reference/inputs.h"

namespace {

using collcheck::Case;

bool ok(cudaError_t status, const char* what) {
  if (status == cudaSuccess) return true;
  std::printf("%s: %s\n", what, cudaGetErrorString(status));
  return false;
}
bool ok(ncclResult_t status, const char* what) {
  if (status == ncclSuccess) return true;
  std::printf("%s: %s\n", what, ncclGetErrorString(status));
  return false;
}

// The input of call `call` (the case's seed plus it), as collcheck writes it.
std::vector<std::byte> input_of(Case c, std::uint64_t call) {
  c.seed += call;
  std::vector<std::byte> bytes(c.count * collcheck::size_of(c.dtype));
  collcheck::InputGenerator(c).fill(0, 0, bytes);
  return bytes;
}

// Elements whose bits differ, and the first of them.
std::string compare(const std::vector<std::byte>& want, const std::vector<std::byte>& got, std::size_t element) {
  std::size_t wrong = 0, first = 0;
  for (std::size_t k = 0; k < want.size() / element; ++k) {
    if (std::memcmp(want.data() + k * element, got.data() + k * element, element) == 0) continue;
    if (wrong++ == 0) first = k;
  }
  return wrong == 0 ? "same as the input"
                    : std::to_string(wrong) + " elements differ from the input, the first " + std::to_string(first);
}

struct Probe {
  ncclComm_t comm = nullptr;
  cudaStream_t stream = nullptr;
  bool all_same = true;

  // One call (or, graphed, a captured call replayed `calls` times with new inputs each time).
  void run(const std::string& text, ncclRedOp_t op, bool in_place, bool graphed, int calls, bool landed) {
    const Case c = collcheck::parse_case(text).value();
    const std::size_t element = collcheck::size_of(c.dtype), bytes = c.count * element;
    void *in = nullptr, *out = nullptr;
    if (!ok(cudaMalloc(&in, bytes), "cudaMalloc") || !ok(cudaMalloc(&out, bytes), "cudaMalloc")) return;
    void* target = in_place ? in : out;
    cudaGraph_t graph = nullptr;
    cudaGraphExec_t exec = nullptr;
    if (graphed) {
      ok(cudaStreamBeginCapture(stream, cudaStreamCaptureModeRelaxed), "cudaStreamBeginCapture");
      ok(ncclAllReduce(in, target, c.count, *collcheck::nccl_dtype(c.dtype), op, comm, stream),
         "ncclAllReduce (captured)");
      ok(cudaStreamEndCapture(stream, &graph), "cudaStreamEndCapture");
      ok(cudaGraphInstantiate(&exec, graph, 0), "cudaGraphInstantiate");
    }
    for (int call = 0; call < calls; ++call) {
      const std::vector<std::byte> input = input_of(c, static_cast<std::uint64_t>(call));
      ok(cudaMemset(out, 0, bytes), "cudaMemset");
      ok(cudaMemcpy(in, input.data(), bytes, cudaMemcpyHostToDevice), "cudaMemcpy");
      if (landed) ok(cudaStreamSynchronize(cudaStreamLegacy), "cudaStreamSynchronize (legacy)");
      if (graphed) ok(cudaGraphLaunch(exec, stream), "cudaGraphLaunch");
      else ok(ncclAllReduce(in, target, c.count, *collcheck::nccl_dtype(c.dtype), op, comm, stream), "ncclAllReduce");
      ok(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
      std::vector<std::byte> got(bytes);
      ok(cudaMemcpy(got.data(), target, bytes, cudaMemcpyDeviceToHost), "cudaMemcpy");
      const std::string verdict = compare(input, got, element);
      all_same = all_same && (!landed || verdict == "same as the input");
      std::printf("%-75s %-4s %-12s %-6s %-6s call %d: %s\n", text.c_str(), op == ncclAvg ? "avg" : "sum",
                  in_place ? "in place" : "out of place", graphed ? "graph" : "", landed ? "landed" : "staged", call,
                  verdict.c_str());
    }
    if (exec != nullptr) cudaGraphExecDestroy(exec);
    if (graph != nullptr) cudaGraphDestroy(graph);
    cudaFree(in);
    cudaFree(out);
  }
};

}  // namespace

int main() {
  int version = 0;
  ncclGetVersion(&version);
  std::printf("nccl_avg_probe: NCCL %d\n", version);
  Probe probe;
  const int devices[] = {0};
  if (!ok(ncclCommInitAll(&probe.comm, 1, devices), "ncclCommInitAll")) return 2;
  if (!ok(cudaStreamCreateWithFlags(&probe.stream, cudaStreamNonBlocking), "cudaStreamCreate")) return 2;
  const char* plain[] = {"allreduce/f64/avg/n=3573/ranks=1/root=0/outofplace/offset=0/values=exact/seed=0",
                         "allreduce/f64/avg/n=1023/ranks=1/root=0/outofplace/offset=0/values=exact/seed=0",
                         "allreduce/i64/avg/n=3573/ranks=1/root=0/outofplace/offset=0/values=exact/seed=0"};
  for (const char* text : plain) {
    for (const ncclRedOp_t op : {ncclAvg, ncclSum}) {
      for (const bool in_place : {false, true}) {
        for (const bool landed : {false, true}) probe.run(text, op, in_place, false, 1, landed);
      }
    }
  }
  const char* graphed[] = {"allreduce/i64/avg/n=40455/ranks=1/root=0/outofplace/offset=0/values=exact/seed=1",
                           "allreduce/f64/avg/n=40455/ranks=1/root=0/outofplace/offset=0/values=exact/seed=1",
                           "allreduce/u64/avg/n=40455/ranks=1/root=0/outofplace/offset=0/values=exact/seed=1"};
  for (const char* text : graphed) {
    for (const bool landed : {false, true}) {
      probe.run(text, ncclAvg, false, true, 3, landed);
      probe.run(text, ncclAvg, false, false, 3, landed);
      probe.run(text, ncclSum, false, true, 3, landed);
    }
  }
  ncclCommDestroy(probe.comm);
  cudaStreamDestroy(probe.stream);
  std::printf("nccl_avg_probe: %s\n",
              probe.all_same ? "every landed output is its input" : "some landed outputs differ");
  return probe.all_same ? 0 : 1;
}
