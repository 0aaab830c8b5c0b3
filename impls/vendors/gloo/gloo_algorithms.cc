// Gloo's algorithms as GlooCalls: one adapter per algorithm the installed Gloo ships that maps
// onto one of our collectives, and the TCP full mesh they run on (see gloo_algorithms.h).
#include "impls/vendors/gloo/gloo_algorithms.h"

#include <cstdint>
#include <cstring>
#include <stdexcept>

#include <unistd.h>

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
#include <gloo/transport/context.h>
#include <gloo/transport/tcp/device.h>

namespace collcheck {
namespace {

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
  switch (size_of(dtype)) {
    case 1: return f(Type<std::uint8_t>{});
    case 2: return f(Type<std::uint16_t>{});
    case 4: return f(Type<std::uint32_t>{});
    default: return f(Type<std::uint64_t>{});
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

int int_count(std::size_t count) {
  // The class-style algorithms count elements in an int.
  if (count > static_cast<std::size_t>(INT32_MAX)) throw gloo::Exception("count above INT_MAX: Gloo counts in int");
  return static_cast<int>(count);
}

std::size_t no_scratch(const Case&) { return 0; }

// ---- all-reduce, class style: Gloo reduces in place on ptrs[0]; out of place, the adapter
// copies the input into the output first (the copy is ours, the algorithm is Gloo's).
template <class T, template <class> class Algorithm>
class ClassAllreduce final : public GlooCall {
 public:
  ClassAllreduce(const std::shared_ptr<gloo::Context>& context, const Case& c, const GlooBuffers& b)
      : input_(b.input), output_(b.output), bytes_(c.count * sizeof(T)) {
    algorithm_ = std::make_unique<Algorithm<T>>(context, std::vector<T*>{reinterpret_cast<T*>(output_)},
                                                int_count(c.count), reduction_function<T>(c.op));
  }
  void run(std::chrono::milliseconds, std::uint32_t) override {
    if (input_ != output_ && bytes_ > 0) std::memcpy(output_, input_, bytes_);
    algorithm_->run();
  }

 private:
  std::byte* input_;
  std::byte* output_;
  std::size_t bytes_;
  std::unique_ptr<gloo::Algorithm> algorithm_;
};

template <template <class> class Algorithm>
std::unique_ptr<GlooCall> make_class_allreduce(const std::shared_ptr<gloo::Context>& context, const Case& c,
                                               const GlooKnobs&, const GlooBuffers& b) {
  return with_arithmetic_type(c.dtype, [&](auto type) -> std::unique_ptr<GlooCall> {
    return std::make_unique<ClassAllreduce<typename decltype(type)::type, Algorithm>>(context, c, b);
  });
}

std::unique_ptr<GlooCall> make_bcube(const std::shared_ptr<gloo::Context>& context, const Case& c,
                                     const GlooKnobs& knobs, const GlooBuffers& b) {
  // Gloo documents that the number of processes must be divisible by the base; refuse the rest
  // rather than run Gloo outside its contract.
  if (c.nranks > 1 && c.nranks % knobs.base != 0) {
    throw gloo::Exception("gloo::AllreduceBcube needs ranks divisible by base " + std::to_string(knobs.base) +
                          " (Gloo's documented precondition), got " + std::to_string(c.nranks) + " ranks");
  }
  context->base = knobs.base;
  return make_class_allreduce<gloo::AllreduceBcube>(context, c, knobs, b);
}

// ---- all-reduce and reduce, function style (gloo::allreduce, gloo::reduce).
template <class T>
class FunctionAllreduce final : public GlooCall {
 public:
  FunctionAllreduce(const std::shared_ptr<gloo::Context>& context, const Case& c, const GlooKnobs& knobs,
                    const GlooBuffers& b)
      : options_(context) {
    options_.setAlgorithm(knobs.algorithm == "bcube" ? gloo::AllreduceOptions::Algorithm::BCUBE
                                                     : gloo::AllreduceOptions::Algorithm::RING);
    if (!c.in_place) options_.setInput(reinterpret_cast<T*>(b.input), c.count);
    options_.setOutput(reinterpret_cast<T*>(b.output), c.count);
    options_.setReduceFunction(reduction_func<T>(c.op));
    if (knobs.segment > 0) options_.setMaxSegmentSize(knobs.segment);
  }
  void run(std::chrono::milliseconds timeout, std::uint32_t tag) override {
    options_.setTimeout(timeout);
    options_.setTag(tag);
    gloo::allreduce(options_);
  }

 private:
  gloo::AllreduceOptions options_;
};

template <class T>
class FunctionReduce final : public GlooCall {
 public:
  FunctionReduce(const std::shared_ptr<gloo::Context>& context, const Case& c, const GlooKnobs& knobs,
                 const GlooBuffers& b)
      : options_(context) {
    // Gloo's reduce writes partial results into `out` on every rank: a non-root rank out of
    // place gives it scratch, in place its one buffer.
    const bool root = context->rank == c.root;
    std::byte* out = root ? b.output : (c.in_place ? b.input : b.scratch);
    if (!c.in_place) options_.setInput(reinterpret_cast<T*>(b.input), c.count);
    options_.setOutput(reinterpret_cast<T*>(out), c.count);
    options_.setRoot(c.root);
    options_.setReduceFunction(reduction_func<T>(c.op));
    if (knobs.segment > 0) options_.setMaxSegmentSize(knobs.segment);
  }
  void run(std::chrono::milliseconds timeout, std::uint32_t tag) override {
    options_.setTimeout(timeout);
    options_.setTag(tag);
    gloo::reduce(options_);
  }

 private:
  gloo::ReduceOptions options_;
};

template <template <class> class Call>
std::unique_ptr<GlooCall> make_arithmetic(const std::shared_ptr<gloo::Context>& context, const Case& c,
                                          const GlooKnobs& knobs, const GlooBuffers& b) {
  return with_arithmetic_type(c.dtype, [&](auto type) -> std::unique_ptr<GlooCall> {
    return std::make_unique<Call<typename decltype(type)::type>>(context, c, knobs, b);
  });
}

std::size_t reduce_scratch(const Case& c) { return c.count; }

// ---- reduce-scatter: gloo::ReduceScatterHalvingDoubling reduces in place on one buffer of all
// ranks' blocks and leaves this rank's block at its start (not at rank * count, NCCL's in-place
// place), so the adapter runs it on a scratch copy of the input and copies the block out.
template <class T>
class ReduceScatterHalvingDoubling final : public GlooCall {
 public:
  ReduceScatterHalvingDoubling(const std::shared_ptr<gloo::Context>& context, const Case& c, const GlooKnobs&,
                               const GlooBuffers& b)
      : b_(b), block_bytes_(c.count * sizeof(T)), all_bytes_(block_bytes_ * static_cast<std::size_t>(c.nranks)) {
    const std::vector<int> blocks(static_cast<std::size_t>(c.nranks), int_count(c.count));
    algorithm_ = std::make_unique<gloo::ReduceScatterHalvingDoubling<T>>(
        context, std::vector<T*>{reinterpret_cast<T*>(b.scratch)}, int_count(c.count * static_cast<std::size_t>(c.nranks)),
        blocks, reduction_function<T>(c.op));
  }
  void run(std::chrono::milliseconds, std::uint32_t) override {
    if (all_bytes_ > 0) std::memcpy(b_.scratch, b_.input, all_bytes_);
    algorithm_->run();
    if (block_bytes_ > 0) std::memcpy(b_.output, b_.scratch, block_bytes_);
  }

 private:
  GlooBuffers b_;
  std::size_t block_bytes_;
  std::size_t all_bytes_;
  std::unique_ptr<gloo::Algorithm> algorithm_;
};

std::size_t reduce_scatter_scratch(const Case& c) { return c.count * static_cast<std::size_t>(c.nranks); }

// ---- all-gather: gloo::allgather and gloo::allgatherv (in place: no input, it already lies at
// output + rank * count), gloo::AllgatherRing<T> (in place: Gloo copies the input onto itself).
template <class T>
class FunctionAllgather final : public GlooCall {
 public:
  FunctionAllgather(const std::shared_ptr<gloo::Context>& context, const Case& c, const GlooKnobs&,
                    const GlooBuffers& b)
      : options_(context) {
    if (!c.in_place) options_.setInput(reinterpret_cast<T*>(b.input), c.count);
    options_.setOutput(reinterpret_cast<T*>(b.output), c.count * static_cast<std::size_t>(c.nranks));
  }
  void run(std::chrono::milliseconds timeout, std::uint32_t tag) override {
    options_.setTimeout(timeout);
    options_.setTag(tag);
    gloo::allgather(options_);
  }

 private:
  gloo::AllgatherOptions options_;
};

template <class T>
class FunctionAllgatherv final : public GlooCall {
 public:
  FunctionAllgatherv(const std::shared_ptr<gloo::Context>& context, const Case& c, const GlooKnobs&,
                     const GlooBuffers& b)
      : options_(context) {
    if (!c.in_place) options_.setInput(reinterpret_cast<T*>(b.input), c.count);
    options_.setOutput(reinterpret_cast<T*>(b.output), std::vector<std::size_t>(static_cast<std::size_t>(c.nranks), c.count));
  }
  void run(std::chrono::milliseconds timeout, std::uint32_t tag) override {
    options_.setTimeout(timeout);
    options_.setTag(tag);
    gloo::allgatherv(options_);
  }

 private:
  gloo::AllgathervOptions options_;
};

template <class T>
class AllgatherRing final : public GlooCall {
 public:
  AllgatherRing(const std::shared_ptr<gloo::Context>& context, const Case& c, const GlooKnobs&, const GlooBuffers& b)
      : algorithm_(std::make_unique<gloo::AllgatherRing<T>>(
            context, std::vector<const T*>{reinterpret_cast<const T*>(b.input)}, reinterpret_cast<T*>(b.output),
            int_count(c.count))) {}
  void run(std::chrono::milliseconds, std::uint32_t) override { algorithm_->run(); }

 private:
  std::unique_ptr<gloo::Algorithm> algorithm_;
};

// ---- all-to-all: gloo::alltoall and gloo::alltoallv (equal counts); out of place only.
template <class T>
class FunctionAlltoall final : public GlooCall {
 public:
  FunctionAlltoall(const std::shared_ptr<gloo::Context>& context, const Case& c, const GlooKnobs&, const GlooBuffers& b)
      : options_(context) {
    const std::size_t all = c.count * static_cast<std::size_t>(c.nranks);
    options_.setInput(reinterpret_cast<T*>(b.input), all);
    options_.setOutput(reinterpret_cast<T*>(b.output), all);
  }
  void run(std::chrono::milliseconds timeout, std::uint32_t tag) override {
    options_.setTimeout(timeout);
    options_.setTag(tag);
    gloo::alltoall(options_);
  }

 private:
  gloo::AlltoallOptions options_;
};

template <class T>
class FunctionAlltoallv final : public GlooCall {
 public:
  FunctionAlltoallv(const std::shared_ptr<gloo::Context>& context, const Case& c, const GlooKnobs&,
                    const GlooBuffers& b)
      : options_(context) {
    const std::vector<std::int64_t> per_rank(static_cast<std::size_t>(c.nranks), static_cast<std::int64_t>(c.count));
    options_.setInput(reinterpret_cast<T*>(b.input), per_rank);
    options_.setOutput(reinterpret_cast<T*>(b.output), per_rank);
  }
  void run(std::chrono::milliseconds timeout, std::uint32_t tag) override {
    options_.setTimeout(timeout);
    options_.setTag(tag);
    gloo::alltoallv(options_);
  }

 private:
  gloo::AlltoallvOptions options_;
};

// ---- broadcast: gloo::broadcast (a binomial tree; the root's input is optional: in place it
// sends from its output), gloo::BroadcastOneToAll<T> (the root sends to every rank; out of place
// the root passes {input, output} and Gloo copies locally from the first to the second).
template <class T>
class FunctionBroadcast final : public GlooCall {
 public:
  FunctionBroadcast(const std::shared_ptr<gloo::Context>& context, const Case& c, const GlooKnobs&,
                    const GlooBuffers& b)
      : options_(context) {
    if (context->rank == c.root && !c.in_place) options_.setInput(reinterpret_cast<T*>(b.input), c.count);
    options_.setOutput(reinterpret_cast<T*>(b.output), c.count);
    options_.setRoot(c.root);
  }
  void run(std::chrono::milliseconds timeout, std::uint32_t tag) override {
    options_.setTimeout(timeout);
    options_.setTag(tag);
    gloo::broadcast(options_);
  }

 private:
  gloo::BroadcastOptions options_;
};

template <class T>
std::vector<T*> one_to_all_pointers(const std::shared_ptr<gloo::Context>& context, const Case& c, const GlooBuffers& b) {
  if (context->rank == c.root && !c.in_place) return {reinterpret_cast<T*>(b.input), reinterpret_cast<T*>(b.output)};
  return {reinterpret_cast<T*>(b.output)};
}

template <class T>
class BroadcastOneToAll final : public GlooCall {
 public:
  BroadcastOneToAll(const std::shared_ptr<gloo::Context>& context, const Case& c, const GlooKnobs&,
                    const GlooBuffers& b)
      : algorithm_(std::make_unique<gloo::BroadcastOneToAll<T>>(context, one_to_all_pointers<T>(context, c, b), c.count,
                                                                c.root, 0)) {}
  void run(std::chrono::milliseconds, std::uint32_t) override { algorithm_->run(); }

 private:
  std::unique_ptr<gloo::Algorithm> algorithm_;
};

template <template <class> class Call>
std::unique_ptr<GlooCall> make_moving(const std::shared_ptr<gloo::Context>& context, const Case& c,
                                      const GlooKnobs& knobs, const GlooBuffers& b) {
  return with_carrier_type(c.dtype, [&](auto type) -> std::unique_ptr<GlooCall> {
    return std::make_unique<Call<typename decltype(type)::type>>(context, c, knobs, b);
  });
}

const std::vector<GlooAlgorithm>& table() {
  using C = Collective;
  static const std::vector<GlooAlgorithm> algorithms = {
      {"allreduce_ring", "gloo::AllreduceRing<T>", C::AllReduce, true, {}, "in place on one buffer; out of place the adapter copies input to output first", no_scratch, make_class_allreduce<gloo::AllreduceRing>},
      {"allreduce_ring_chunked", "gloo::AllreduceRingChunked<T>", C::AllReduce, true, {}, "as allreduce_ring", no_scratch, make_class_allreduce<gloo::AllreduceRingChunked>},
      {"allreduce_halving_doubling", "gloo::AllreduceHalvingDoubling<T>", C::AllReduce, true, {}, "as allreduce_ring", no_scratch, make_class_allreduce<gloo::AllreduceHalvingDoubling>},
      {"allreduce_bcube", "gloo::AllreduceBcube<T>", C::AllReduce, true, {"base"}, "as allreduce_ring; ranks must be divisible by base", no_scratch, make_bcube},
      {"allreduce", "gloo::allreduce", C::AllReduce, true, {"algorithm", "segment"}, "native in and out of place", no_scratch, make_arithmetic<FunctionAllreduce>},
      {"reduce", "gloo::reduce", C::Reduce, true, {"segment"}, "non-root ranks give Gloo a scratch output out of place", reduce_scratch, make_arithmetic<FunctionReduce>},
      {"reduce_scatter_halving_doubling", "gloo::ReduceScatterHalvingDoubling<T>", C::ReduceScatter, true, {}, "runs on a scratch copy of the input; the block is copied out", reduce_scatter_scratch, make_arithmetic<ReduceScatterHalvingDoubling>},
      {"allgather", "gloo::allgather", C::AllGather, true, {}, "native in and out of place", no_scratch, make_moving<FunctionAllgather>},
      {"allgatherv", "gloo::allgatherv", C::AllGather, true, {}, "every rank's count equal", no_scratch, make_moving<FunctionAllgatherv>},
      {"allgather_ring", "gloo::AllgatherRing<T>", C::AllGather, true, {}, "native", no_scratch, make_moving<AllgatherRing>},
      {"alltoall", "gloo::alltoall", C::AllToAll, false, {}, "out of place only (Gloo needs two buffers)", no_scratch, make_moving<FunctionAlltoall>},
      {"alltoallv", "gloo::alltoallv", C::AllToAll, false, {}, "every count equal; out of place only", no_scratch, make_moving<FunctionAlltoallv>},
      {"broadcast", "gloo::broadcast", C::Broadcast, true, {}, "native in and out of place", no_scratch, make_moving<FunctionBroadcast>},
      {"broadcast_one_to_all", "gloo::BroadcastOneToAll<T>", C::Broadcast, true, {}, "out of place the root passes {input, output}", no_scratch, make_moving<BroadcastOneToAll>},
  };
  return algorithms;
}

// The lower-level context of gloo/context.h with its pairs connected by hand, as Gloo's MPI
// context does: every rank creates a pair per peer, the addresses travel over the world, and
// every pair connects to the address its peer created for this rank.
class MeshContext final : public gloo::Context {
 public:
  MeshContext(int this_rank, int world_size) : gloo::Context(this_rank, world_size) {}

  void connect(World& world, const std::shared_ptr<gloo::transport::Device>& device) {
    std::shared_ptr<gloo::transport::Context> transport = device->createContext(rank, size);
    transport->setTimeout(getTimeout());
    std::vector<std::byte> mine;
    for (int peer = 0; peer < size; ++peer) {
      if (peer == rank) continue;
      const std::vector<char> address = transport->createPair(peer)->address().bytes();
      const auto length = static_cast<std::uint32_t>(address.size());
      const auto* bytes = reinterpret_cast<const std::byte*>(&length);
      mine.insert(mine.end(), bytes, bytes + sizeof length);
      const auto* data = reinterpret_cast<const std::byte*>(address.data());
      mine.insert(mine.end(), data, data + address.size());
    }
    const std::vector<std::vector<std::byte>> all = world.allgather(mine);
    for (int peer = 0; peer < size; ++peer) {
      if (peer == rank) continue;
      transport->getPair(peer)->connect(address_for(all[static_cast<std::size_t>(peer)], peer));
    }
    device_ = device;
    transportContext_ = std::move(transport);
  }

 private:
  // The address `peer` created for this rank: its entries are in rank order, without itself.
  std::vector<char> address_for(const std::vector<std::byte>& entries, int peer) const {
    std::size_t at = 0;
    for (int other = 0; other < size; ++other) {
      if (other == peer) continue;
      std::uint32_t length = 0;
      if (at + sizeof length > entries.size()) break;
      std::memcpy(&length, entries.data() + at, sizeof length);
      at += sizeof length;
      if (at + length > entries.size()) break;
      if (other == rank) {
        const auto* data = reinterpret_cast<const char*>(entries.data() + at);
        return {data, data + length};
      }
      at += length;
    }
    throw gloo::Exception("rank " + std::to_string(peer) + " sent no pair address for rank " + std::to_string(rank));
  }
};

std::string host_name() {
  char name[256] = {};
  if (gethostname(name, sizeof name - 1) != 0) return "localhost";
  return name;
}

}  // namespace

std::span<const GlooAlgorithm> gloo_algorithms() { return table(); }

std::vector<DType> gloo_dtypes(const GlooAlgorithm& algorithm) {
  std::vector<DType> dtypes;
  for (DType dtype : all_dtypes()) {
    const bool arithmetic = dtype != DType::BFloat16 && dtype != DType::Float8E4M3 && dtype != DType::Float8E5M2;
    if (arithmetic || !reduces(algorithm.collective)) dtypes.push_back(dtype);
  }
  return dtypes;
}

std::shared_ptr<gloo::Context> connect_gloo_mesh(World& world, const GlooKnobs& knobs,
                                                 std::chrono::milliseconds timeout) {
  // Every member names its host; one host means loopback, several mean each one's own name.
  const std::string host = host_name();
  const std::vector<std::vector<std::byte>> hosts =
      world.allgather({reinterpret_cast<const std::byte*>(host.data()), host.size()});
  bool one_host = true;
  for (const auto& other : hosts) {
    one_host = one_host && std::string(reinterpret_cast<const char*>(other.data()), other.size()) == host;
  }
  gloo::transport::tcp::attr attr;
  if (!knobs.iface.empty()) {
    attr.iface = knobs.iface;
  } else {
    attr.hostname = one_host ? "127.0.0.1" : host;
  }
  auto context = std::make_shared<MeshContext>(world.rank(), world.size());
  context->setTimeout(timeout);
  context->connect(world, gloo::transport::tcp::CreateDevice(attr));
  return context;
}

}  // namespace collcheck
