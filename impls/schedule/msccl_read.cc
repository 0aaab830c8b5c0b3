// Reads an MSCCL XML algorithm file with pugixml: each element and attribute checked where it
// stands (names, ranges, chunk counts, peers), every error naming the file, line and element.
// The checks across elements follow in msccl_check.cc.
#include <algorithm>
#include <charconv>
#include <limits>

#include <pugixml.hpp>

#include "impls/schedule/msccl_xml.h"
#include "impls/schedule/schedule_file.h"

namespace collcheck {
namespace {

constexpr int kMaxChannels = 64;     // collcheck's channels (the prover's queues)
constexpr int kMaxChunks = 1 << 20;  // chunks per loop, per buffer, per step
constexpr int kMaxBlocks = 1024;     // thread blocks per gpu
constexpr int kMaxSteps = 1 << 16;   // steps per thread block

// An XML attribute value and what it names.
template <typename T>
struct Named {
  std::string_view xml;
  T value;
};
constexpr Named<MscclOp> kOps[] = {
    {"s", MscclOp::Send},
    {"r", MscclOp::Recv},
    {"rcs", MscclOp::RecvCopySend},
    {"rrs", MscclOp::RecvReduceSend},
    {"rrc", MscclOp::RecvReduceCopy},
    {"rrcs", MscclOp::RecvReduceCopySend},
    {"cpy", MscclOp::Copy},
    {"re", MscclOp::Reduce},
    {"nop", MscclOp::Nop},
};
constexpr Named<Collective> kCollectives[] = {
    {"allreduce", Collective::AllReduce},
    {"allgather", Collective::AllGather},
    {"reduce_scatter", Collective::ReduceScatter},
    {"alltoall", Collective::AllToAll},
};

constexpr Named<BufferKind> kBuffers[] = {
    {"i", BufferKind::Input},
    {"o", BufferKind::Output},
    {"s", BufferKind::Scratch},
};

// What the reader knows while it walks the document: the text (for line numbers) and where it is.
class Reader {
 public:
  Reader(std::string_view text, std::string file) : text_(text), file_(std::move(file)) {
    for (std::size_t i = 0; i < text.size(); ++i)
      if (text[i] == '\n') line_starts_.push_back(i + 1);
  }

  int line_of(std::ptrdiff_t offset) const {
    const auto after = std::upper_bound(line_starts_.begin(), line_starts_.end(), static_cast<std::size_t>(offset));
    return static_cast<int>(after - line_starts_.begin()) + 1;
  }
  int line_of(const pugi::xml_node& node) const { return line_of(node.offset_debug()); }

  Error error(const pugi::xml_node& node, const std::string& where, const std::string& message) const {
    return Error{"", file_ + ":" + std::to_string(line_of(node)) + ": " + where + ": " + message};
  }

  // An integer attribute in [low, high].
  Result<int> integer(const pugi::xml_node& node, const std::string& where, const char* attribute, int low,
                      int high) const {
    const pugi::xml_attribute found = node.attribute(attribute);
    const std::string range = "an integer in " + std::to_string(low) + ".." + std::to_string(high);
    if (!found) return error(node, where, std::string("has no attribute ") + attribute + " (" + range + ")");
    const std::string_view value = found.value();
    int parsed = 0;
    const auto [end, failed] = std::from_chars(value.data(), value.data() + value.size(), parsed);
    if (failed != std::errc() || end != value.data() + value.size() || parsed < low || parsed > high) {
      return error(node, where, std::string(attribute) + "=\"" + std::string(value) + "\": must be " + range);
    }
    return parsed;
  }

  // An attribute naming one entry of `names`; an unknown value is refused with the allowed ones.
  template <typename T, std::size_t N>
  Result<T> named(const pugi::xml_node& node, const std::string& where, const char* attribute,
                  const Named<T> (&names)[N]) const {
    const std::string_view value = node.attribute(attribute).value();
    std::string allowed;
    for (const Named<T>& entry : names) {
      if (entry.xml == value) return entry.value;
      allowed += (allowed.empty() ? "" : ", ") + std::string(entry.xml);
    }
    return error(node, where, std::string(attribute) + "=\"" + std::string(value) + "\": must be one of " + allowed);
  }

  const std::string& file() const { return file_; }

 private:
  std::string_view text_;
  std::string file_;
  std::vector<std::size_t> line_starts_;
};

// Chunks a buffer of the gpu holds, as its <gpu> element says.
int chunks_of(const MscclGpu& gpu, BufferKind kind) {
  if (kind == BufferKind::Input) return gpu.input_chunks;
  if (kind == BufferKind::Output) return gpu.output_chunks;
  return gpu.scratch_chunks;
}

// The range [offset, offset + count) lies in the buffer.
Status check_range(const Reader& reader, const pugi::xml_node& node, const std::string& where, const MscclGpu& gpu,
                   BufferKind kind, int offset, int count, const char* role) {
  const int chunks = chunks_of(gpu, kind);
  if (offset >= 0 && offset + count <= chunks) return Ok{};
  return reader.error(node, where,
                      std::string(role) + " chunks [" + std::to_string(offset) + ", " + std::to_string(offset + count) +
                          ") of the " + std::string(name(kind)) + " buffer lie outside its " + std::to_string(chunks) +
                          " chunks");
}

// A step's range: buffer PREFIXbuf and offset PREFIXoff ("src" or "dst"), inside the buffer.
Status read_range(const Reader& reader, const pugi::xml_node& node, const std::string& where, const MscclGpu& gpu,
                  const std::string& prefix, int count, BufferKind& buffer, int& offset) {
  Result<BufferKind> kind = reader.named(node, where, (prefix + "buf").c_str(), kBuffers);
  Result<int> start = reader.integer(node, where, (prefix + "off").c_str(), 0, kMaxChunks);
  if (!kind) return kind.error();
  if (!start) return start.error();
  buffer = *kind;
  offset = *start;
  return check_range(reader, node, where, gpu, *kind, *start, count,
                     prefix == "src" ? "its source" : "its destination");
}

Result<MscclStep> read_step(const Reader& reader, const pugi::xml_node& node, const std::string& block_where,
                            const MscclGpu& gpu, const MscclThreadBlock& block, int index) {
  const std::string where = "<step s=\"" + std::string(node.attribute("s").value()) + "\"> of " + block_where;
  Result<int> s = reader.integer(node, where, "s", 0, kMaxSteps);
  if (!s) return s.error();
  if (*s != index)
    return reader.error(node, where,
                        "s=\"" + std::to_string(*s) + "\": steps must be numbered 0, 1, 2, ... in order; expected " +
                            std::to_string(index));
  MscclStep step;
  step.line = reader.line_of(node);
  Result<MscclOp> op = reader.named(node, where, "type", kOps);
  if (!op) return op.error();
  step.op = *op;
  Result<int> depends_block = reader.integer(node, where, "depid", -1, kMaxBlocks);
  Result<int> depends_step = reader.integer(node, where, "deps", -1, kMaxSteps);
  Result<int> signals = reader.integer(node, where, "hasdep", 0, 1);
  if (!depends_block) return depends_block.error();
  if (!depends_step) return depends_step.error();
  if (!signals) return signals.error();
  step.depends_block = *depends_block;
  step.depends_step = *depends_step;
  step.signals = *signals == 1;
  if (step.op == MscclOp::Nop) return step;

  Result<int> count = reader.integer(node, where, "cnt", 1, kMaxChunks);
  if (!count) return count.error();
  step.count = *count;
  const bool sends = step.op == MscclOp::Send || step.op == MscclOp::RecvCopySend ||
                     step.op == MscclOp::RecvReduceSend || step.op == MscclOp::RecvReduceCopySend;
  const bool receives = step.op != MscclOp::Send && step.op != MscclOp::Copy && step.op != MscclOp::Reduce;
  // Which ranges the step touches: a receive lands in dst; a send of its own reads src.
  const bool reads_source = step.op != MscclOp::Recv && step.op != MscclOp::RecvCopySend;
  const bool uses_destination = step.op != MscclOp::Send && step.op != MscclOp::RecvReduceSend;
  if (sends && block.send_peer < 0)
    return reader.error(node, where, "sends, but its thread block has no send peer (send=\"-1\")");
  if (receives && block.recv_peer < 0)
    return reader.error(node, where, "receives, but its thread block has no receive peer (recv=\"-1\")");
  if (reads_source) {
    Status read = read_range(reader, node, where, gpu, "src", step.count, step.source_buffer, step.source_offset);
    if (!read) return read.error();
  }
  if (uses_destination) {
    Status read =
        read_range(reader, node, where, gpu, "dst", step.count, step.destination_buffer, step.destination_offset);
    if (!read) return read.error();
  }
  return step;
}

Result<MscclThreadBlock> read_block(const Reader& reader, const pugi::xml_node& node, const std::string& gpu_where,
                                    const MscclAlgorithm& algorithm, const MscclGpu& gpu, int gpu_id, int index) {
  const std::string where = "<tb id=\"" + std::string(node.attribute("id").value()) + "\"> of " + gpu_where;
  Result<int> id = reader.integer(node, where, "id", 0, kMaxBlocks - 1);
  if (!id) return id.error();
  if (*id != index)
    return reader.error(
        node, where,
        "thread blocks must be numbered 0, 1, 2, ... in order; expected id=\"" + std::to_string(index) + "\"");
  MscclThreadBlock block;
  block.line = reader.line_of(node);
  Result<int> send = reader.integer(node, where, "send", -1, algorithm.ngpus - 1);
  Result<int> recv = reader.integer(node, where, "recv", -1, algorithm.ngpus - 1);
  Result<int> channel = reader.integer(node, where, "chan", 0, kMaxChannels - 1);
  if (!send) return send.error();
  if (!recv) return recv.error();
  if (!channel) return channel.error();
  if (*send == gpu_id || *recv == gpu_id)
    return reader.error(node, where, "a thread block's peers must be other gpus than its own");
  block.send_peer = *send;
  block.recv_peer = *recv;
  block.channel = *channel;
  const std::string block_where = "tb " + std::to_string(index) + " of gpu " + std::to_string(gpu_id);
  for (const pugi::xml_node& child : node.children()) {
    if (child.type() != pugi::node_element) continue;
    if (std::string_view(child.name()) != "step")
      return reader.error(child, "<" + std::string(child.name()) + ">", "unknown element in a <tb>: only <step>");
    Result<MscclStep> step = read_step(reader, child, block_where, gpu, block, static_cast<int>(block.steps.size()));
    if (!step) return step.error();
    block.steps.push_back(std::move(*step));
  }
  return block;
}

// MSCCL's rule: a buffer that has chunks has the collective's share of nchunksperloop (all of
// them, or a rank's 1/ngpus for an all-gather's input and a reduce-scatter's output).
Status check_chunk_counts(const Reader& reader, const pugi::xml_node& node, const std::string& where,
                          const MscclAlgorithm& algorithm, const MscclGpu& gpu) {
  const int input_share = algorithm.collective == Collective::AllGather ? algorithm.ngpus : 1;
  const int output_share = algorithm.collective == Collective::ReduceScatter ? algorithm.ngpus : 1;
  for (const auto& [chunks, share, attribute] : {std::tuple{gpu.input_chunks, input_share, "i_chunks"},
                                                 std::tuple{gpu.output_chunks, output_share, "o_chunks"}}) {
    if (chunks > 0 && chunks * share != algorithm.chunks_per_loop) {
      return reader.error(node, where,
                          std::string(attribute) + "=\"" + std::to_string(chunks) + "\": must be 0 or " +
                              std::to_string(algorithm.chunks_per_loop / share) + " (nchunksperloop " +
                              std::to_string(algorithm.chunks_per_loop) + (share > 1 ? " / ngpus" : "") + ")");
    }
  }
  return Ok{};
}

Result<MscclGpu> read_gpu(const Reader& reader, const pugi::xml_node& node, const MscclAlgorithm& algorithm,
                          int index) {
  const std::string where = "<gpu id=\"" + std::string(node.attribute("id").value()) + "\">";
  Result<int> id = reader.integer(node, where, "id", 0, algorithm.ngpus - 1);
  if (!id) return id.error();
  if (*id != index)
    return reader.error(node, where,
                        "gpus must be listed 0, 1, 2, ... in order; expected id=\"" + std::to_string(index) + "\"");
  MscclGpu gpu;
  gpu.line = reader.line_of(node);
  Result<int> input = reader.integer(node, where, "i_chunks", 0, kMaxChunks);
  Result<int> output = reader.integer(node, where, "o_chunks", 0, kMaxChunks);
  Result<int> scratch = reader.integer(node, where, "s_chunks", 0, kMaxChunks);
  if (!input) return input.error();
  if (!output) return output.error();
  if (!scratch) return scratch.error();
  gpu.input_chunks = *input;
  gpu.output_chunks = *output;
  gpu.scratch_chunks = *scratch;
  Status shares = check_chunk_counts(reader, node, where, algorithm, gpu);
  if (!shares) return shares.error();
  const std::string gpu_where = "gpu " + std::to_string(index);
  for (const pugi::xml_node& child : node.children()) {
    if (child.type() != pugi::node_element) continue;
    if (std::string_view(child.name()) != "tb")
      return reader.error(child, "<" + std::string(child.name()) + ">", "unknown element in a <gpu>: only <tb>");
    Result<MscclThreadBlock> block =
        read_block(reader, child, gpu_where, algorithm, gpu, index, static_cast<int>(gpu.blocks.size()));
    if (!block) return block.error();
    gpu.blocks.push_back(std::move(*block));
  }
  return gpu;
}

Status read_algo(const Reader& reader, const pugi::xml_node& node, MscclAlgorithm& algorithm) {
  const std::string where = "<algo>";
  algorithm.name = node.attribute("name").value();
  algorithm.protocol = node.attribute("proto").value();
  Result<Collective> collective = reader.named(node, where, "coll", kCollectives);
  if (!collective) return collective.error();
  algorithm.collective = *collective;
  Result<int> ngpus = reader.integer(node, where, "ngpus", 1, kMaxRanks);
  Result<int> in_place = reader.integer(node, where, "inplace", 0, 1);
  Result<int> chunks = reader.integer(node, where, "nchunksperloop", 1, kMaxChunks);
  if (!ngpus) return ngpus.error();
  if (!in_place) return in_place.error();
  if (!chunks) return chunks.error();
  algorithm.ngpus = *ngpus;
  algorithm.in_place = *in_place == 1;
  algorithm.chunks_per_loop = *chunks;
  for (const pugi::xml_node& child : node.children()) {
    if (child.type() != pugi::node_element) continue;
    if (std::string_view(child.name()) != "gpu")
      return reader.error(child, "<" + std::string(child.name()) + ">", "unknown element in <algo>: only <gpu>");
    Result<MscclGpu> gpu = read_gpu(reader, child, algorithm, static_cast<int>(algorithm.gpus.size()));
    if (!gpu) return gpu.error();
    algorithm.gpus.push_back(std::move(*gpu));
  }
  if (static_cast<int>(algorithm.gpus.size()) != algorithm.ngpus) {
    return reader.error(node, where,
                        "ngpus=\"" + std::to_string(algorithm.ngpus) + "\" but " +
                            std::to_string(algorithm.gpus.size()) + " <gpu> elements");
  }
  return Ok{};
}

}  // namespace

std::string_view name(MscclOp op) {
  for (const Named<MscclOp>& known : kOps)
    if (known.value == op) return known.xml;
  return "?";
}

Result<MscclAlgorithm> parse_msccl_xml(std::string_view text, const std::string& file) {
  const Reader reader(text, file);
  pugi::xml_document document;
  const pugi::xml_parse_result parsed = document.load_buffer(text.data(), text.size());
  if (!parsed) {
    return Error{"", file + ":" + std::to_string(reader.line_of(parsed.offset)) +
                         ": not well-formed XML: " + parsed.description()};
  }
  const pugi::xml_node root = document.document_element();
  if (std::string_view(root.name()) != "algo") {
    return Error{"", file + ":" + std::to_string(reader.line_of(root)) + ": the root element is <" + root.name() +
                         ">, not an MSCCL <algo>"};
  }
  MscclAlgorithm algorithm;
  algorithm.file = file;
  Status read = read_algo(reader, root, algorithm);
  if (!read) return read.error();
  Status checked = check_msccl(algorithm);
  if (!checked) return checked.error();
  return algorithm;
}

Result<MscclAlgorithm> read_msccl_file(const std::string& path) {
  Result<std::string> text = read_schedule_file_text(path);
  if (!text) return text.error();
  return parse_msccl_xml(*text, path);
}

}  // namespace collcheck
