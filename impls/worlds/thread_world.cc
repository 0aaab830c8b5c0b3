// Worlds whose members are threads of one process (tests, and a launched worker serving every rank
// as a thread): allgather and barrier meet on a shared board under a mutex, generation by
// generation; past a member's deadline with others missing, the board is broken for every member.
#include <atomic>
#include <condition_variable>
#include <mutex>

#include <unistd.h>

#include "impls/backend/world.h"
#include "reference/numbers.h"

namespace collcheck {
namespace {

struct Board {
  std::mutex lock;
  std::condition_variable changed;
  int size = 0;
  int arrived = 0;
  std::uint64_t generation = 0;
  std::vector<std::vector<std::byte>> slots;
  std::vector<std::vector<std::byte>> last;  // the completed round's slots
  std::vector<bool> joined;                  // this round's
  std::string job;
  std::string broken;  // why, once a member waited past its deadline: every call throws it
};

class ThreadWorld final : public World {
 public:
  ThreadWorld(std::shared_ptr<Board> board, int rank) : board_(std::move(board)), rank_(rank) {}
  int rank() const override { return rank_; }
  int size() const override { return board_->size; }
  std::string job() const override { return board_->job; }

  std::vector<std::vector<std::byte>> allgather(std::span<const std::byte> mine) override {
    Board& b = *board_;
    std::unique_lock<std::mutex> guard(b.lock);
    if (!b.broken.empty()) throw WorldTimeout{b.broken};
    b.slots[static_cast<std::size_t>(rank_)].assign(mine.begin(), mine.end());
    b.joined[static_cast<std::size_t>(rank_)] = true;
    const std::uint64_t generation = b.generation;
    if (++b.arrived == b.size) {
      b.last = std::move(b.slots);
      b.slots.assign(static_cast<std::size_t>(b.size), {});
      b.joined.assign(static_cast<std::size_t>(b.size), false);
      b.arrived = 0;
      ++b.generation;
      b.changed.notify_all();
      return b.last;
    }
    const auto done = [&] { return b.generation != generation || !b.broken.empty(); };
    if (deadline_ == std::chrono::steady_clock::time_point::max()) {
      b.changed.wait(guard, done);
    } else if (!b.changed.wait_until(guard, deadline_, done)) {
      std::vector<std::uint64_t> missing;
      for (std::size_t other = 0; other < b.joined.size(); ++other) {
        if (!b.joined[other]) missing.push_back(other);
      }
      b.broken = "rank " + std::to_string(rank_) + " waited past its deadline for " + ranks_text(missing) +
                 " to join the world's call";
      b.changed.notify_all();
    }
    if (b.generation == generation) throw WorldTimeout{b.broken};
    return b.last;  // copied under the lock, before the next round can replace it
  }

  void barrier() override { allgather({}); }

  // Past it, a call some member never joins breaks the board for every member (WorldTimeout).
  void set_deadline(std::chrono::steady_clock::time_point deadline) override { deadline_ = deadline; }

 private:
  std::shared_ptr<Board> board_;
  int rank_;
  std::chrono::steady_clock::time_point deadline_ = std::chrono::steady_clock::time_point::max();
};

}  // namespace

std::vector<std::unique_ptr<World>> make_thread_worlds(int size) {
  static std::atomic<int> worlds{0};
  auto board = std::make_shared<Board>();
  board->size = size;
  board->slots.assign(static_cast<std::size_t>(size), {});
  board->joined.assign(static_cast<std::size_t>(size), false);
  board->job = "threads-" + std::to_string(::getpid()) + "-" + std::to_string(worlds++);
  std::vector<std::unique_ptr<World>> members;
  members.reserve(static_cast<std::size_t>(size));
  for (int r = 0; r < size; ++r) members.push_back(std::make_unique<ThreadWorld>(board, r));
  return members;
}

}  // namespace collcheck
