// Gloo's algorithms as GlooCalls: one table entry per algorithm the installed Gloo ships that maps
// onto one of our collectives, each built on one of two adapters, one per style of Gloo's API.
#include "impls/vendors/gloo/gloo_algorithms.h"

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include <gloo/allgather.h>
#include <gloo/allgather_ring.h>
#include <gloo/allgatherv.h>
#include <gloo/allreduce.h>
#include <gloo/allreduce_bcube.h>
#include <gloo/allreduce_halving_doubling.h>
#include <gloo/allreduce_ring.h>
#include <gloo/allreduce_ring_chunked.h>
#include <gloo/alltoall.h>
#include <gloo/alltoallv.h>
#include <gloo/broadcast.h>
#include <gloo/broadcast_one_to_all.h>
#include <gloo/common/error.h>
#include <gloo/context.h>
#include <gloo/reduce.h>
#include <gloo/reduce_scatter.h>

#include "reference/counts.h"
#include "reference/dtype.h"

namespace collcheck {
namespace {

// Adding an algorithm is one entry of table() below. Its `make` comes from one of two adapters:
//   function_style<ELEMENTS, gloo::FUNCTION>(set): Gloo's function-style collectives
//     (gloo::allreduce, ...) take an options object; `set` fills it in for a case once, and
//     each run sets the wait's timeout and the tag and calls the function.
//   class_style<ELEMENTS>(build): Gloo's class-style algorithms (gloo::AllreduceRing<T>, ...)
//     are objects built for one case; `build` returns an AlgorithmCall holding one, with the
//     copies the adapter adds around it. They wait as long as their pairs were told.
// ELEMENTS says which element type T the algorithm is instantiated for: Gloo's arithmetic type
// of the dtype where it reduces, an unsigned integer of the element's size where it only moves
// data. `set` and `build` are lambdas without captures, templates over T, given the case's
// Setup<T>.

template <class T>
struct Type {
  using type = T;
};

// Gloo's arithmetic types for our dtypes (gloo::float16 is IEEE half; Gloo has no bfloat16 or
// fp8 in this version). F returns a unique_ptr; null for a dtype Gloo cannot reduce.
template <class F>
auto with_arithmetic_type(DType dtype, F&& f) -> decltype(f(Type<float>{})) {
  switch (dtype) {
    case DType::Int8: return f(Type<std::int8_t>{});
    case DType::UInt8: return f(Type<std::uint8_t>{});
    case DType::Int32: return f(Type<std::int32_t>{});
    case DType::UInt32: return f(Type<std::uint32_t>{});
    case DType::Int64: return f(Type<std::int64_t>{});
    case DType::UInt64: return f(Type<std::uint64_t>{});
    case DType::Float16: return f(Type<gloo::float16>{});
    case DType::Float32: return f(Type<float>{});
    case DType::Float64: return f(Type<double>{});
    default: return nullptr;
  }
}

// Algorithms that only move data see an element as its bytes.
template <class F>
auto with_carrier_type(DType dtype, F&& f) -> decltype(f(Type<std::uint8_t>{})) {
  return by_element_width(dtype, [&f](auto width) { return f(Type<decltype(width)>{}); });
}

enum class Elements { Arithmetic, Bytes };

template <Elements elements, class F>
std::unique_ptr<GlooCall> with_element_type(DType dtype, F&& f) {
  if constexpr (elements == Elements::Arithmetic) {
    return with_arithmetic_type(dtype, f);
  } else {
    return with_carrier_type(dtype, f);
  }
}

// Gloo's own reduction functions: the class-style algorithms take a ReductionFunction, the
// function-style ones a void-pointer function (gloo/math.h).
template <class T>
const gloo::ReductionFunction<T>* reduction_function(RedOp op) {
  switch (op) {
    case RedOp::Prod: return gloo::ReductionFunction<T>::product;
    case RedOp::Min: return gloo::ReductionFunction<T>::min;
    case RedOp::Max: return gloo::ReductionFunction<T>::max;
    default: return gloo::ReductionFunction<T>::sum;
  }
}

template <class T>
gloo::AllreduceOptions::Func reduction_func(RedOp op) {
  using Func = void (*)(void*, const void*, const void*, std::size_t);
  switch (op) {
    case RedOp::Prod: return static_cast<Func>(&gloo::product<T>);
    case RedOp::Min: return static_cast<Func>(&gloo::min<T>);
    case RedOp::Max: return static_cast<Func>(&gloo::max<T>);
    default: return static_cast<Func>(&gloo::sum<T>);
  }
}

std::size_t no_scratch(const Case&) { return 0; }

int int_count(std::size_t count) {
  // The class-style algorithms count elements in an int.
  if (count > static_cast<std::size_t>(INT32_MAX)) throw gloo::Exception("count above INT_MAX: Gloo counts in int");
  return static_cast<int>(count);
}

// What an entry builds its call from: the context, the case and the knobs, and this rank's
// buffers (gloo_algorithms.h, GlooBuffers) as elements of type T.
template <class T>
struct Setup {
  const std::shared_ptr<gloo::Context>& context;
  const Case& shape;
  const GlooKnobs& knobs;
  T* input;
  T* output;
  T* scratch;

  bool is_root() const { return context->rank == shape.root; }
  // Elements of a buffer that holds a block of shape.count per rank.
  std::size_t every_block() const { return shape.count * static_cast<std::size_t>(shape.nranks); }
  // All-gather and reduce-scatter: the elements of each rank's block, the case's counts for the
  // v-collectives (reference/counts.h), shape.count each for the uniform forms.
  std::vector<std::size_t> blocks() const {
    if (per_rank_counts(shape.collective)) return shape.counts;
    return std::vector<std::size_t>(static_cast<std::size_t>(shape.nranks), shape.count);
  }
  // All-to-all: the elements this rank sends to each rank (`sending`) or receives from each.
  std::vector<std::int64_t> pairs(bool sending) const {
    std::vector<std::int64_t> elements;
    for (int peer = 0; peer < shape.nranks; ++peer) {
      const std::size_t count = !per_rank_counts(shape.collective) ? shape.count
                                : sending                          ? pair_count(shape, context->rank, peer)
                                                                   : pair_count(shape, peer, context->rank);
      elements.push_back(static_cast<std::int64_t>(count));
    }
    return elements;
  }
};

using MakeCall = std::unique_ptr<GlooCall> (*)(const std::shared_ptr<gloo::Context>&, const Case&, const GlooKnobs&,
                                               const GlooBuffers&);

// Calls `f(Setup<T>)` for the case's element type T.
template <Elements elements, class F>
std::unique_ptr<GlooCall> with_setup(const std::shared_ptr<gloo::Context>& context, const Case& shape,
                                     const GlooKnobs& knobs, const GlooBuffers& buffers, F&& f) {
  return with_element_type<elements>(shape.dtype, [&]<class T>(Type<T>) -> std::unique_ptr<GlooCall> {
    return f(Setup<T>{context, shape, knobs, reinterpret_cast<T*>(buffers.input), reinterpret_cast<T*>(buffers.output),
                      reinterpret_cast<T*>(buffers.scratch)});
  });
}

// ---- Function style.

// The options type a function-style collective takes (gloo::allreduce takes it as const&).
template <class Options>
Options options_of(void (*)(Options&));
template <class Options>
Options options_of(void (*)(const Options&));

template <auto collective>
class FunctionCall final : public GlooCall {
 public:
  using Options = decltype(options_of(collective));
  explicit FunctionCall(const std::shared_ptr<gloo::Context>& context) : options(context) {}
  void run(std::chrono::milliseconds timeout, std::uint32_t tag) override {
    options.setTimeout(timeout);
    options.setTag(tag);
    collective(options);
  }

  Options options;
};

template <Elements elements, auto collective, class Set>
std::unique_ptr<GlooCall> make_function_call(const std::shared_ptr<gloo::Context>& context, const Case& shape,
                                             const GlooKnobs& knobs, const GlooBuffers& buffers) {
  return with_setup<elements>(context, shape, knobs, buffers, [&](const auto& setup) -> std::unique_ptr<GlooCall> {
    auto call = std::make_unique<FunctionCall<collective>>(context);
    Set{}(call->options, setup);
    return call;
  });
}

template <Elements elements, auto collective, class Set>
MakeCall function_style(Set) {
  return make_function_call<elements, collective, Set>;
}

// ---- Class style.

// A copy the adapter adds around a class-style algorithm: none where there is nothing to copy or
// `from` is `to`.
struct Copy {
  const std::byte* from = nullptr;
  std::byte* to = nullptr;
  std::size_t bytes = 0;
  void operator()() const {
    if (bytes > 0 && from != to) std::memcpy(to, from, bytes);
  }
};

template <class T>
Copy copy(const T* from, T* to, std::size_t elements) {
  return Copy{reinterpret_cast<const std::byte*>(from), reinterpret_cast<std::byte*>(to), elements * sizeof(T)};
}

class AlgorithmCall final : public GlooCall {
 public:
  explicit AlgorithmCall(std::unique_ptr<gloo::Algorithm> algorithm, Copy before = {}, Copy after = {})
      : algorithm_(std::move(algorithm)), before_(before), after_(after) {}
  void run(std::chrono::milliseconds, std::uint32_t) override {
    before_();
    algorithm_->run();
    after_();
  }

 private:
  std::unique_ptr<gloo::Algorithm> algorithm_;
  Copy before_;
  Copy after_;
};

template <Elements elements, class Build>
std::unique_ptr<GlooCall> make_algorithm_call(const std::shared_ptr<gloo::Context>& context, const Case& shape,
                                              const GlooKnobs& knobs, const GlooBuffers& buffers) {
  return with_setup<elements>(context, shape, knobs, buffers, Build{});
}

template <Elements elements, class Build>
MakeCall class_style(Build) {
  return make_algorithm_call<elements, Build>;
}

// The class-style all-reduces: Gloo reduces in place on ptrs[0]; out of place, the adapter copies
// the input into the output first (the copy is ours, the algorithm is Gloo's).
template <template <class> class Algorithm, class T>
std::unique_ptr<GlooCall> allreduce_in_output(const Setup<T>& setup) {
  return std::make_unique<AlgorithmCall>(
      std::make_unique<Algorithm<T>>(setup.context, std::vector<T*>{setup.output}, int_count(setup.shape.count),
                                     reduction_function<T>(setup.shape.op)),
      copy(setup.input, setup.output, setup.shape.count));
}

template <template <class> class Algorithm>
MakeCall class_allreduce() {
  return class_style<Elements::Arithmetic>(
      []<class T>(const Setup<T>& setup) { return allreduce_in_output<Algorithm>(setup); });
}

// ---- The table's builders and setters that decide something; the rest are written in place.

// gloo::AllreduceBcube: Gloo documents that the number of processes must be divisible by the
// base; refuse the rest rather than run Gloo outside its contract.
constexpr auto build_allreduce_bcube = []<class T>(const Setup<T>& setup) {
  const int nranks = setup.shape.nranks;
  if (nranks > 1 && nranks % setup.knobs.base != 0) {
    throw gloo::Exception("gloo::AllreduceBcube needs ranks divisible by base " + std::to_string(setup.knobs.base) +
                          " (Gloo's documented precondition), got " + std::to_string(nranks) + " ranks");
  }
  setup.context->base = setup.knobs.base;
  return allreduce_in_output<gloo::AllreduceBcube>(setup);
};

// gloo::allreduce: the knobs pick Gloo's algorithm and its segment size.
constexpr auto set_allreduce = []<class T>(auto& options, const Setup<T>& setup) {
  options.setAlgorithm(setup.knobs.algorithm == "bcube" ? gloo::AllreduceOptions::Algorithm::BCUBE
                                                        : gloo::AllreduceOptions::Algorithm::RING);
  if (!setup.shape.in_place) options.setInput(setup.input, setup.shape.count);
  options.setOutput(setup.output, setup.shape.count);
  options.setReduceFunction(reduction_func<T>(setup.shape.op));
  if (setup.knobs.segment > 0) options.setMaxSegmentSize(setup.knobs.segment);
};

// gloo::reduce.
constexpr auto set_reduce = []<class T>(auto& options, const Setup<T>& setup) {
  // Gloo's reduce writes partial results into its output on every rank: a non-root rank
  // out of place gives it scratch, in place its one buffer.
  T* output = setup.is_root() ? setup.output : (setup.shape.in_place ? setup.input : setup.scratch);
  if (!setup.shape.in_place) options.setInput(setup.input, setup.shape.count);
  options.setOutput(output, setup.shape.count);
  options.setRoot(setup.shape.root);
  options.setReduceFunction(reduction_func<T>(setup.shape.op));
  if (setup.knobs.segment > 0) options.setMaxSegmentSize(setup.knobs.segment);
};

// ---- The table.

const std::vector<GlooAlgorithm>& table() {
  using C = Collective;
  using enum Elements;
  static const std::vector<GlooAlgorithm> algorithms = {
      {"allreduce_ring",
       "gloo::AllreduceRing<T>",
       {C::AllReduce},
       true,
       {},
       "in place on one buffer; out of place the adapter copies input to output first",
       no_scratch,
       class_allreduce<gloo::AllreduceRing>()},
      {"allreduce_ring_chunked",
       "gloo::AllreduceRingChunked<T>",
       {C::AllReduce},
       true,
       {},
       "as allreduce_ring",
       no_scratch,
       class_allreduce<gloo::AllreduceRingChunked>()},
      {"allreduce_halving_doubling",
       "gloo::AllreduceHalvingDoubling<T>",
       {C::AllReduce},
       true,
       {},
       "as allreduce_ring",
       no_scratch,
       class_allreduce<gloo::AllreduceHalvingDoubling>()},
      {"allreduce_bcube",
       "gloo::AllreduceBcube<T>",
       {C::AllReduce},
       true,
       {"base"},
       "as allreduce_ring; ranks must be divisible by base",
       no_scratch,
       class_style<Arithmetic>(build_allreduce_bcube)},
      {"allreduce",
       "gloo::allreduce",
       {C::AllReduce},
       true,
       {"algorithm", "segment"},
       "native in and out of place",
       no_scratch,
       function_style<Arithmetic, gloo::allreduce>(set_allreduce)},
      {"reduce",
       "gloo::reduce",
       {C::Reduce},
       true,
       {"segment"},
       "non-root ranks give Gloo a scratch output out of place",
       [](const Case& shape) { return shape.count; },
       function_style<Arithmetic, gloo::reduce>(set_reduce)},
      // Gloo reduces in place on one buffer of all ranks' blocks and leaves this rank's block at
      // its start (not at rank * count, NCCL's in-place place), so the adapter runs it on a
      // scratch copy of the input and copies the block out. Its recvElems are the blocks' sizes:
      // the case's counts for reducescatterv.
      {"reduce_scatter_halving_doubling",
       "gloo::ReduceScatterHalvingDoubling<T>",
       {C::ReduceScatter, C::ReduceScatterV},
       true,
       {},
       "runs on a scratch copy of the input; the block is copied out; recvElems: the counts",
       [](const Case& shape) { return input_elements(shape); },
       class_style<Arithmetic>([]<class T>(const Setup<T>& setup) {
         std::vector<int> blocks;
         for (std::size_t block : setup.blocks()) blocks.push_back(int_count(block));
         const std::size_t total = input_elements(setup.shape);
         const auto own = static_cast<std::size_t>(blocks[static_cast<std::size_t>(setup.context->rank)]);
         return std::make_unique<AlgorithmCall>(std::make_unique<gloo::ReduceScatterHalvingDoubling<T>>(
                                                    setup.context, std::vector<T*>{setup.scratch}, int_count(total),
                                                    blocks, reduction_function<T>(setup.shape.op)),
                                                copy(setup.input, setup.scratch, total),
                                                copy(setup.scratch, setup.output, own));
       })},
      // In place gloo::allgather and gloo::allgatherv take no input: it already lies at
      // output + rank * count.
      {"allgather",
       "gloo::allgather",
       {C::AllGather},
       true,
       {},
       "native in and out of place",
       no_scratch,
       function_style<Bytes, gloo::allgather>([]<class T>(auto& options, const Setup<T>& setup) {
         if (!setup.shape.in_place) options.setInput(setup.input, setup.shape.count);
         options.setOutput(setup.output, setup.every_block());
       })},
      {"allgatherv",
       "gloo::allgatherv",
       {C::AllGather, C::AllGatherV},
       true,
       {},
       "native in and out of place; allgatherv: the counts as Gloo's elements per rank",
       no_scratch,
       function_style<Bytes, gloo::allgatherv>([]<class T>(auto& options, const Setup<T>& setup) {
         const std::vector<std::size_t> blocks = setup.blocks();
         if (!setup.shape.in_place)
           options.setInput(setup.input, blocks[static_cast<std::size_t>(setup.context->rank)]);
         options.setOutput(setup.output, blocks);
       })},
      // In place Gloo copies the input onto itself.
      {"allgather_ring",
       "gloo::AllgatherRing<T>",
       {C::AllGather},
       true,
       {},
       "native",
       no_scratch,
       class_style<Bytes>([]<class T>(const Setup<T>& setup) {
         return std::make_unique<AlgorithmCall>(std::make_unique<gloo::AllgatherRing<T>>(
             setup.context, std::vector<const T*>{setup.input}, setup.output, int_count(setup.shape.count)));
       })},
      {"alltoall",
       "gloo::alltoall",
       {C::AllToAll},
       false,
       {},
       "out of place only (Gloo needs two buffers)",
       no_scratch,
       function_style<Bytes, gloo::alltoall>([]<class T>(auto& options, const Setup<T>& setup) {
         options.setInput(setup.input, setup.every_block());
         options.setOutput(setup.output, setup.every_block());
       })},
      {"alltoallv",
       "gloo::alltoallv",
       {C::AllToAll, C::AllToAllV},
       false,
       {},
       "out of place only; alltoallv: the counts as Gloo's elements per rank",
       no_scratch,
       function_style<Bytes, gloo::alltoallv>([]<class T>(auto& options, const Setup<T>& setup) {
         options.setInput(setup.input, setup.pairs(true));
         options.setOutput(setup.output, setup.pairs(false));
       })},
      // A binomial tree; the root's input is optional: in place it sends from its output.
      {"broadcast",
       "gloo::broadcast",
       {C::Broadcast},
       true,
       {},
       "native in and out of place",
       no_scratch,
       function_style<Bytes, gloo::broadcast>([]<class T>(auto& options, const Setup<T>& setup) {
         if (setup.is_root() && !setup.shape.in_place) options.setInput(setup.input, setup.shape.count);
         options.setOutput(setup.output, setup.shape.count);
         options.setRoot(setup.shape.root);
       })},
      // The root sends to every rank; out of place the root passes {input, output} and Gloo
      // copies locally from the first to the second.
      {"broadcast_one_to_all",
       "gloo::BroadcastOneToAll<T>",
       {C::Broadcast},
       true,
       {},
       "out of place the root passes {input, output}",
       no_scratch,
       class_style<Bytes>([]<class T>(const Setup<T>& setup) {
         const std::vector<T*> pointers = setup.is_root() && !setup.shape.in_place
                                              ? std::vector<T*>{setup.input, setup.output}
                                              : std::vector<T*>{setup.output};
         return std::make_unique<AlgorithmCall>(std::make_unique<gloo::BroadcastOneToAll<T>>(
             setup.context, pointers, setup.shape.count, setup.shape.root, 0));
       })},
  };
  return algorithms;
}

}  // namespace

std::span<const GlooAlgorithm> gloo_algorithms() { return table(); }

std::vector<DType> gloo_dtypes(const GlooAlgorithm& algorithm) {
  std::vector<DType> dtypes;
  for (DType dtype : all_dtypes()) {
    const bool arithmetic = dtype != DType::BFloat16 && dtype != DType::Float8E4M3 && dtype != DType::Float8E5M2;
    if (arithmetic || !reduces(algorithm.collectives.front())) dtypes.push_back(dtype);
  }
  return dtypes;
}

std::vector<std::size_t> gloo_edge_bytes(const GlooAlgorithm& algorithm, const GlooKnobs& knobs) {
  const std::string_view name = algorithm.name;
  // gloo::allreduce and gloo::reduce cut their data into segments of at most maxSegmentSize
  // bytes, 1 MiB unless set (AllreduceOptions::kMaxSegmentSize in gloo/allreduce.h,
  // ReduceOptions::kMaxSegmentSize in gloo/reduce.h), the `segment` knob.
  if (name == "allreduce" || name == "reduce") return {knobs.segment > 0 ? knobs.segment : std::size_t{1} << 20};
  // AllreduceRingChunked's chunks are no less than 256 elements ("chunks of no less than 1024
  // bytes (256 * sizeof(float))", gloo/allreduce_ring_chunked.h): 256 elements of each size.
  if (name == "allreduce_ring_chunked") return {256, 512, 1024, 2048};
  // The TCP transport's one size, the 32 MiB cap on a pair's socket buffers (kMaxSendBufferSize
  // in gloo/transport/tcp/pair.cc), lies beyond check's largest counts: not listed.
  return {};
}

}  // namespace collcheck
