// Thread worlds for Gloo's algorithms in tests (gloo_worlds.h).
#include "tests/impls/gloo_worlds.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <thread>

#include "impls/backend/world.h"
#include "impls/registry.h"
#include "reference/inputs.h"
#include "reference/oracle.h"

namespace collcheck::gloo_worlds {

RankBackendSpec one_spec(const std::string& text) {
  Result<std::vector<RankBackendSpec>> specs = rank_backend_specs(text);
  EXPECT_TRUE(specs.ok()) << (specs.ok() ? "" : specs.error().text());
  EXPECT_EQ(specs.ok() ? specs->size() : 0u, 1u) << text;
  return specs.ok() && !specs->empty() ? specs->front() : RankBackendSpec{};
}

std::vector<std::string> on_world(const RankBackendSpec& spec, int nranks, const RankBody& body) {
  std::vector<std::unique_ptr<World>> worlds = make_thread_worlds(nranks);
  std::vector<std::vector<std::string>> failures(static_cast<std::size_t>(nranks));
  std::vector<std::thread> threads;
  threads.reserve(static_cast<std::size_t>(nranks));
  for (int rank = 0; rank < nranks; ++rank) {
    threads.emplace_back([&, rank] {
      auto& mine = failures[static_cast<std::size_t>(rank)];
      Result<std::unique_ptr<RankBackend>> backend = spec.make(*worlds[static_cast<std::size_t>(rank)]);
      if (!backend) {
        mine.push_back(backend.error().text());
        return;
      }
      body(rank, **backend, mine);
      // Gloo's class-style algorithms return with their last sends still in flight: no rank
      // closes its connections before every rank is done.
      worlds[static_cast<std::size_t>(rank)]->barrier();
    });
  }
  for (std::thread& t : threads) t.join();
  std::vector<std::string> all;
  for (auto& f : failures) all.insert(all.end(), f.begin(), f.end());
  return all;
}

void check_result(const Case& c, int rank, const RankResult& r, std::vector<std::string>& failures) {
  const Verdict verdict = compare(c, rank, r.output);
  if (!verdict.ok)
    failures.push_back(to_string(c) + " rank " + std::to_string(rank) + ": " + verdict.describe(c.dtype));
  if (!r.guards_intact) failures.push_back(to_string(c) + " rank " + std::to_string(rank) + ": guard zone written");
  if (!c.in_place) {
    std::vector<std::byte> want(input_elements(c, rank) * size_of(c.dtype));
    if (!want.empty()) InputGenerator(c).fill(rank, 0, want);
    if (want != r.input) failures.push_back(to_string(c) + " rank " + std::to_string(rank) + ": input changed");
  }
}

RankBody run_cases(const std::vector<Case>& cases, const RankRunOptions& options) {
  return [&cases, options](int rank, RankBackend& backend, std::vector<std::string>& failures) {
    for (const Case& c : cases) {
      const RankRun run = backend.run(c, options);
      if (run.outcome != Outcome::Ok || run.calls.size() != static_cast<std::size_t>(std::max(options.calls, 1))) {
        failures.push_back(to_string(c) + " rank " + std::to_string(rank) + ": " + std::string(name(run.outcome)) +
                           " " + run.error);
        continue;
      }
      for (std::size_t k = 0; k < run.calls.size(); ++k) {
        Case call = c;
        call.seed = c.seed + k;
        check_result(call, rank, run.calls[k], failures);
      }
    }
  };
}

std::vector<std::string> outcomes_of(const std::string& text, const Case& c) {
  return on_world(one_spec(text), c.nranks, [&](int, RankBackend& backend, std::vector<std::string>& out) {
    const RankRun run = backend.run(c, RankRunOptions{});
    out.push_back(std::string(name(run.outcome)) + ": " + run.error);
  });
}

}  // namespace collcheck::gloo_worlds
