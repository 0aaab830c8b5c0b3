// libnccl-net-collcheck.so driven as NCCL drives it, without NCCL or a GPU: loaded with dlopen,
// its ncclNetPlugin_v8 table found with dlsym, a connection made with listen/connect/accept in
// this process, messages moved with isend/irecv/test. Unarmed it moves every size intact and in
// order and refuses what NCCL's contract forbids; armed, each action (corrupt, lose, close, fail,
// delay) does what faults/nccl_net.h says, and SocketFaults turns a plan into those actions.
#include <chrono>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <dlfcn.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include "faults/nccl_net.h"
#include "faults/nccl_net_v8.h"
#include "faults/socket_faults.h"

namespace collcheck {
namespace {

// NCCL's table is nineteen words: a name and eighteen functions, in the order of ncclNet_v8_t.
static_assert(sizeof(collcheck_nccl_net_v8) == 19 * sizeof(void*));
static_assert(offsetof(collcheck_nccl_net_v8, test) == 13 * sizeof(void*));
static_assert(offsetof(collcheck_nccl_net_v8, receive_consumed) == 18 * sizeof(void*));
static_assert(offsetof(collcheck_nccl_net_properties_v8, ptr_support) == 24);
static_assert(offsetof(collcheck_nccl_net_properties_v8, net_device_version) == 56);

std::mutex logged_mutex;
std::vector<std::string> logged;  // what the plugin told NCCL's logger

void record(int /*level*/, unsigned long /*subsystems*/, const char* /*file*/, int /*line*/, const char* format, ...) {
  char text[1024];
  va_list arguments;
  va_start(arguments, format);
  std::vsnprintf(text, sizeof text, format, arguments);
  va_end(arguments);
  const std::lock_guard<std::mutex> lock(logged_mutex);
  logged.emplace_back(text);
}

bool logged_containing(const std::string& part) {
  const std::lock_guard<std::mutex> lock(logged_mutex);
  for (const std::string& line : logged) {
    if (line.find(part) != std::string::npos) return true;
  }
  return false;
}

std::vector<unsigned char> pattern(std::size_t bytes, unsigned seed) {
  std::vector<unsigned char> out(bytes);
  for (std::size_t i = 0; i < bytes; ++i) out[i] = static_cast<unsigned char>((i * 131 + seed * 17 + (i >> 8)) & 0xff);
  return out;
}

// The plugin loaded, one connection made (send end and receive end both here).
class NcclNetPlugin : public ::testing::Test {
 protected:
  void SetUp() override {
    library_ = ::dlopen(COLLCHECK_NCCL_NET_PLUGIN_PATH, RTLD_NOW | RTLD_LOCAL);
    ASSERT_NE(library_, nullptr) << ::dlerror();
    net_ = static_cast<collcheck_nccl_net_v8*>(::dlsym(library_, "ncclNetPlugin_v8"));
    ASSERT_NE(net_, nullptr) << "NCCL looks for ncclNetPlugin_v8";
    arm_ = reinterpret_cast<collcheck_net_arm_function>(::dlsym(library_, COLLCHECK_NET_ARM));
    disarm_ = reinterpret_cast<collcheck_net_disarm_function>(::dlsym(library_, COLLCHECK_NET_DISARM));
    ASSERT_NE(arm_, nullptr);
    ASSERT_NE(disarm_, nullptr);
    ASSERT_EQ(net_->init(&record), collcheck_nccl_success);
    char handle[COLLCHECK_NCCL_NET_HANDLE_MAXSIZE];
    ASSERT_EQ(net_->listen(0, handle, &listen_), collcheck_nccl_success);
    ASSERT_EQ(net_->connect(0, handle, &send_, nullptr), collcheck_nccl_success);
    ASSERT_NE(send_, nullptr) << "a listening socket completes the connection at once";
    for (int tries = 0; receive_ == nullptr && tries < 1000; ++tries) {
      ASSERT_EQ(net_->accept(listen_, &receive_, nullptr), collcheck_nccl_success);
      if (receive_ == nullptr) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    ASSERT_NE(receive_, nullptr);
  }

  void TearDown() override {
    if (net_ != nullptr) {
      if (send_ != nullptr) net_->close_send(send_);
      if (receive_ != nullptr) net_->close_receive(receive_);
      if (listen_ != nullptr) net_->close_listen(listen_);
    }
    if (library_ != nullptr) ::dlclose(library_);
    library_ = nullptr;
    net_ = nullptr;
    listen_ = send_ = receive_ = nullptr;
  }

  void* isend(std::vector<unsigned char>& data, int tag = 1) {
    void* request = nullptr;
    EXPECT_EQ(net_->isend(send_, data.data(), static_cast<int>(data.size()), tag, nullptr, &request),
              collcheck_nccl_success);
    EXPECT_NE(request, nullptr);
    return request;
  }

  void* irecv(std::vector<unsigned char>& into, int tag = 1) {
    void* data = into.data();
    int size = static_cast<int>(into.size());
    void* request = nullptr;
    EXPECT_EQ(net_->irecv(receive_, 1, &data, &size, &tag, nullptr, &request), collcheck_nccl_success);
    EXPECT_NE(request, nullptr);
    return request;
  }

  // Tests `request` until it is done, fails, or `seconds` pass; the size it reports goes to *size.
  struct Outcome {
    bool done = false;
    collcheck_nccl_result result = collcheck_nccl_success;
    int size = -1;
  };
  Outcome wait(void* request, double seconds = 10) {
    Outcome outcome;
    const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
    while (std::chrono::steady_clock::now() < end) {
      int done = 0;
      outcome.result = net_->test(request, &done, &outcome.size);
      outcome.done = done != 0;
      if (outcome.done || outcome.result != collcheck_nccl_success) return outcome;
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
    return outcome;
  }

  // Sends and receives concurrently (NCCL's proxy tests both in turn), returning both outcomes.
  std::pair<Outcome, Outcome> exchange(void* sent, void* received, double seconds = 10) {
    Outcome send_outcome, receive_outcome;
    const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
    const auto finished = [](const Outcome& outcome) {
      return outcome.done || outcome.result != collcheck_nccl_success;
    };
    while (std::chrono::steady_clock::now() < end && !(finished(send_outcome) && finished(receive_outcome))) {
      for (auto [request, outcome] : {std::pair{sent, &send_outcome}, std::pair{received, &receive_outcome}}) {
        if (finished(*outcome)) continue;
        int done = 0;
        outcome->result = net_->test(request, &done, &outcome->size);
        outcome->done = done != 0;
      }
    }
    return {send_outcome, receive_outcome};
  }

  void* library_ = nullptr;
  collcheck_nccl_net_v8* net_ = nullptr;
  collcheck_net_arm_function arm_ = nullptr;
  collcheck_net_disarm_function disarm_ = nullptr;
  void* listen_ = nullptr;
  void* send_ = nullptr;
  void* receive_ = nullptr;
};

TEST_F(NcclNetPlugin, DescribesOneHostMemoryDevice) {
  int devices = 0;
  ASSERT_EQ(net_->devices(&devices), collcheck_nccl_success);
  EXPECT_EQ(devices, 1);
  collcheck_nccl_net_properties_v8 properties{};
  ASSERT_EQ(net_->get_properties(0, &properties), collcheck_nccl_success);
  EXPECT_STREQ(properties.name, "collcheck");
  EXPECT_STREQ(net_->name, "collcheck") << "what NCCL_NET=collcheck selects";
  EXPECT_EQ(properties.ptr_support, COLLCHECK_NCCL_PTR_HOST);
  EXPECT_EQ(properties.max_recvs, 1);
  EXPECT_EQ(net_->get_properties(1, &properties), collcheck_nccl_invalid_argument);
  void* memory = nullptr;
  char buffer[8];
  EXPECT_EQ(net_->register_memory(send_, buffer, sizeof buffer, COLLCHECK_NCCL_PTR_HOST, &memory),
            collcheck_nccl_success);
  EXPECT_EQ(net_->register_memory(send_, buffer, sizeof buffer, COLLCHECK_NCCL_PTR_CUDA, &memory),
            collcheck_nccl_internal_error)
      << "device memory is refused: NCCL stages through host memory for this plugin";
}

// Sizes from empty to several times a socket's buffer (so sends go out in parts), in order.
TEST_F(NcclNetPlugin, MovesEverySizeIntactAndInOrder) {
  const std::vector<std::size_t> sizes{0, 1, 7, 4096, 65537, std::size_t{6} << 20};
  std::vector<std::vector<unsigned char>> sent, received;
  std::vector<void*> send_requests, receive_requests;
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    sent.push_back(pattern(sizes[i], static_cast<unsigned>(i)));
    received.emplace_back(sizes[i] + 16, 0);  // NCCL posts room for more than arrives
  }
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    receive_requests.push_back(irecv(received[i]));
    send_requests.push_back(isend(sent[i]));
  }
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    const auto [send_outcome, receive_outcome] = exchange(send_requests[i], receive_requests[i]);
    ASSERT_TRUE(send_outcome.done && receive_outcome.done) << "message " << i;
    EXPECT_EQ(send_outcome.size, static_cast<int>(sizes[i]));
    EXPECT_EQ(receive_outcome.size, static_cast<int>(sizes[i]));
    EXPECT_TRUE(std::equal(sent[i].begin(), sent[i].end(), received[i].begin())) << "message " << i;
  }
}

TEST_F(NcclNetPlugin, AReceiveTooSmallOrForAnotherTagIsAnErrorThatSaysSo) {
  std::vector<unsigned char> data = pattern(100, 1), small(50);
  auto outcome = exchange(isend(data), irecv(small));
  EXPECT_EQ(outcome.second.result, collcheck_nccl_system_error);
  EXPECT_TRUE(logged_containing("has 100 bytes, more than the 50 NCCL posted"));
  TearDown();
  SetUp();
  std::vector<unsigned char> room(100);
  outcome = exchange(isend(data, 7), irecv(room, 8));
  EXPECT_EQ(outcome.second.result, collcheck_nccl_system_error);
  EXPECT_TRUE(logged_containing("has tag 7 where NCCL posted a receive for tag 8"));
}

// A callback with a fixed action for message `target` (by sequence), counting what it saw.
struct FixedAction {
  std::uint64_t target = 0;
  collcheck_net_action action{0, 0, 0, 0};
  bool flip = false;
  int seen = 0;
  static void callback(void* context, const collcheck_net_message* message, collcheck_net_action* action) {
    auto& self = *static_cast<FixedAction*>(context);
    ++self.seen;
    if (message->sequence != self.target) return;
    *action = self.action;
    if (self.flip && message->bytes > 0) message->copy[0] ^= 0x10;
  }
};

TEST_F(NcclNetPlugin, ArmedCorruptionChangesWhatArrivesNotTheSendersBuffer) {
  FixedAction fixed;
  fixed.flip = true;
  ASSERT_EQ(arm_(&FixedAction::callback, &fixed), 0);
  EXPECT_EQ(arm_(&FixedAction::callback, &fixed), -1) << "armed twice";
  std::vector<unsigned char> data = pattern(64, 3), into(64);
  const std::vector<unsigned char> original = data;
  const auto [send_outcome, receive_outcome] = exchange(isend(data), irecv(into));
  disarm_();
  ASSERT_TRUE(send_outcome.done && receive_outcome.done);
  EXPECT_EQ(data, original);
  EXPECT_EQ(into[0], original[0] ^ 0x10);
  EXPECT_TRUE(std::equal(into.begin() + 1, into.end(), original.begin() + 1));
  EXPECT_EQ(fixed.seen, 1);
  std::vector<unsigned char> again(64);
  const auto unarmed = exchange(isend(data), irecv(again));
  EXPECT_TRUE(unarmed.second.done);
  EXPECT_EQ(again, original) << "disarmed: untouched";
  EXPECT_EQ(fixed.seen, 1);
}

// A lost message completes at the sender; the receiver stops at the gap, delivering neither it
// nor anything after it in its place.
TEST_F(NcclNetPlugin, ALostMessageLeavesTheReceiverWaitingAtTheGap) {
  FixedAction fixed;
  fixed.target = 1;
  fixed.action.lose = 1;
  ASSERT_EQ(arm_(&FixedAction::callback, &fixed), 0);
  std::vector<std::vector<unsigned char>> data{pattern(32, 0), pattern(32, 1), pattern(32, 2)};
  std::vector<std::vector<unsigned char>> into(3, std::vector<unsigned char>(32));
  std::vector<void*> sends, receives;
  for (int i = 0; i < 3; ++i) {
    receives.push_back(irecv(into[i]));
    sends.push_back(isend(data[i]));
  }
  disarm_();
  EXPECT_TRUE(exchange(sends[0], receives[0]).second.done);
  EXPECT_EQ(into[0], data[0]);
  for (int i = 1; i < 3; ++i) {
    const auto [send_outcome, receive_outcome] = exchange(sends[i], receives[i], 0.3);
    EXPECT_TRUE(send_outcome.done) << "the sender of message " << i << " saw nothing wrong";
    EXPECT_FALSE(receive_outcome.done) << "message " << i << " must not arrive";
    EXPECT_EQ(receive_outcome.result, collcheck_nccl_success) << "a lost message is silent: the wait is a hang";
  }
  EXPECT_TRUE(logged_containing("message 1 from the process"));
  EXPECT_TRUE(logged_containing("never arrived"));
}

TEST_F(NcclNetPlugin, ALinkDownFailsBothEnds) {
  FixedAction fixed;
  fixed.action.close_connection = 1;
  ASSERT_EQ(arm_(&FixedAction::callback, &fixed), 0);
  std::vector<unsigned char> data = pattern(32, 0), into(32);
  void* receive = irecv(into);
  void* send = isend(data);
  disarm_();
  const auto [send_outcome, receive_outcome] = exchange(send, receive);
  EXPECT_EQ(send_outcome.result, collcheck_nccl_system_error);
  EXPECT_EQ(receive_outcome.result, collcheck_nccl_system_error);
  EXPECT_TRUE(logged_containing("went down (a collcheck fault)"));
  EXPECT_TRUE(logged_containing("was closed"));
}

TEST_F(NcclNetPlugin, AFailedSendIsAnErrorFromTest) {
  FixedAction fixed;
  fixed.action.fail = 1;
  ASSERT_EQ(arm_(&FixedAction::callback, &fixed), 0);
  std::vector<unsigned char> data = pattern(32, 0);
  void* send = isend(data);
  disarm_();
  const Outcome outcome = wait(send);
  EXPECT_TRUE(outcome.done);
  EXPECT_EQ(outcome.result, collcheck_nccl_system_error);
}

TEST_F(NcclNetPlugin, ADelayedMessageLeavesNoSoonerThanItsDelay) {
  FixedAction fixed;
  fixed.action.delay_seconds = 0.2;
  ASSERT_EQ(arm_(&FixedAction::callback, &fixed), 0);
  std::vector<unsigned char> data = pattern(32, 0), into(32);
  const auto start = std::chrono::steady_clock::now();
  void* receive = irecv(into);
  void* send = isend(data);
  disarm_();
  const auto outcome = exchange(send, receive);
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_TRUE(outcome.second.done);
  EXPECT_GE(took, 0.2);
  EXPECT_EQ(into, data);
}

// SocketFaults' decisions reach the plugin: this process is rank 0 and, as the listener too,
// rank 1 (pids {me, me}), so link 0->1 is this connection.
TEST_F(NcclNetPlugin, APlanDecidesThroughSocketFaults) {
  const long me = ::getpid();
  Result<FaultPlan> plan = parse_fault_plan("corrupt:link=0->1:times=1:bits=1;drop:link=0->1:after=2");
  ASSERT_TRUE(plan.ok());
  SocketFaults faults(*plan, 5, 10, 0, {me, me});
  ArmedNcclNet armed(faults, COLLCHECK_NCCL_NET_PLUGIN_PATH);
  ASSERT_TRUE(armed.armed()) << armed.why();
  std::vector<std::vector<unsigned char>> data{pattern(64, 0), pattern(64, 1), pattern(64, 2)};
  std::vector<std::vector<unsigned char>> into(3, std::vector<unsigned char>(64));
  std::vector<void*> sends, receives;
  for (int i = 0; i < 3; ++i) {
    receives.push_back(irecv(into[i]));
    sends.push_back(isend(data[i]));
  }
  EXPECT_TRUE(exchange(sends[0], receives[0]).second.done);
  EXPECT_NE(into[0], data[0]) << "corrupted once";
  EXPECT_TRUE(exchange(sends[1], receives[1]).second.done);
  EXPECT_EQ(into[1], data[1]);
  EXPECT_FALSE(exchange(sends[2], receives[2], 0.3).second.done) << "dropped from message 2 on";
  EXPECT_EQ(faults.summary(), "drop 1, corrupt 1");
}

TEST(NcclNetFaults, ActionsFollowTheKindThatFired) {
  const long me = ::getpid();
  std::vector<unsigned char> bytes(16, 0);
  collcheck_net_message message{me, 0, 0, 1, bytes.data(), bytes.size()};
  const auto action_of = [&](std::string_view text) {
    Result<FaultPlan> plan = parse_fault_plan(text);
    EXPECT_TRUE(plan.ok()) << text;
    SocketFaults faults(*plan, 1, 10, 0, {me, me});
    return faults.on_net_message(message);
  };
  EXPECT_EQ(action_of("drop:rank=0").lose, 1);
  EXPECT_EQ(action_of("link-down:link=0->1").close_connection, 1);
  EXPECT_EQ(action_of("link-down:link=0->1").lose, 0);
  EXPECT_EQ(action_of("link-flap:link=0->1:period=1000").fail, 1);
  EXPECT_DOUBLE_EQ(action_of("delay:rank=0:ms=30").delay_seconds, 0.03);
  const collcheck_net_action untouched = action_of("drop:rank=1");
  EXPECT_EQ(untouched.lose + untouched.close_connection + untouched.fail, 0);
  EXPECT_EQ(untouched.delay_seconds, 0);
}

TEST(NcclNetFaults, ArmingAMissingLibrarySaysWhy) {
  Result<FaultPlan> plan = parse_fault_plan("drop");
  ASSERT_TRUE(plan.ok());
  SocketFaults faults(*plan, 1, 10, 0, {});
  ArmedNcclNet armed(faults, "/nonexistent/libnccl-net-collcheck.so");
  EXPECT_FALSE(armed.armed());
  EXPECT_NE(armed.why().find("cannot load the NCCL net plugin /nonexistent/libnccl-net-collcheck.so"),
            std::string::npos)
      << armed.why();
}

}  // namespace
}  // namespace collcheck
