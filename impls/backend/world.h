// A world of processes (or, in tests, threads) seen from one member: its rank, the size, and a
// control channel that is not under test, for rendezvous, agreement on verdicts and results.
#pragma once

#include <chrono>
#include <cstddef>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "reference/result.h"

namespace collcheck {

// Thrown by a World whose collective call outlasted its deadline (set_deadline): some member
// never joined (stopped, killed, or stuck elsewhere). The world is broken afterwards. Not a
// std::exception on purpose, so that adapters catching a vendor's errors let it through.
struct WorldTimeout {
  std::string what;
};

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
  // From now on, allgather and barrier throw WorldTimeout once `deadline` has passed with some
  // member missing; time_point::max() (the default) waits for ever.
  virtual void set_deadline(std::chrono::steady_clock::time_point /*deadline*/) {}
};

// One allgather that also says whether every member is still in: each member passes its bytes and
// "" or the error that stopped it (its bytes then unused); every member gets every member's bytes in
// rank order, or, where any failed, the first failure ("rank 2: why") alike. A member that failed
// before a step of setting up says so at that step, so that no other member waits at the next one
// for it (until a deadline) or goes on alone.
Result<std::vector<std::vector<std::byte>>> allgather_unless_failed(World&, std::span<const std::byte> mine,
                                                                    const std::string& failed);
// The same with nothing to share: the first failure, "" where none failed.
std::string first_failure(World&, const std::string& failed);

// `size` worlds whose members are threads of this process (tests; a worker serving every rank as a
// thread): make_thread_worlds(4) gives four members that must each be driven by its own thread.
// Past a member's deadline (set_deadline) with others missing from a call, every member's calls
// throw WorldTimeout from then on.
std::vector<std::unique_ptr<World>> make_thread_worlds(int size);

}  // namespace collcheck
