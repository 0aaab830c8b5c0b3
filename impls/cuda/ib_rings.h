// The cuda engine's message streams between processes over RDMA (`ALGORITHM@cuda:mode=processes,net=ib`,
// and `ALGORITHM@cuda-host:mode=processes,net=ib,verbs=loopback` here): every ring between two
// processes has its slots, headers and control words at its receiver, and an image of them at its
// sender, kept alike by RDMA writes through the verbs interface of impls/ib/.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "impls/cuda/process_rings.h"
#include "impls/ib/verbs.h"

namespace collcheck::cuda {

struct SlotMemory;

// Where net=ib puts a ring's slots on `device` with the verbs `choice` opens, found by registering
// 2 MiB of slots as the rings do and letting them go: "mlx5_0 port 1 (InfiniBand): device memory
// by dma-buf", "...: host memory the GPU reaches (host staging: why)", or why no verbs open.
std::string rdma_slots_text(Device& device, const ib::VerbsChoice& choice);

// Rings over RDMA work as follows. The engine runs as it does in one address space: a sender puts
// a piece in a slot, its label in the slot's header and then the header's flag; a receiver waits
// for the flag, takes the piece and counts it in the ring's `taken` word (the sender's credit),
// acknowledging and asking to go back in the other control words. Here each end of a ring between
// two processes has its own copy: the receiver the ring itself, the sender an image (slots,
// headers, control words) in its own memory, and a `courier` thread per process keeps the two
// alike, as NCCL's proxy thread moves what its kernels leave in its buffers:
// - a piece whose flag the sender set in its image goes, in piece order, by an RDMA write of its
//   bytes into the receiver's slot, then an RDMA_WRITE_WITH_IMM of its label into the receiver's
//   header, the immediate naming the ring; the receiving courier, on that completion (every earlier
//   write on the queue pair has landed by then), sets the header's flag;
// - a receiver's control word that changed goes by an 8-byte RDMA write straight from the word
//   into the sender's image of it (`rewind_to` before `rewinds`, in the order the engine reads
//   them); each word only grows, so a value newer than the one that made the write is as good;
// - a stop, and a process's last word (it is done with the others' memory), are 8-byte writes into
//   the run words of its neighbours (the processes it shares a ring with); a process whose run a
//   stop ends stops its own neighbours in turn (the engine's stop), so that it reaches every
//   process the rings join to the stopping one.
// The engine reuses a slot only once its credit came back, which the receiver gives only after
// the piece landed, so no write is ever read from memory being rewritten. Slots live in the
// participants' memory, registered with the verbs: host memory on the host; on a GPU its device
// memory by dma-buf (ibv_reg_dmabuf_mr with cuMemGetHandleForAddressRange's descriptor), each
// landed piece made visible to the device (cudaDeviceFlushGPUDirectRDMAWrites) before its flag,
// or, where the GPU, its driver or the verbs export or take no dma-buf, pinned host memory the GPU
// reaches (host staging). A run the rings stopped says which verbs and which memory, with the
// link's words. A process has a queue pair to each neighbour only, and waits for their last words
// only (no other process writes into its memory): a ring's rank has two at 16,384 ranks, not
// 16,383 (each a queue pair with its receives and an address in every announcement). A failed completion stops the run
// on every process that hears of it, with the link's words
// (`why_stopped`); a process that never says its last word leaves the world broken.
class IbRings final : public RingsAcross {
 public:
  IbRings(World& world, ib::VerbsChoice choice);
  ~IbRings() override;

  void place(std::vector<std::unique_ptr<SlotRing>>& rings, int nranks, const std::vector<Device*>& devices) override;
  void stop_everyone() override;
  bool stopped() const override;
  std::string why_stopped() const override;
  bool finish(double patience) override;

  // What each process tells the others when the rings are placed (ib_rings.cc).
  struct Announcement;

  // One end of a ring between two processes, as the courier sees it.
  struct Remote {
    SlotRing* ring = nullptr;
    int index = 0;  // the ring's index, the same in every process
    int peer = 0;   // the other end's rank
    bool sending = false;
    std::uint32_t slots_key = 0;  // this end's slots, registered
    Device* flush = nullptr;      // receiving into device memory by dma-buf: made visible before the flag
    // Sending: the receiver's slots (their key) and headers; receiving: the sender's image of the
    // control words.
    std::uint64_t remote_slots = 0, remote_words = 0;
    std::uint32_t remote_slots_key = 0;
    std::uint64_t next = 0;  // sending: the next piece to go; receiving: the next to land
    // Receiving: the control words' values when they were last written, and writes in flight.
    std::uint64_t written[4] = {0, 0, 0, 0};
    int in_flight = 0;
  };

 private:
  static constexpr int kQueueDepth = 512;  // per queue pair: writes outstanding, and receives posted
  // The run words at the start of every process's words: the stop, 1 (what a stop or a last word
  // writes), then from kDoneWords one per rank, its last word.
  static constexpr std::size_t kStopWord = 0;
  static constexpr std::size_t kOneWord = 8;
  static constexpr std::size_t kDoneWords = 64;

  std::vector<std::size_t> lay_out(std::vector<std::unique_ptr<SlotRing>>& rings);
  Announcement set_up_ends(std::vector<std::unique_ptr<SlotRing>>& rings, const std::vector<Device*>& devices,
                           const std::vector<std::size_t>& at);
  void register_end(Remote& remote, const std::vector<Device*>& devices, Announcement& mine);
  std::string connect_all(const std::vector<Announcement>& all);
  std::string open_verbs(int peers_depth);
  void courier();
  bool poll_completions();
  void written(const ib::Completion& done);
  void landed(const ib::Completion& done);
  bool ship_pieces(Remote& remote);
  bool ship_control(Remote& remote);
  bool tell_neighbours(std::size_t word_offset);
  bool nothing_to_ship() const;
  void fail(const std::string& why);
  bool post(int peer, const std::byte* local, std::size_t bytes, std::uint32_t local_key, std::uint64_t remote,
            std::uint32_t remote_key, long immediate, std::uint64_t work_id);
  std::atomic<std::uint64_t>& run_word(std::size_t offset) const;

  ib::VerbsChoice choice_;
  int nranks_ = 0;
  std::unique_ptr<ib::Verbs> owned_verbs_;
  std::unique_ptr<ib::Device> device_;
  std::unique_ptr<ib::CompletionQueue> sends_, receives_;
  std::vector<int> neighbours_;                        // the ranks this process shares a ring with, ascending
  std::vector<std::unique_ptr<ib::QueuePair>> pairs_;  // per rank; null but to neighbours
  std::vector<int> outstanding_;                       // per rank: writes posted, not completed
  std::vector<ib::MemoryRegion> regions_;
  std::unique_ptr<std::byte[]> words_storage_;
  std::byte* words_ = nullptr;  // run words, then every remote ring's control and headers; registered
  std::size_t words_bytes_ = 0;
  std::uint32_t words_key_ = 0;
  std::vector<std::uint64_t> peer_words_;  // per rank: its words' address
  std::vector<std::uint32_t> peer_words_key_;
  std::vector<std::unique_ptr<SlotMemory>> slots_;  // a remote ring end's slots (ib_rings.cc)
  std::vector<Remote> remotes_;
  std::vector<int> remote_of_;  // per ring index: into remotes_, or -1
  std::thread courier_thread_;
  std::atomic<bool> quit_{false};
  std::atomic<bool> stop_asked_{false};  // stop_everyone: the courier tells the others
  bool stop_told_ = false;
  std::atomic<bool> finishing_{false};  // finish: the courier says the last word once all has gone
  std::atomic<bool> last_word_said_{false};
  std::atomic<int> outstanding_total_{0};
  mutable std::mutex failure_mutex_;
  std::string failure_;
  std::atomic<bool> failed_{false};
  std::string description_;  // the verbs and the slots' memory (`loopback; slots in host memory`)
};

}  // namespace collcheck::cuda
