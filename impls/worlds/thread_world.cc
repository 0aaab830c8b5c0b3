// Worlds whose members are threads of one process (for tests): allgather and barrier meet on a
// shared board under a mutex, generation by generation.
#include <atomic>
#include <condition_variable>
#include <mutex>

#include <unistd.h>

#include "impls/backend/world.h"

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
  std::string job;
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
    b.slots[static_cast<std::size_t>(rank_)].assign(mine.begin(), mine.end());
    const std::uint64_t generation = b.generation;
    if (++b.arrived == b.size) {
      b.last = std::move(b.slots);
      b.slots.assign(static_cast<std::size_t>(b.size), {});
      b.arrived = 0;
      ++b.generation;
      b.changed.notify_all();
    } else {
      b.changed.wait(guard, [&] { return b.generation != generation; });
    }
    return b.last;  // copied under the lock, before the next round can replace it
  }

  void barrier() override { allgather({}); }

 private:
  std::shared_ptr<Board> board_;
  int rank_;
};

}  // namespace

std::vector<std::unique_ptr<World>> make_thread_worlds(int size) {
  static std::atomic<int> worlds{0};
  auto board = std::make_shared<Board>();
  board->size = size;
  board->slots.assign(static_cast<std::size_t>(size), {});
  board->job = "threads-" + std::to_string(::getpid()) + "-" + std::to_string(worlds++);
  std::vector<std::unique_ptr<World>> members;
  members.reserve(static_cast<std::size_t>(size));
  for (int r = 0; r < size; ++r) members.push_back(std::make_unique<ThreadWorld>(board, r));
  return members;
}

}  // namespace collcheck
