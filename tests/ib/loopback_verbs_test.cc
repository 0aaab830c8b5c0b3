// The loopback verbs hold to the reliable-connected rules verbs.h lists, each shown passing and,
// where a rule forbids something, the forbidden thing failing as hardware fails it: writes with
// immediates land in order and complete the peer's receives; receiver-not-ready waits and, past
// the limit, fails; remote keys, ranges, permissions and protection domains are checked, local
// keys too; a queue pair in error flushes everything; a link taken down fails both ends; bytes
// are read when the write is carried out, not when it is posted.
#include <cstring>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "impls/ib/loopback_verbs.h"

namespace collcheck::ib {
namespace {

// One end: a device (its own protection domain), completion queues, a queue pair, and a buffer
// registered for local and remote writes.
struct End {
  std::unique_ptr<Device> device;
  std::unique_ptr<CompletionQueue> sends, receives;
  std::unique_ptr<QueuePair> pair;
  std::vector<std::byte> buffer = std::vector<std::byte>(4096);
  MemoryRegion region;

  explicit End(Verbs& verbs, unsigned access = LocalWrite | RemoteWrite) {
    device = std::move(verbs.open("", 0, 0).value());
    sends = std::move(device->create_completion_queue(64).value());
    receives = std::move(device->create_completion_queue(64).value());
    pair = std::move(device->create_queue_pair(*sends, *receives, 64).value());
    region = device->register_memory(buffer.data(), buffer.size(), access).value();
  }

  std::vector<Completion> drain(CompletionQueue& queue) {
    std::vector<Completion> all;
    Completion batch[8];
    for (std::size_t n; (n = queue.poll(batch)) > 0;) all.insert(all.end(), batch, batch + n);
    return all;
  }
};

void connect(End& a, End& b) {
  ASSERT_TRUE(a.pair->connect(b.pair->address()).ok());
  ASSERT_TRUE(b.pair->connect(a.pair->address()).ok());
}

WriteRequest write_of(const End& from, const End& to, std::size_t at, std::size_t bytes, std::uint64_t id,
                      std::uint32_t immediate) {
  WriteRequest request;
  request.work_id = id;
  request.local = from.buffer.data() + at;
  request.bytes = bytes;
  request.local_key = from.region.local_key;
  request.remote_address = reinterpret_cast<std::uint64_t>(to.buffer.data() + at);
  request.remote_key = to.region.remote_key;
  request.with_immediate = true;
  request.immediate = immediate;
  return request;
}

TEST(LoopbackVerbs, WritesWithImmediateLandInOrderAndCompleteTheReceives) {
  auto verbs = make_loopback_verbs();
  End a(*verbs), b(*verbs);
  connect(a, b);
  for (std::size_t i = 0; i < a.buffer.size(); ++i) a.buffer[i] = static_cast<std::byte>(i * 7 + 1);
  // Posted before any receive, the writes queue up behind the first (receiver not ready).
  for (std::uint32_t k = 0; k < 4; ++k) ASSERT_TRUE(a.pair->post_write(write_of(a, b, k * 1024, 1000, k, 50 + k)).ok());
  for (std::uint64_t r = 0; r < 4; ++r) ASSERT_TRUE(b.pair->post_receive(100 + r).ok());
  const std::vector<Completion> received = b.drain(*b.receives);
  ASSERT_EQ(received.size(), 4u);
  for (std::uint32_t k = 0; k < 4; ++k) {
    EXPECT_EQ(received[k].work_id, 100 + k) << "receives are consumed in the order they were posted";
    EXPECT_EQ(received[k].immediate, 50 + k) << "writes land in the order they were posted";
    EXPECT_EQ(received[k].bytes, 1000u);
    EXPECT_EQ(received[k].status, CompletionStatus::Success);
    EXPECT_EQ(std::memcmp(b.buffer.data() + k * 1024, a.buffer.data() + k * 1024, 1000), 0);
  }
  const std::vector<Completion> sent = a.drain(*a.sends);
  ASSERT_EQ(sent.size(), 4u);
  EXPECT_EQ(sent[3].work_id, 3u);
}

TEST(LoopbackVerbs, NothingIsPostedBeforeTheQueuePairIsConnected) {
  auto verbs = make_loopback_verbs();
  End a(*verbs), b(*verbs);
  EXPECT_FALSE(a.pair->post_write(write_of(a, b, 0, 8, 1, 0)).ok());
}

TEST(LoopbackVerbs, AWriteWaitsForAReceiveAndFailsPastTheRetryLimit) {
  auto verbs = make_loopback_verbs();
  End a(*verbs), b(*verbs);
  connect(a, b);
  a.buffer[0] = std::byte{42};
  ASSERT_TRUE(a.pair->post_write(write_of(a, b, 0, 1, 1, 7)).ok());
  EXPECT_TRUE(a.drain(*a.sends).empty()) << "receiver not ready: the write waits";
  EXPECT_EQ(b.buffer[0], std::byte{0}) << "nothing lands while it waits";
  ASSERT_TRUE(b.pair->post_receive(9).ok());
  const std::vector<Completion> received = b.drain(*b.receives);
  ASSERT_EQ(received.size(), 1u);
  EXPECT_EQ(received[0].immediate, 7u);
  EXPECT_EQ(b.buffer[0], std::byte{42});

  auto limited = make_loopback_verbs(LoopbackOptions{2, 0.005});
  End c(*limited), d(*limited);
  connect(c, d);
  ASSERT_TRUE(c.pair->post_write(write_of(c, d, 0, 1, 1, 7)).ok());
  ASSERT_TRUE(c.pair->post_write(write_of(c, d, 8, 1, 2, 8)).ok());
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  const std::vector<Completion> failed = c.drain(*c.sends);
  ASSERT_EQ(failed.size(), 2u);
  EXPECT_EQ(failed[0].status, CompletionStatus::ReceiverNotReady);
  EXPECT_EQ(failed[1].status, CompletionStatus::Flushed) << "after a failure the queue pair flushes the rest";
  EXPECT_TRUE(c.pair->in_error());
}

TEST(LoopbackVerbs, RemoteKeysRangesAndPermissionsAreChecked) {
  auto verbs = make_loopback_verbs();
  const auto fails_with = [&](auto change, unsigned access) {
    End a(*verbs), b(*verbs, access);
    connect(a, b);
    ASSERT_TRUE(b.pair->post_receive(1).ok());
    WriteRequest request = write_of(a, b, 0, 64, 1, 0);
    change(request, b);
    ASSERT_TRUE(a.pair->post_write(request).ok());
    const std::vector<Completion> sent = a.drain(*a.sends);
    ASSERT_EQ(sent.size(), 1u);
    EXPECT_EQ(sent[0].status, CompletionStatus::RemoteAccess);
    EXPECT_TRUE(a.pair->in_error());
    EXPECT_TRUE(b.pair->in_error()) << "the responder saw the bad request too";
    const std::vector<Completion> flushed = b.drain(*b.receives);
    ASSERT_EQ(flushed.size(), 1u);
    EXPECT_EQ(flushed[0].status, CompletionStatus::Flushed);
    for (std::byte byte : b.buffer) ASSERT_EQ(byte, std::byte{0}) << "nothing was written";
  };
  fails_with([](WriteRequest& r, const End&) { r.remote_key += 2; }, LocalWrite | RemoteWrite);
  fails_with(
      [](WriteRequest& r, const End& b) { r.remote_address = reinterpret_cast<std::uint64_t>(b.buffer.data() + 4090); },
      LocalWrite | RemoteWrite);
  fails_with([](WriteRequest&, const End&) {}, LocalWrite);
  // A key of another protection domain (a third device's region) is no key here.
  End other(*verbs);
  fails_with(
      [&](WriteRequest& r, const End&) {
        r.remote_key = other.region.remote_key;
        r.remote_address = reinterpret_cast<std::uint64_t>(other.buffer.data());
      },
      LocalWrite | RemoteWrite);
}

TEST(LoopbackVerbs, LocalBytesMustLieInTheirRegion) {
  auto verbs = make_loopback_verbs();
  End a(*verbs), b(*verbs);
  connect(a, b);
  std::vector<std::byte> unregistered(16);
  WriteRequest request = write_of(a, b, 0, 16, 1, 0);
  request.local = unregistered.data();
  ASSERT_TRUE(a.pair->post_write(request).ok());
  const std::vector<Completion> sent = a.drain(*a.sends);
  ASSERT_EQ(sent.size(), 1u);
  EXPECT_EQ(sent[0].status, CompletionStatus::LocalProtection);
  ASSERT_TRUE(a.pair->post_write(write_of(a, b, 0, 16, 2, 0)).ok());
  const std::vector<Completion> later = a.drain(*a.sends);
  ASSERT_EQ(later.size(), 1u);
  EXPECT_EQ(later[0].status, CompletionStatus::Flushed) << "a queue pair in error takes nothing more";
}

TEST(LoopbackVerbs, ALinkDownFailsBothEnds) {
  auto verbs = make_loopback_verbs();
  End a(*verbs), b(*verbs);
  connect(a, b);
  ASSERT_TRUE(b.pair->post_receive(1).ok());
  ASSERT_TRUE(break_loopback_link(*verbs, a.pair->address().number));
  ASSERT_TRUE(a.pair->post_write(write_of(a, b, 0, 8, 1, 0)).ok());
  EXPECT_EQ(a.drain(*a.sends).at(0).status, CompletionStatus::RetryExceeded);
  WriteRequest back = write_of(b, a, 0, 8, 2, 0);
  back.with_immediate = false;
  ASSERT_TRUE(b.pair->post_write(back).ok());
  EXPECT_EQ(b.drain(*b.sends).at(0).status, CompletionStatus::RetryExceeded);
  EXPECT_EQ(b.drain(*b.receives).at(0).status, CompletionStatus::Flushed);
}

TEST(LoopbackVerbs, APeerThatIsGoneIsRetryExceeded) {
  auto verbs = make_loopback_verbs();
  End a(*verbs);
  {
    End b(*verbs);
    connect(a, b);
  }
  WriteRequest request;
  request.work_id = 5;
  ASSERT_TRUE(a.pair->post_write(request).ok());
  EXPECT_EQ(a.drain(*a.sends).at(0).status, CompletionStatus::RetryExceeded);
}

TEST(LoopbackVerbs, UnsignaledWritesCompleteSilentlyAndBytesAreReadWhenCarriedOut) {
  auto verbs = make_loopback_verbs();
  End a(*verbs), b(*verbs);
  connect(a, b);
  a.buffer[0] = std::byte{1};
  WriteRequest quiet = write_of(a, b, 0, 1, 1, 0);
  quiet.signaled = false;
  ASSERT_TRUE(a.pair->post_write(quiet).ok()) << "waits: no receive posted";
  a.buffer[0] = std::byte{2};  // changed before the write was carried out
  ASSERT_TRUE(b.pair->post_receive(1).ok());
  EXPECT_EQ(b.buffer[0], std::byte{2}) << "the bytes are read when the write is carried out";
  EXPECT_TRUE(a.drain(*a.sends).empty()) << "unsignalled";
  EXPECT_EQ(b.drain(*b.receives).size(), 1u);
}

// Two threads, as two ranks: each writes to the other and waits for the other's write.
TEST(LoopbackVerbs, TwoThreadsExchange) {
  auto verbs = make_loopback_verbs();
  End a(*verbs), b(*verbs);
  connect(a, b);
  const auto exchange = [](End& mine, End& theirs, std::byte value) {
    mine.buffer[0] = value;
    ASSERT_TRUE(mine.pair->post_receive(1).ok());
    WriteRequest request = write_of(mine, theirs, 0, 1, 1, 0);
    request.remote_address += 8;  // into theirs.buffer[8], away from the byte they send
    ASSERT_TRUE(mine.pair->post_write(request).ok());
    Completion got[1];
    while (mine.receives->poll(got) == 0) std::this_thread::yield();
    EXPECT_EQ(got[0].status, CompletionStatus::Success);
  };
  std::thread other([&] { exchange(b, a, std::byte{20}); });
  exchange(a, b, std::byte{10});
  other.join();
  EXPECT_EQ(a.buffer[8], std::byte{20});
  EXPECT_EQ(b.buffer[8], std::byte{10});
}

}  // namespace
}  // namespace collcheck::ib
