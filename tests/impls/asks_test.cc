// The engines' asks for cache lines (reference/cache_asks.h) survive compilation. GCC counts a
// prefetch as no effect: without one it must keep (ask_for's empty volatile asm) a function made
// only of asks is `const` to it and every call of one is deleted, as the simulator's prefetch_link
// and prefetch_send_links were, unnoticed for months. This file is built as the engine is (-O2;
// tests build with -Og, which deletes nothing): a probe made only of asks and a caller of it, then
// a test that reads the caller's instructions from its own binary and fails where the calls are
// gone.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "reference/cache_asks.h"

// Unmangled, so that objdump finds them by name.
extern "C" {
[[gnu::noinline]] void collcheck_test_only_asks(const void* record) { collcheck::prefetch_whole(record, 256); }
[[gnu::noinline]] void collcheck_test_calls_only_asks(const char* records) {
  collcheck_test_only_asks(records);
  collcheck_test_only_asks(records + 256);
}
}

namespace collcheck {
namespace {

// The caller still calls the function made only of asks (or holds its prefetches, inlined).
TEST(Asks, AFunctionMadeOnlyOfAsksKeepsItsCalls) {
#if !defined(__x86_64__)
  GTEST_SKIP() << "reads x86-64 instructions (prefetcht*); this is another architecture";
#else
  const std::vector<char> records(512);
  collcheck_test_calls_only_asks(records.data());
  char self[4096] = {};
  if (readlink("/proc/self/exe", self, sizeof self - 1) <= 0) GTEST_SKIP() << "cannot find this test's binary";
  const std::string command = "objdump -d --no-show-raw-insn --disassemble=collcheck_test_calls_only_asks '" +
                              std::string(self) + "' 2>/dev/null";
  const std::unique_ptr<FILE, int (*)(FILE*)> pipe(popen(command.c_str(), "r"), pclose);
  if (!pipe) GTEST_SKIP() << "cannot run objdump (binutils) to read the instructions";
  std::string text;
  char buffer[4096];
  for (std::size_t got; (got = fread(buffer, 1, sizeof buffer, pipe.get())) > 0;) text.append(buffer, got);
  if (text.find("collcheck_test_calls_only_asks") == std::string::npos) {
    GTEST_SKIP() << "objdump did not disassemble the test's own function";
  }
  EXPECT_TRUE(text.find("collcheck_test_only_asks") != std::string::npos || text.find("prefetch") != std::string::npos)
      << "the calls of a function made only of asks were deleted:\n"
      << text;
#endif
}

}  // namespace
}  // namespace collcheck
