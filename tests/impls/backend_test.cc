// What every backend gets from the interface (impls/backend/backend.h): a run that throws is
// reported `detected` with its cause, and every backend make_backends returns is caught that way.
#include <gtest/gtest.h>

#include <memory>
#include <stdexcept>
#include <string>

#include "impls/backend/backend.h"
#include "impls/registry.h"
#include "reference/case.h"

namespace collcheck {
namespace {

// A backend whose run throws what it is told to, or an int.
class ThrowingBackend final : public Backend {
 public:
  explicit ThrowingBackend(bool standard) : standard_(standard) {}
  std::string name() const override { return "throwing"; }
  Capabilities capabilities() const override { return {}; }
  RepeatedRun run(const Case&, const RunOptions&) override {
    if (standard_) throw std::logic_error("chunk count wrapped");
    throw 7;
  }

 private:
  bool standard_;
};

Case small_case() {
  Case c;
  c.nranks = 2;
  c.count = 4;
  return c;
}

TEST(CaughtBackend, AnExceptionInTheRunIsDetectedWithItsMessage) {
  const std::unique_ptr<Backend> backend = catching_exceptions(std::make_unique<ThrowingBackend>(true));
  const RepeatedRun run = backend->run(small_case(), RunOptions{});
  EXPECT_EQ(run.outcome, Outcome::Detected);
  EXPECT_EQ(run.error, "an exception in the run: chunk count wrapped");
  EXPECT_TRUE(run.calls.empty()) << "nothing is handed to the oracle";
  EXPECT_EQ(backend->name(), "throwing");
}

TEST(CaughtBackend, AnythingElseThrownIsDetectedToo) {
  const std::unique_ptr<Backend> backend = catching_exceptions(std::make_unique<ThrowingBackend>(false));
  const RepeatedRun run = backend->run(small_case(), RunOptions{});
  EXPECT_EQ(run.outcome, Outcome::Detected);
  EXPECT_NE(run.error.find("not a std::exception"), std::string::npos) << run.error;
}

TEST(CaughtBackend, BackendsFromARegistrySpecRunAsBefore) {
  auto backends = make_backends("ring@sim", BackendOptions{});
  ASSERT_TRUE(backends.ok()) << backends.error().message;
  ASSERT_EQ(backends->size(), 1u);
  EXPECT_EQ((*backends)[0]->name(), "ring@sim");
  const RepeatedRun run = (*backends)[0]->run(small_case(), RunOptions{});
  EXPECT_EQ(run.outcome, Outcome::Ok) << run.error;
}

}  // namespace
}  // namespace collcheck
