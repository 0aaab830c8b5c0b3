// Work shared among threads by index: each thread takes the next index not yet taken, so that
// uneven pieces of work balance themselves. Used by check's case runners, prove's schedules and
// its rotation check.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <thread>
#include <vector>

namespace collcheck {

// Runs body(index, thread) for the indices 0..count-1 on `threads` threads (this one is thread 0;
// no more threads than indices), each index once. A thread whose body returns false takes no more.
template <typename Body>
void share_indices(std::size_t count, std::size_t threads, Body body) {
  std::atomic<std::size_t> next{0};
  const auto work = [&](std::size_t thread) {
    for (std::size_t index = next++; index < count; index = next++) {
      if (!body(index, thread)) return;
    }
  };
  std::vector<std::thread> helpers;
  for (std::size_t thread = 1; thread < std::min(threads, count); ++thread) helpers.emplace_back(work, thread);
  work(0);
  for (std::thread& helper : helpers) helper.join();
}

}  // namespace collcheck
