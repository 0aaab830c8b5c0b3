// Test helper: n members of one world of threads, each with its own rank part of the same
// backend spec, and a way to run something on every member at once.
#pragma once

#include <functional>
#include <memory>
#include <string_view>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "impls/backend/rank_backend.h"
#include "impls/backend/world.h"
#include "impls/registry.h"

namespace collcheck::testing {

struct Group {
  std::vector<std::unique_ptr<World>> worlds;
  std::vector<std::unique_ptr<RankBackend>> backends;
};

inline Group make_group(std::string_view spec, int n) {
  Result<std::vector<RankBackendSpec>> specs = rank_backend_specs(spec);
  EXPECT_TRUE(specs.ok()) << (specs ? "" : specs.error().text());
  Group group;
  group.worlds = make_thread_worlds(n);
  group.backends.reserve(static_cast<std::size_t>(n));
  for (int r = 0; r < n; ++r)
    group.backends.push_back(specs->at(0).make(*group.worlds[static_cast<std::size_t>(r)]).value());
  return group;
}

// Runs `fn(rank)` on one thread per member and waits for all.
inline void on_every_rank(int n, const std::function<void(int)>& fn) {
  std::vector<std::thread> threads;
  threads.reserve(static_cast<std::size_t>(n));
  for (int r = 0; r < n; ++r) threads.emplace_back(fn, r);
  for (std::thread& t : threads) t.join();
}

}  // namespace collcheck::testing
