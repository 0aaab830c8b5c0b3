// The TCP full mesh Gloo's algorithms run on: a Gloo context whose pairs are connected by hand,
// their addresses exchanged over a World (see gloo_mesh.h).
#include "impls/vendors/gloo/gloo_mesh.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gloo/common/error.h>
#include <gloo/context.h>
#include <gloo/transport/context.h>
#include <gloo/transport/tcp/device.h>

namespace collcheck {
namespace {

// The lower-level context of gloo/context.h with its pairs connected by hand, as Gloo's MPI
// context does: every rank creates a pair per peer, the addresses travel over the world, and
// every pair connects to the address its peer created for this rank.
class MeshContext final : public gloo::Context {
 public:
  MeshContext(int this_rank, int world_size) : gloo::Context(this_rank, world_size) {}

  void connect(World& world, const std::shared_ptr<gloo::transport::Device>& device) {
    std::shared_ptr<gloo::transport::Context> transport = device->createContext(rank, size);
    transport->setTimeout(getTimeout());
    std::vector<std::byte> mine;
    for (int peer = 0; peer < size; ++peer) {
      if (peer == rank) continue;
      const std::vector<char> address = transport->createPair(peer)->address().bytes();
      const auto length = static_cast<std::uint32_t>(address.size());
      const auto* bytes = reinterpret_cast<const std::byte*>(&length);
      mine.insert(mine.end(), bytes, bytes + sizeof length);
      const auto* data = reinterpret_cast<const std::byte*>(address.data());
      mine.insert(mine.end(), data, data + address.size());
    }
    const std::vector<std::vector<std::byte>> all = world.allgather(mine);
    for (int peer = 0; peer < size; ++peer) {
      if (peer == rank) continue;
      transport->getPair(peer)->connect(address_for(all[static_cast<std::size_t>(peer)], peer));
    }
    device_ = device;
    transportContext_ = std::move(transport);
  }

 private:
  // The address `peer` created for this rank: its entries are in rank order, without itself.
  std::vector<char> address_for(const std::vector<std::byte>& entries, int peer) const {
    std::size_t at = 0;
    for (int other = 0; other < size; ++other) {
      if (other == peer) continue;
      std::uint32_t length = 0;
      if (at + sizeof length > entries.size()) break;
      std::memcpy(&length, entries.data() + at, sizeof length);
      at += sizeof length;
      if (at + length > entries.size()) break;
      if (other == rank) {
        const auto* data = reinterpret_cast<const char*>(entries.data() + at);
        return {data, data + length};
      }
      at += length;
    }
    throw gloo::Exception("rank " + std::to_string(peer) + " sent no pair address for rank " + std::to_string(rank));
  }
};

std::string host_name() {
  char name[256] = {};
  if (gethostname(name, sizeof name - 1) != 0) return "localhost";
  return name;
}

// The names of this host's network interfaces that have an IPv4 or IPv6 address, sorted, once each.
std::vector<std::string> interfaces_with_addresses() {
  std::vector<std::string> names;
  ifaddrs* list = nullptr;
  if (::getifaddrs(&list) != 0) return names;
  for (const ifaddrs* entry = list; entry != nullptr; entry = entry->ifa_next) {
    if (entry->ifa_addr == nullptr || entry->ifa_name == nullptr) continue;
    const int family = entry->ifa_addr->sa_family;
    if (family == AF_INET || family == AF_INET6) names.emplace_back(entry->ifa_name);
  }
  ::freeifaddrs(list);
  std::sort(names.begin(), names.end());
  names.erase(std::unique(names.begin(), names.end()), names.end());
  return names;
}

}  // namespace

Status check_interface(std::string_view iface) {
  const std::vector<std::string> names = interfaces_with_addresses();
  if (std::find(names.begin(), names.end(), iface) != names.end()) return Ok{};
  std::string there;
  for (const std::string& name : names) there += (there.empty() ? "" : ", ") + name;
  return Error{"iface", "iface=" + std::string(iface) + ": " +
                            (::if_nametoindex(std::string(iface).c_str()) == 0 ? "no such network interface"
                                                                               : "the interface has no address") +
                            " on " + host_name() + "; interfaces with an address: " + (there.empty() ? "none" : there)};
}

std::shared_ptr<gloo::Context> connect_gloo_mesh(World& world, const GlooKnobs& knobs,
                                                 std::chrono::milliseconds timeout) {
  // Every member names its host; one host means loopback, several mean each one's own name.
  const std::string host = host_name();
  const std::vector<std::vector<std::byte>> hosts =
      world.allgather({reinterpret_cast<const std::byte*>(host.data()), host.size()});
  bool one_host = true;
  for (const auto& other : hosts) {
    one_host = one_host && std::string(reinterpret_cast<const char*>(other.data()), other.size()) == host;
  }
  gloo::transport::tcp::attr attr;
  if (!knobs.iface.empty()) {
    attr.iface = knobs.iface;
  } else {
    attr.hostname = one_host ? "127.0.0.1" : host;
  }
  auto context = std::make_shared<MeshContext>(world.rank(), world.size());
  context->setTimeout(timeout);
  context->connect(world, gloo::transport::tcp::CreateDevice(attr));
  return context;
}

}  // namespace collcheck
