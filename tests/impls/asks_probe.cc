// Asks for cache lines as the `sim` engine makes them, in a function made of nothing else and one
// that calls it (as prefetch_ahead calls prefetch_link), built with the engine's optimisation (-O2;
// tests build with -Og, which deletes nothing) for Asks.AFunctionMadeOnlyOfAsksKeepsItsCalls
// (simulator_test.cc) to read. Unmangled, so that the test finds them in its own instructions.
#include "impls/sim/simulation.h"

extern "C" {

[[gnu::noinline]] void collcheck_test_only_asks(const void* record) { collcheck::sim::prefetch_whole(record, 256); }

[[gnu::noinline]] void collcheck_test_calls_only_asks(const char* records) {
  collcheck_test_only_asks(records);
  collcheck_test_only_asks(records + 256);
}

}  // extern "C"
