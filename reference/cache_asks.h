// Asks to the cache for lines ahead of their use: the one way the engines below (the simulator's
// records, a step cursor's next step, the fault injector's per-link draws) prefetch, kept here,
// below every layer that asks, beside the other small machine-level helpers (random.h, memory.h).
#pragma once

#include <cstddef>
#include <cstdint>

namespace collcheck {

// Asks the cache for the line at `address`, with low temporal locality: on x86 a prefetcht2, into
// the second level and not the first, whose 48 KiB the simulator's asks of twelve events' records
// crowd (measured side by side at 16,384 ranks: 3-13 % more messages a second in lockstep than
// prefetcht0, the full run with faults 152.3 s against 159.4).
// The empty volatile asm is an effect the compiler must keep: GCC counts a prefetch as none, so a
// function whose only work is asks became `const` to it and every call of one was deleted,
// unnoticed until the instructions were read (Asks.AFunctionMadeOnlyOfAsksKeepsItsCalls reads them).
inline void ask_for(const void* address) {
  __builtin_prefetch(address, 0, 1);
  asm volatile("");
}

// Every cache line of the `bytes` from `record` on (worked out as addresses, not pointers: the
// step after a stored participant's last lies past its vector, and an ask never faults).
inline void prefetch_whole(const void* record, std::size_t bytes) {
  const auto ask_at = [](std::uintptr_t address) {
    ask_for(reinterpret_cast<const void*>(address));  // NOLINT(performance-no-int-to-ptr): only asked for
  };
  const auto first = reinterpret_cast<std::uintptr_t>(record);
  for (std::uintptr_t line = first; line < first + bytes; line += 64) ask_at(line);
  ask_at(first + bytes - 1);
}

}  // namespace collcheck
