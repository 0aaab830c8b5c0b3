// libibverbs loaded at run time: on a machine without an RDMA device it loads (where the library
// is installed) and says there is no device, by name; where a device is found, two queue pairs of
// it connected to each other move a write with immediate, as on the loopback.
#include <cstring>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "impls/ib/ibverbs.h"

namespace collcheck::ib {
namespace {

TEST(IbVerbs, LoadsAndNamesWhatItFinds) {
  Result<std::unique_ptr<Verbs>> verbs = load_ibverbs();
  if (!verbs) {
    EXPECT_NE(verbs.error().text().find("cannot load libibverbs.so.1"), std::string::npos) << verbs.error().text();
    GTEST_SKIP() << verbs.error().text();
  }
  EXPECT_EQ((*verbs)->name(), "libibverbs");
  Result<std::vector<std::string>> devices = (*verbs)->devices();
  if (!devices) {
    EXPECT_NE(devices.error().text().find("no RDMA device here"), std::string::npos) << devices.error().text();
    Result<std::unique_ptr<Device>> opened = (*verbs)->open("", 0, 0);
    EXPECT_FALSE(opened.ok());
    GTEST_SKIP() << devices.error().text();
  }
  EXPECT_FALSE(devices->empty());
}

// On a machine with an active port: a queue pair connected to another of the same port.
TEST(IbVerbs, AWriteWithImmediateOnARealDevice) {
  Result<std::unique_ptr<Verbs>> verbs = load_ibverbs();
  if (!verbs) GTEST_SKIP() << verbs.error().text();
  Result<std::unique_ptr<Device>> device = (*verbs)->open("", 0, 0);
  if (!device) GTEST_SKIP() << device.error().text();
  auto sends = std::move((*device)->create_completion_queue(16).value());
  auto receives = std::move((*device)->create_completion_queue(16).value());
  auto a = std::move((*device)->create_queue_pair(*sends, *receives, 16).value());
  auto b = std::move((*device)->create_queue_pair(*sends, *receives, 16).value());
  ASSERT_TRUE(a->connect(b->address()).ok());
  ASSERT_TRUE(b->connect(a->address()).ok());
  std::vector<std::byte> from(64, std::byte{7}), to(64);
  MemoryRegion source = (*device)->register_memory(from.data(), from.size(), LocalWrite).value();
  MemoryRegion target = (*device)->register_memory(to.data(), to.size(), LocalWrite | RemoteWrite).value();
  ASSERT_TRUE(b->post_receive(1).ok());
  WriteRequest request;
  request.work_id = 2;
  request.local = from.data();
  request.bytes = from.size();
  request.local_key = source.local_key;
  request.remote_address = reinterpret_cast<std::uint64_t>(to.data());
  request.remote_key = target.remote_key;
  request.with_immediate = true;
  request.immediate = 99;
  ASSERT_TRUE(a->post_write(request).ok());
  Completion got[2];
  std::size_t n = 0;
  for (int spin = 0; spin < 100000 && n == 0; ++spin) n = receives->poll(got);
  ASSERT_EQ(n, 1u);
  EXPECT_EQ(got[0].status, CompletionStatus::Success);
  EXPECT_EQ(got[0].immediate, 99u);
  EXPECT_EQ(to, from);
  (*device)->deregister(source);
  (*device)->deregister(target);
}

}  // namespace
}  // namespace collcheck::ib
