// The TCP full mesh Gloo's algorithms run on, connected over a World (no rendezvous store).
#pragma once

#include <chrono>
#include <memory>
#include <string_view>

#include "impls/backend/world.h"
#include "impls/vendors/gloo/gloo_algorithms.h"
#include "reference/result.h"

namespace gloo {
class Context;
}

namespace collcheck {

// A Gloo context whose pairs form a full mesh over TCP, connected by exchanging the pairs'
// addresses over the world (no rendezvous store). Collective: every member calls it at once.
// Loopback when every member runs on this host, the host's name otherwise (or knobs.iface).
// `timeout` is each wait's limit for the pairs (and the class-style algorithms on them).
std::shared_ptr<gloo::Context> connect_gloo_mesh(World&, const GlooKnobs&, std::chrono::milliseconds timeout);

// Whether `iface` (the `iface=` option) names a network interface of this host with an address,
// which Gloo's TCP device needs; the error names it and the interfaces there are. Checked before
// any world starts: a missing interface is the user's environment, not a fault of Gloo's.
Status check_interface(std::string_view iface);

}  // namespace collcheck
