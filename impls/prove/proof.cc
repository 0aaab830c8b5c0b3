// The symbolic interpreter behind prove(): every element is a set of (rank, index) input
// contributions, kept as runs of consecutive ranks per index, so ring and tree partial sums
// stay a run or two even at thousands of ranks.
#include "impls/prove/proof.h"

#include <algorithm>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "impls/prove/provenance.h"
#include "reference/counts.h"

namespace collcheck {
namespace {

using provenance::combine;
using provenance::Element;
using provenance::Run;
using provenance::show;
using provenance::Union;

using Contents = std::vector<Element>;

// Messages from one participant to another on one channel, in order, received from `head`.
struct Queue {
  std::vector<Contents> messages;
  std::size_t head = 0;

  bool empty() const { return head == messages.size(); }
};

// Queue keys are (from, to, channel) packed into 64 bits; mixed (splitmix64's finalizer) so
// that a ring's keys, all alike in their low bits, spread over the buckets.
struct QueueKeyHash {
  std::size_t operator()(std::uint64_t key) const {
    key = (key ^ (key >> 30)) * 0xbf58476d1ce4e5b9ULL;
    key = (key ^ (key >> 27)) * 0x94d049bb133111ebULL;
    return static_cast<std::size_t>(key ^ (key >> 31));
  }
};

class Interpreter {
 public:
  explicit Interpreter(const Schedule& s) : s_(s) {
    const auto n = static_cast<std::size_t>(s.nparticipants());
    output_.resize(n);
    scratch_.resize(n);
    input_.resize(n);
    done_.resize(n);
    streams_.resize(n);
    for (int p = 0; p < s.nparticipants(); ++p) {
      const auto q = static_cast<std::size_t>(p);
      output_[q].resize(s.buffer_size(p, BufferKind::Output));
      scratch_[q].resize(s.buffer_size(p, BufferKind::Scratch));
      done_[q].assign(s.participants[q].steps.size(), false);
      make_streams(q);
      if (!s.participants[q].is_switch) initialize_input(p);
    }
  }

  Proof run() {
    Proof proof;
    // A worklist of participants that may be able to move; a send wakes its receiver.
    std::deque<int> work;
    std::vector<bool> queued(static_cast<std::size_t>(s_.nparticipants()), true);
    for (int p = 0; p < s_.nparticipants(); ++p) work.push_back(p);
    while (!work.empty() && proof.ok) {
      const int p = work.front();
      work.pop_front();
      queued[static_cast<std::size_t>(p)] = false;
      advance(p, proof, [&](int woken) {
        if (!queued[static_cast<std::size_t>(woken)]) {
          queued[static_cast<std::size_t>(woken)] = true;
          work.push_back(woken);
        }
      });
    }
    if (proof.ok) check_finished(proof);
    if (proof.ok) check_outputs(proof);
    return proof;
  }

 private:
  // The steps of participant q by stream, in order; one stream, the common case, keeps no list.
  void make_streams(std::size_t q) {
    const auto& steps = s_.participants[q].steps;
    const bool one_stream =
        std::all_of(steps.begin(), steps.end(), [&](const Step& step) { return step.stream == steps.front().stream; });
    if (one_stream) {
      streams_[q].push_back(Stream{{}, 0, steps.size()});
      return;
    }
    std::map<int, std::vector<int>> by_stream;
    for (int k = 0; k < static_cast<int>(steps.size()); ++k)
      by_stream[steps[static_cast<std::size_t>(k)].stream].push_back(k);
    for (auto& [stream, indices] : by_stream) {
      const std::size_t size = indices.size();
      streams_[q].push_back(Stream{std::move(indices), 0, size});
    }
  }

  void initialize_input(int p) {
    const auto q = static_cast<std::size_t>(p);
    const std::size_t size = s_.buffer_size(p, BufferKind::Input);
    const auto rank = static_cast<std::uint32_t>(p);
    if (!s_.shape.in_place) return;  // out of place the input is implicit and never written
    const Alias alias = in_place_alias(s_.shape, p);
    if (alias.inside == BufferKind::Output) {  // reduce-scatter: the output lies in the input
      input_[q].resize(size);
      for (std::size_t i = 0; i < size; ++i) input_[q][i] = Element(i, rank);
      return;
    }
    for (std::size_t i = 0; i < size; ++i) {
      output_[q].at(alias.offset + i) = Element(i, rank);
    }
  }

  // The stored elements behind `buffer` of participant p, after in-place aliasing: element i of
  // the buffer is storage(p, buffer)[i] (worked out once per range, not per element).
  Element* storage(int p, BufferKind buffer) {
    const auto q = static_cast<std::size_t>(p);
    if (buffer == BufferKind::Scratch) return scratch_[q].data();
    if (s_.shape.in_place && !s_.participants[q].is_switch) {
      const Alias alias = in_place_alias(s_.shape, p);
      if (alias.inside == BufferKind::Input && buffer == BufferKind::Input) return output_[q].data() + alias.offset;
      if (alias.inside == BufferKind::Output && buffer == BufferKind::Output) return input_[q].data() + alias.offset;
      if (buffer == BufferKind::Input) return input_[q].data();
    }
    return output_[q].data();
  }

  // Reads a range into `values` (reused, so that a step allocates only where an element has
  // many runs); out of place the input is implicit. Fails on an undefined element.
  bool read(int p, int step, const Range& range, Contents& values, Proof& proof) {
    values.clear();
    values.reserve(range.count);
    const auto rank = static_cast<std::uint32_t>(p);
    if (range.buffer == BufferKind::Input && !s_.shape.in_place) {
      for (std::size_t i = 0; i < range.count; ++i) values.emplace_back(range.offset + i, rank);
      return true;
    }
    const Element* stored = storage(p, range.buffer) + range.offset;
    for (std::size_t i = 0; i < range.count; ++i) {
      if (!stored[i].defined()) {
        fail(proof, p, step,
             "reads " + std::string(name(range.buffer)) + " element " + std::to_string(range.offset + i) +
                 ", which nothing has written");
        return false;
      }
      values.push_back(stored[i]);
    }
    return true;
  }

  void write(int p, int step, const Range& range, Contents& values) {
    Element* stored = storage(p, range.buffer) + range.offset;
    for (std::size_t i = 0; i < range.count; ++i) {
      values[i].set_writer(step);
      stored[i] = std::move(values[i]);
    }
  }

  // The common case without allocating: two single runs of one index that meet end to end.
  static bool merge_single(Element& a, const Element& b) {
    if (a.runs().size() != 1 || b.runs().size() != 1) return false;
    const Run x = a.runs()[0], y = b.runs()[0];
    if (x.index != y.index) return false;
    if (x.end == y.first) a.assign_single(Run{x.index, x.first, y.end});
    else if (y.end == x.first) a.assign_single(Run{x.index, y.first, x.end});
    else return false;
    return true;
  }

  // a ⊕ b elementwise; fails on a contribution combined twice.
  bool combine_into(int p, int step, const Range& range, std::vector<Element>& a, const std::vector<Element>& b,
                    Proof& proof) {
    for (std::size_t i = 0; i < a.size(); ++i) {
      if (merge_single(a[i], b[i])) continue;
      Union u = combine(a[i].runs(), b[i].runs());
      if (u.shared) {
        fail(proof, p, step,
             std::string(name(range.buffer)) + " element " + std::to_string(range.offset + i) + " would combine " +
                 show(std::span<const Run>(&*u.shared, 1)) + " twice");
        return false;
      }
      a[i].assign(std::move(u.runs));
    }
    return true;
  }

  // Runs every step of p that can run now, stream by stream, until none can.
  template <typename Wake>
  void advance(int p, Proof& proof, Wake wake) {
    const auto q = static_cast<std::size_t>(p);
    bool progress = true;
    while (progress && proof.ok) {
      progress = false;
      for (Stream& stream : streams_[q]) {
        while (stream.next < stream.size && ready(p, stream.at(stream.next))) {
          const int k = stream.at(stream.next);
          if (!execute(p, k, proof)) return;
          done_[q][static_cast<std::size_t>(k)] = true;
          ++stream.next;
          ++proof.steps;
          progress = true;
          const Step& step = s_.participants[q].steps[static_cast<std::size_t>(k)];
          if (step.sends()) wake(step.peer);
        }
      }
    }
  }

  // Whether step k of p, the head of its stream, can run: its dependencies are done and,
  // for a receive, its message has arrived.
  bool ready(int p, int k) {
    const auto q = static_cast<std::size_t>(p);
    const Step& step = s_.participants[q].steps[static_cast<std::size_t>(k)];
    for (int earlier : s_.participants[q].after(k)) {
      if (!done_[q][static_cast<std::size_t>(earlier)]) return false;
    }
    return !step.receives() || !queue(step.peer, p, step.channel).empty();
  }

  // The queue of messages from one participant to another on one channel.
  Queue& queue(int from, int to, int channel) {
    const auto participants = static_cast<std::uint64_t>(s_.nparticipants());
    const std::uint64_t link = static_cast<std::uint64_t>(from) * participants + static_cast<std::uint64_t>(to);
    return queues_[link * 65536 + static_cast<std::uint64_t>(channel)];  // channels: at most 64
  }

  // Message buffers are reused: a step allocates only where an element has many runs.
  Contents spare() {
    if (spare_.empty()) return {};
    Contents message = std::move(spare_.back());
    spare_.pop_back();
    return message;
  }

  bool execute(int p, int k, Proof& proof) {
    const Step& step = s_.participants[static_cast<std::size_t>(p)].steps[static_cast<std::size_t>(k)];
    switch (step.kind) {
      case StepKind::Send: {
        Contents payload = spare();
        if (!read(p, k, step.from, payload, proof)) return false;
        queue(p, step.peer, step.channel).messages.push_back(std::move(payload));
        ++proof.messages;
        return true;
      }
      case StepKind::Recv:
      case StepKind::RecvReduce: {
        Queue& from = queue(step.peer, p, step.channel);
        Contents payload = std::move(from.messages[from.head++]);
        if (from.empty()) {
          from.messages.clear();
          from.head = 0;
        }
        if (step.kind == StepKind::RecvReduce) {
          if (!read(p, k, step.from, local_, proof) || !combine_into(p, k, step.to, local_, payload, proof)) {
            return false;
          }
          std::swap(payload, local_);
        }
        write(p, k, step.to, payload);
        payload.clear();
        spare_.push_back(std::move(payload));
        return true;
      }
      case StepKind::Copy: {
        if (!read(p, k, step.from, local_, proof)) return false;
        write(p, k, step.to, local_);
        return true;
      }
      case StepKind::Reduce: {
        if (!read(p, k, step.from, local_, proof) || !read(p, k, step.to, target_, proof)) return false;
        if (!combine_into(p, k, step.to, target_, local_, proof)) return false;
        write(p, k, step.to, target_);
        return true;
      }
    }
    return false;
  }

  void check_finished(Proof& proof) {
    std::string stuck;
    int shown = 0;
    for (int p = 0; p < s_.nparticipants(); ++p) {
      const auto& done = done_[static_cast<std::size_t>(p)];
      const auto first = std::find(done.begin(), done.end(), false);
      if (first == done.end()) continue;
      if (shown++ < 4) stuck += "\n  " + describe(s_, p, static_cast<int>(first - done.begin()));
    }
    if (shown == 0) return;
    proof.ok = false;
    proof.message =
        "deadlock: " + std::to_string(shown) + " participant" + (shown > 1 ? "s" : "") + " wait forever, e.g." + stuck;
  }

  // A v-collective's output on one rank: where the block from each source starts in it (n+1
  // offsets), and where that block starts in the source's input. Made once per rank, so that
  // each element's source is a binary search, not a walk over the ranks.
  struct VectorBlocks {
    std::vector<std::size_t> starts;
    std::vector<std::size_t> sent_from;
  };

  VectorBlocks vector_blocks(int rank) const {
    const Case& c = s_.shape;
    VectorBlocks blocks;
    if (c.collective != Collective::AllGatherV && c.collective != Collective::AllToAllV) return blocks;
    blocks.starts.push_back(0);
    for (int source = 0; source < c.nranks; ++source) {
      const bool gather = c.collective == Collective::AllGatherV;
      blocks.starts.push_back(blocks.starts.back() +
                              (gather ? c.counts[static_cast<std::size_t>(source)] : pair_count(c, source, rank)));
      blocks.sent_from.push_back(gather ? 0 : send_start(c, source, rank));
    }
    return blocks;
  }

  // What output element i of `rank` must hold (`blocks`: vector_blocks(rank)).
  Run wanted(int rank, std::size_t i, const VectorBlocks& blocks) const {
    const Case& c = s_.shape;
    const auto n = static_cast<std::uint32_t>(c.nranks);
    const auto r = static_cast<std::size_t>(rank);
    switch (c.collective) {
      case Collective::AllGatherV:   // block s of counts[s] elements is rank s's input
      case Collective::AllToAllV: {  // block s is what rank s sent this rank
        // The last block starting at or before i (empty blocks start where the next does).
        const auto after = std::upper_bound(blocks.starts.begin(), blocks.starts.end(), i);
        const auto source = static_cast<std::size_t>(after - blocks.starts.begin() - 1);
        const auto from = static_cast<std::uint32_t>(source);
        return Run{blocks.sent_from[source] + i - blocks.starts[source], from, from + 1};
      }
      case Collective::ReduceScatterV: return Run{block_start(c, rank) + i, 0, n};
      case Collective::AllGather: {
        const auto source = static_cast<std::uint32_t>(i / std::max<std::size_t>(c.count, 1));
        return Run{i % std::max<std::size_t>(c.count, 1), source, source + 1};
      }
      case Collective::AllToAll: {
        const auto source = static_cast<std::uint32_t>(i / std::max<std::size_t>(c.count, 1));
        return Run{r * c.count + i % std::max<std::size_t>(c.count, 1), source, source + 1};
      }
      case Collective::Broadcast: {
        const auto root = static_cast<std::uint32_t>(c.root);
        return Run{i, root, root + 1};
      }
      case Collective::ReduceScatter: return Run{r * c.count + i, 0, n};
      default: return Run{i, 0, n};  // all-reduce, reduce (root)
    }
  }

  void check_outputs(Proof& proof) {
    for (int rank = 0; rank < s_.nranks() && proof.ok; ++rank) {
      const std::size_t size = s_.buffer_size(rank, BufferKind::Output);
      const Element* output = storage(rank, BufferKind::Output);
      const VectorBlocks blocks = vector_blocks(rank);
      for (std::size_t i = 0; i < size; ++i) {
        const Element& element = output[i];
        const Run want = wanted(rank, i, blocks);
        if (element.defined() && element.runs().size() == 1 && element.runs()[0] == want) continue;
        const std::string holds = element.defined() ? show(element.runs()) : "nothing (never written)";
        const std::string where =
            element.writer() >= 0 ? " (last written by " + describe(s_, rank, element.writer()) + ")" : "";
        proof.ok = false;
        proof.message = "rank " + std::to_string(rank) + " output element " + std::to_string(i) + " holds " + holds +
                        where + ", but " + std::string(name(s_.shape.collective)) + " needs " +
                        show(std::span<const Run>(&want, 1));
        return;
      }
    }
  }

  void fail(Proof& proof, int p, int step, const std::string& what) {
    proof.ok = false;
    proof.message = describe(s_, p, step) + ": " + what;
  }

  // The steps of one stream of a participant, in order: indices[i], or step i where there is
  // no list (the participant's only stream).
  struct Stream {
    std::vector<int> indices;
    std::size_t next;  // the first not yet run
    std::size_t size;

    int at(std::size_t i) const { return indices.empty() ? static_cast<int>(i) : indices[i]; }
  };

  const Schedule& s_;
  std::vector<std::vector<Stream>> streams_;
  std::vector<Contents> output_, scratch_, input_;
  std::vector<std::vector<bool>> done_;
  std::unordered_map<std::uint64_t, Queue, QueueKeyHash> queues_;
  std::vector<Contents> spare_;  // emptied messages, for the next sends
  Contents local_, target_;      // reused by every step
};

}  // namespace

Proof prove(const Schedule& schedule) {
  Status valid = validate(schedule);
  if (!valid) return Proof{false, valid.error().message, 0, 0};
  return Interpreter(schedule).run();
}

MemoryEstimate proof_memory(const Case& shape, const ScheduleSize& size) {
  MemoryEstimate estimate = schedule_memory(size);
  // Out of place the input is implicit; every output and scratch element is an Element, and a
  // reduced one may hold a few runs of contributions besides (an allocation of its own).
  const auto nranks = static_cast<std::uint64_t>(shape.nranks);
  const std::uint64_t outputs = saturating_product(
      nranks, shape.in_place ? std::max(input_elements(shape), output_elements(shape)) : output_elements(shape));
  const std::uint64_t elements = saturating_sum(outputs, size.scratch_elements);
  const std::uint64_t per_element =
      sizeof(Element) + (reduces(shape.collective) ? sizeof(std::vector<Run>) + 3 * sizeof(Run) : 0);
  // Sends are buffered: at worst a rank's whole share waits in a queue at once.
  const std::uint64_t queued = saturating_product(
      nranks, saturating_product(std::max(input_elements(shape), output_elements(shape)), sizeof(Element)));
  estimate.add("proof state",
               saturating_sum(saturating_product(elements, per_element),
                              saturating_sum(queued, saturating_product(size.steps, sizeof(int) + 1))),
               std::to_string(elements) + " elements x " + std::to_string(per_element) + " B, messages queued");
  return estimate;
}

}  // namespace collcheck
