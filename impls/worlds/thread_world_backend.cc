// Rank backends on worlds of threads (see thread_world_backend.h).
#include "impls/worlds/thread_world_backend.h"

#include <algorithm>
#include <functional>
#include <map>
#include <thread>
#include <utility>
#include <vector>

#include "impls/backend/world.h"
#include "impls/worlds/launched_backend.h"
#include "impls/worlds/wire.h"

namespace collcheck {
namespace {

// Runs `fn(rank)` on one thread per member and waits for all.
void on_every_rank(int n, const std::function<void(int)>& fn) {
  std::vector<std::thread> threads;
  threads.reserve(static_cast<std::size_t>(n));
  for (int r = 0; r < n; ++r) threads.emplace_back(fn, r);
  for (std::thread& t : threads) t.join();
}

struct Members {
  std::vector<std::unique_ptr<World>> worlds;
  std::vector<std::unique_ptr<RankBackend>> backends;
};

class ThreadWorldBackend final : public Backend {
 public:
  explicit ThreadWorldBackend(RankBackendSpec spec) : spec_(std::move(spec)) {}

  // Every rank lets go of its connections at the same time, as the members of a real world do
  // (Gloo's pairs close with a handshake that needs the peer still there).
  ~ThreadWorldBackend() override {
    for (auto& [nranks, world] : worlds_) {
      on_every_rank(nranks, [&world = world](int rank) { world.backends[static_cast<std::size_t>(rank)].reset(); });
    }
  }

  std::string name() const override { return spec_.name; }
  Capabilities capabilities() const override { return spec_.capabilities; }
  std::string cannot_run_here() const override { return spec_.cannot_run_here; }

  RepeatedRun run(const Case& c, const RunOptions& options) override {
    Result<Members*> members = world_of(c.nranks);
    if (!members) return RepeatedRun::ended(Outcome::Crash, members.error().text());
    RankRunOptions rank_options = rank_run_options(options, run_deadline(c, options, {}));
    rank_options.hook = options.hook;
    std::vector<RankRun> runs(static_cast<std::size_t>(c.nranks));
    on_every_rank(c.nranks, [&](int rank) {
      const auto index = static_cast<std::size_t>(rank);
      RankRunOptions mine = rank_options;
      if (options.inputs != nullptr) mine.input = &options.inputs->at(index);
      runs[index] = (*members)->backends[index]->run(c, mine);
    });
    const bool broken = std::any_of(runs.begin(), runs.end(), [](const RankRun& run) { return run.world_broken; });
    RepeatedRun run = wire::combine(std::move(runs));
    if (broken) drop_world(c.nranks);  // as a launcher relaunches a world its ranks call broken
    return run;
  }

 private:
  void drop_world(int nranks) {
    auto found = worlds_.find(nranks);
    if (found == worlds_.end()) return;
    Members& world = found->second;
    on_every_rank(nranks, [&world](int rank) { world.backends[static_cast<std::size_t>(rank)].reset(); });
    worlds_.erase(found);
  }

  // The world of `nranks` threads with the backend made on every member (making it may be
  // collective, so every member makes its own at once).
  Result<Members*> world_of(int nranks) {
    auto found = worlds_.find(nranks);
    if (found != worlds_.end()) return &found->second;
    Members members;
    members.worlds = make_thread_worlds(nranks);
    members.backends.resize(static_cast<std::size_t>(nranks));
    std::vector<std::string> errors(static_cast<std::size_t>(nranks));
    on_every_rank(nranks, [&](int rank) {
      const auto index = static_cast<std::size_t>(rank);
      Result<std::unique_ptr<RankBackend>> made = spec_.make(*members.worlds[index]);
      if (made) members.backends[index] = std::move(*made);
      else errors[index] = made.error().text();
    });
    for (const std::string& error : errors) {
      if (!error.empty()) return Error{"backend", spec_.name + " on " + std::to_string(nranks) + " ranks: " + error};
    }
    return &worlds_.emplace(nranks, std::move(members)).first->second;
  }

  RankBackendSpec spec_;
  std::map<int, Members> worlds_;
};

}  // namespace

std::unique_ptr<Backend> make_thread_world_backend(RankBackendSpec spec) {
  return std::make_unique<ThreadWorldBackend>(std::move(spec));
}

}  // namespace collcheck
