// A backend wrong only where a test says: it wraps a working one and ends every run of a case
// that `broken` picks with `outcome` (a crash unless told), so a test can prove that the check
// loop draws, catches and shrinks toward exactly that kind of case.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <utility>

#include "impls/backend/backend.h"

namespace collcheck::testing {

class BrokenWhere final : public Backend {
 public:
  BrokenWhere(std::unique_ptr<Backend> inner, std::function<bool(const Case&)> broken)
      : inner_(std::move(inner)), broken_(std::move(broken)) {}
  std::string name() const override { return inner_->name(); }
  Capabilities capabilities() const override {
    Capabilities capabilities = inner_->capabilities();
    if (adjust_) adjust_(capabilities);
    return capabilities;
  }
  RepeatedRun run(const Case& c, const RunOptions& options) override {
    if (broken_(c)) return RepeatedRun::ended(outcome_, "broken at " + std::to_string(c.nranks) + " ranks");
    return inner_->run(c, options);
  }
  Outcome outcome_ = Outcome::Crash;
  std::function<void(Capabilities&)> adjust_;  // what it declares beyond the inner backend's

 private:
  std::unique_ptr<Backend> inner_;
  std::function<bool(const Case&)> broken_;
};

}  // namespace collcheck::testing
