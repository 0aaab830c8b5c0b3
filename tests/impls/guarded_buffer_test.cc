// Checks the one guarded-buffer layout every backend uses: the buffer's misalignment is the
// case's offset, and a write one byte before or after the buffer is caught, naming its zone.
#include "impls/link/guarded_buffer.h"

#include <gtest/gtest.h>

#include <cstdint>

namespace collcheck {
namespace {

std::size_t misalignment(const std::byte* address) {
  return static_cast<std::size_t>(reinterpret_cast<std::uintptr_t>(address) % kBufferAlignment);
}

TEST(GuardedBuffer, StartsTheCasesOffsetPastABoundary) {
  for (std::size_t element : {1u, 2u, 4u, 8u}) {
    for (std::size_t offset : {0u, 1u, 3u, 16u, 17u}) {
      GuardedBuffer buffer(5, element, offset);
      EXPECT_EQ(misalignment(buffer.data()), offset * element % kBufferAlignment) << element << " " << offset;
      EXPECT_EQ(buffer.bytes(), 5 * element);
      EXPECT_EQ(buffer.at(2), buffer.data() + 2 * element);
      for (std::size_t i = 0; i < buffer.bytes(); ++i) EXPECT_EQ(buffer.data()[i], std::byte{0});
    }
  }
}

TEST(GuardedBuffer, WritingTheWholeBufferKeepsTheGuards) {
  GuardedBuffer buffer(7, 4, 3);
  for (std::size_t i = 0; i < buffer.bytes(); ++i) buffer.data()[i] = std::byte{0x5a};
  EXPECT_TRUE(buffer.intact());
  EXPECT_EQ(buffer.damaged(), GuardZone::None);
}

TEST(GuardedBuffer, OneByteBeforeOrAfterIsCaughtAndNamed) {
  for (std::size_t offset : {0u, 1u, 5u}) {
    for (std::size_t count : {0u, 1u, 9u}) {
      GuardedBuffer before(count, 4, offset);
      before.data()[-1] = std::byte{0};
      EXPECT_EQ(before.damaged(), GuardZone::Front) << offset << " " << count;
      EXPECT_FALSE(before.intact());

      GuardedBuffer after(count, 4, offset);
      after.data()[after.bytes()] = std::byte{0};
      EXPECT_EQ(after.damaged(), GuardZone::Back) << offset << " " << count;

      // The far ends of the zones are checked too: the guard's first byte and its last.
      GuardedBuffer far_before(count, 4, offset);
      far_before.data()[-static_cast<std::ptrdiff_t>(offset * 4 + kGuardElements * 4)] = std::byte{1};
      EXPECT_EQ(far_before.damaged(), GuardZone::Front);
      GuardedBuffer far_after(count, 4, offset);
      far_after.data()[far_after.bytes() + kGuardElements * 4 - 1] = std::byte{1};
      EXPECT_EQ(far_after.damaged(), GuardZone::Back);
    }
  }
}

TEST(GuardedBuffer, AMovedBufferKeepsItsMemory) {
  GuardedBuffer buffer(3, 8, 1);
  std::byte* data = buffer.data();
  GuardedBuffer moved = std::move(buffer);
  EXPECT_EQ(moved.data(), data);
  moved.data()[moved.bytes()] = std::byte{0};
  EXPECT_EQ(moved.damaged(), GuardZone::Back);
  EXPECT_EQ(GuardedBuffer().data(), nullptr);
  EXPECT_TRUE(GuardedBuffer().intact());
  EXPECT_EQ(name(GuardZone::Front), "front (before the buffer)");
}

// A buffer starts zeroed even in memory the allocator hands out again (a freed buffer's, full of
// other bytes); one its maker overwrites at once is not cleared, and its guards are laid out all
// the same. A moved-from buffer holds nothing.
TEST(GuardedBuffer, StartsZeroedInReusedMemoryUnlessOverwritten) {
  for (int round = 0; round < 4; ++round) {
    {
      GuardedBuffer dirty(4096, 4, 1);
      for (std::size_t i = 0; i < dirty.bytes(); ++i) dirty.data()[i] = std::byte{0x77};
    }
    GuardedBuffer zeroed(4096, 4, 1);
    for (std::size_t i = 0; i < zeroed.bytes(); ++i) ASSERT_EQ(zeroed.data()[i], std::byte{0}) << i;
    GuardedBuffer overwritten(4096, 4, 1, kGuardElements, GuardedBuffer::Start::Overwritten);
    EXPECT_TRUE(overwritten.intact());
    EXPECT_EQ(misalignment(overwritten.data()), 4u);
    overwritten.data()[overwritten.bytes()] = std::byte{0};
    EXPECT_EQ(overwritten.damaged(), GuardZone::Back);
  }
  GuardedBuffer buffer(3, 8, 1);
  const std::size_t whole = buffer.allocation().size();
  GuardedBuffer moved = std::move(buffer);
  EXPECT_EQ(moved.allocation().size(), whole);
  EXPECT_TRUE(buffer.allocation().empty());  // NOLINT(bugprone-use-after-move): what a move leaves
  EXPECT_EQ(buffer.data(), nullptr);         // NOLINT(bugprone-use-after-move)
}

}  // namespace
}  // namespace collcheck
