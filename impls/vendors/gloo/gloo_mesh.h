// The TCP full mesh Gloo's algorithms run on, connected over a World (no rendezvous store).
#pragma once

#include <chrono>
#include <memory>

#include "impls/backend/world.h"
#include "impls/vendors/gloo/gloo_algorithms.h"

namespace gloo {
class Context;
}

namespace collcheck {

// A Gloo context whose pairs form a full mesh over TCP, connected by exchanging the pairs'
// addresses over the world (no rendezvous store). Collective: every member calls it at once.
// Loopback when every member runs on this host, the host's name otherwise (or knobs.iface).
// `timeout` is each wait's limit for the pairs (and the class-style algorithms on them).
std::shared_ptr<gloo::Context> connect_gloo_mesh(World&, const GlooKnobs&, std::chrono::milliseconds timeout);

}  // namespace collcheck
