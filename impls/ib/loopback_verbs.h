// The in-process loopback behind the `ib` transport's verbs interface (verbs.h): devices, regions,
// queue pairs and completion queues of one process, connected through one fabric, following the
// reliable-connected rules verbs.h lists, so that the transport runs (threads as ranks) under the
// conformance suite and faults on a machine without an RDMA device.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "impls/ib/verbs.h"

namespace collcheck::ib {

struct LoopbackOptions {
  // Receiver-not-ready retries before a write with immediate fails (7: forever, as rnr_retry 7
  // is on hardware), each `receiver_not_ready_seconds` long.
  int receiver_not_ready_retries = 7;
  double receiver_not_ready_seconds = 0.01;
};

std::unique_ptr<Verbs> make_loopback_verbs(LoopbackOptions options = {});

// This process's loopback, with the default options: what ranks that are threads of one process
// share, so that their queue pairs can connect.
Verbs& process_loopback();

// Takes the link of queue pair `number` (of a loopback made by make_loopback_verbs) down, both
// ways: its writes and its peer's, queued or later, fail with RetryExceeded, as when a cable is
// pulled or the peer's process is gone. False when there is no such queue pair.
bool break_loopback_link(Verbs& loopback, std::uint32_t number);

// How many queue pairs of a loopback made by make_loopback_verbs exist now (0 for other verbs).
std::size_t loopback_queue_pairs(Verbs& loopback);

}  // namespace collcheck::ib
