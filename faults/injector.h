// The fault injector: applies a FaultPlan to every message through the LinkHook that executors
// call on each send, deterministically from one seed, and counts what it did.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "faults/plan.h"
#include "impls/link/hook.h"

namespace collcheck {

// Whether a kind can be expressed through the hook's SendDecision: every kind can (duplicate
// and reorder through SendDecision::duplicates and ::reorder). Transports that cannot honour a
// decision (a byte stream cannot reorder) say so themselves.
bool injectable(FaultKind);

class FaultInjector : public LinkHook {
 public:
  // `deadline`: seconds from the start after which a waiting participant is reported.
  // `link_bandwidth`: bytes per second that a straggler's slowdown factor multiplies the
  // transfer time of (sim_fabric's links: 25 GB/s).
  FaultInjector(FaultPlan plan, std::uint64_t seed, double deadline, double link_bandwidth = 25e9);

  SendDecision on_send(const Message&, std::span<std::byte> payload) override;
  double deadline() const override { return deadline_; }
  // Every send comes from one thread (the simulator's event loop): on_send takes no lock, which
  // at millions of messages a second is a tenth of the simulator's time.
  void serve_one_thread() { one_thread_ = true; }

  const FaultPlan& plan() const { return plan_; }
  // Messages each fault (in plan order) changed: dropped, delayed, corrupted.
  std::vector<std::uint64_t> affected_per_fault() const;
  // The same summed per kind, indexed by FaultKind.
  std::array<std::uint64_t, fault_kind_count> affected_per_kind() const;
  // The plan's faults this transport cannot inject (see injectable), in plan order.
  std::vector<Fault> not_injected() const;
  // `drop 3, corrupt 1` (kinds that affected nothing are left out; `nothing` when none did).
  std::string summary() const;

 private:
  struct State {
    std::uint64_t messages = 0;  // of the target seen so far
    std::uint64_t bytes = 0;     // of the target's traffic seen so far
    std::uint64_t affected = 0;
  };

  bool fires(std::size_t index, const Message&);
  void apply(std::size_t index, const Message&, std::span<std::byte> payload, SendDecision&);
  void corrupt(std::size_t index, const Message&, std::span<std::byte> payload);
  std::uint64_t link_start(std::size_t index, const Message&);
  std::uint64_t draw(std::size_t index, const Message&, std::uint64_t purpose);

  FaultPlan plan_;
  double deadline_;
  double link_bandwidth_;
  mutable std::mutex mutex_;  // executors with progress threads may send concurrently
  bool one_thread_ = false;   // serve_one_thread
  std::vector<State> states_;
  std::vector<std::uint64_t> bases_;  // per fault: where its draws start, mix64(seed ^ its fault_keys key)
};

}  // namespace collcheck
