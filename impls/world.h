// A world of processes (or, in tests, threads) seen from one member: its rank, the size, and a
// control channel that is not under test, for rendezvous, agreement on verdicts and results.
#pragma once

#include <cstddef>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace collcheck {

class World {
 public:
  virtual ~World() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // Names this world uniquely on its hosts (for shared-memory segments and files), the same
  // on every member.
  virtual std::string job() const = 0;
  // Every member's bytes in rank order, on every member; a collective: all members call it.
  virtual std::vector<std::vector<std::byte>> allgather(std::span<const std::byte>) = 0;
  virtual void barrier() = 0;
};

// `size` worlds whose members are threads of this process, for tests: make_thread_worlds(4)
// gives four members that must each be driven by its own thread.
std::vector<std::unique_ptr<World>> make_thread_worlds(int size);

}  // namespace collcheck
