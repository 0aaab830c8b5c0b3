// The suite's backends. A rank backend on worlds of threads: one world per rank count, made on
// first use and kept; each run starts every rank on its own thread and combines their results
// as a launcher would, so the suite sees one Backend whatever runs underneath.
#include "tests/conformance/backends.h"

#include <map>
#include <utility>

#include "impls/backend/rank_backend.h"
#include "impls/backend/world.h"
#include "impls/registry.h"
#include "impls/worlds/launched_backend.h"
#include "impls/worlds/mpi_world.h"
#include "impls/worlds/wire.h"
#include "tests/support/rank_group.h"

namespace collcheck::conformance {
namespace {

using testing::on_every_rank;

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
    Result<testing::Group*> members = world_of(c.nranks);
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
    return wire::combine(std::move(runs));
  }

 private:
  // The world of `nranks` threads with the backend made on every member (making it may be
  // collective, so every member makes its own at once).
  Result<testing::Group*> world_of(int nranks) {
    auto found = worlds_.find(nranks);
    if (found != worlds_.end()) return &found->second;
    testing::Group members;
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
  std::map<int, testing::Group> worlds_;
};

}  // namespace

std::unique_ptr<Backend> on_thread_worlds(RankBackendSpec spec) {
  return std::make_unique<ThreadWorldBackend>(std::move(spec));
}

std::vector<std::string> expand(std::string_view spec) {
  std::vector<std::string> names;
  if (runs_across_processes(spec)) {
    Result<std::vector<RankBackendSpec>> specs = rank_backend_specs(spec);
    if (specs) {
      names.reserve(specs->size());
      for (const RankBackendSpec& one : *specs) names.push_back(one.name);
    }
  } else if (Result<std::vector<std::unique_ptr<Backend>>> backends = make_backends(spec)) {
    names.reserve(backends->size());
    for (const std::unique_ptr<Backend>& backend : *backends) names.push_back(backend->name());
  }
  if (names.empty()) names.emplace_back(spec);
  return names;
}

Result<std::unique_ptr<Backend>> make_backend(std::string_view spec) {
  std::vector<std::unique_ptr<Backend>> backends;
  if (runs_across_processes(spec) && !launched_by_launcher()) {
    Result<std::vector<RankBackendSpec>> specs = rank_backend_specs(spec);
    if (!specs) return specs.error();
    backends.reserve(specs->size());
    for (RankBackendSpec& one : *specs) backends.push_back(on_thread_worlds(std::move(one)));
  } else {
    Result<std::vector<std::unique_ptr<Backend>>> made = make_backends(spec);
    if (!made) return made.error();
    backends = std::move(*made);
  }
  if (backends.size() != 1) {
    return Error{"backend",
                 "'" + std::string(spec) + "' names " + std::to_string(backends.size()) + " backends, not one"};
  }
  return std::move(backends.front());
}

}  // namespace collcheck::conformance
