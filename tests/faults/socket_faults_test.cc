// SocketFaults, the interposer's callback, without LD_PRELOAD: what it decides for calls on a real
// loopback TCP connection (reset, sleep, flipped bits in the copy), which peer rank a socket
// leads to, and which kinds it leaves alone. The interposer itself is tested on real Gloo and
// Open MPI traffic by tests/harness/faults_sockets.cmake.
#include "faults/socket_faults.h"

#include <cstring>
#include <vector>

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

namespace collcheck {
namespace {

FaultPlan plan_of(std::string_view text) {
  Result<FaultPlan> plan = parse_fault_plan(text);
  EXPECT_TRUE(plan.ok()) << text;
  return plan ? *plan : FaultPlan{};
}

// A connected loopback pair: `client` and `server` both held by this process.
struct LoopbackPair {
  int client = -1, server = -1;
  LoopbackPair() {
    const int listener = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t length = sizeof address;
    if (::bind(listener, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0 || ::listen(listener, 1) != 0 ||
        ::getsockname(listener, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
      ::close(listener);
      return;
    }
    client = ::socket(AF_INET, SOCK_STREAM, 0);
    if (::connect(client, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0)
      server = ::accept(listener, nullptr, nullptr);
    ::close(listener);
  }
  ~LoopbackPair() {
    if (client >= 0) ::close(client);
    if (server >= 0) ::close(server);
  }
};

std::vector<std::byte> bytes(std::size_t n) {
  std::vector<std::byte> out(n);
  for (std::size_t i = 0; i < n; ++i) out[i] = static_cast<std::byte>(i * 7 + 1);
  return out;
}

int bits_differing(const std::vector<std::byte>& a, const std::vector<std::byte>& b) {
  int n = 0;
  for (std::size_t i = 0; i < a.size(); ++i) n += __builtin_popcount(static_cast<unsigned>(a[i] ^ b[i]));
  return n;
}

TEST(SocketFaults, KindsAStreamCanTake) {
  for (FaultKind kind : {FaultKind::Drop, FaultKind::LinkDown, FaultKind::LinkFlap, FaultKind::Delay,
                         FaultKind::Straggler, FaultKind::Corrupt}) {
    EXPECT_TRUE(injectable_on_sockets(kind)) << to_string(kind);
  }
  for (FaultKind kind : {FaultKind::Duplicate, FaultKind::Reorder, FaultKind::Stop, FaultKind::Kill}) {
    EXPECT_FALSE(injectable_on_sockets(kind)) << to_string(kind);
  }
}

TEST(SocketFaults, CorruptFlipsBitsInTheCopyOnce) {
  LoopbackPair pair;
  ASSERT_GE(pair.server, 0);
  SocketFaults faults(plan_of("corrupt:rank=0:times=1:bits=3"), 7, 10, 0, {});
  const std::vector<std::byte> original = bytes(64);
  std::vector<std::byte> copy = original;
  const collcheck_socket_action first = faults.on_send(pair.client, copy);
  EXPECT_EQ(first.reset, 0);
  EXPECT_EQ(first.delay_seconds, 0);
  EXPECT_EQ(bits_differing(original, copy), 3);
  std::vector<std::byte> again = original;
  faults.on_send(pair.client, again);
  EXPECT_EQ(again, original) << "times=1: the second call passes untouched";
  EXPECT_TRUE(faults.broke_connections());
  EXPECT_NE(faults.summary().find("corrupt 1"), std::string::npos) << faults.summary();
}

TEST(SocketFaults, DropResetsAndDelaySleeps) {
  LoopbackPair pair;
  ASSERT_GE(pair.server, 0);
  std::vector<std::byte> copy = bytes(16);
  SocketFaults drop(plan_of("drop:rank=0:after=1"), 1, 10, 0, {});
  EXPECT_EQ(drop.on_send(pair.client, copy).reset, 0) << "after=1: call 0 passes";
  EXPECT_EQ(drop.on_send(pair.client, copy).reset, 1);
  EXPECT_TRUE(drop.broke_connections());
  SocketFaults delay(plan_of("delay:rank=0:ms=20"), 1, 10, 0, {});
  const collcheck_socket_action action = delay.on_send(pair.client, copy);
  EXPECT_EQ(action.reset, 0);
  EXPECT_DOUBLE_EQ(action.delay_seconds, 0.02);
  EXPECT_FALSE(delay.broke_connections()) << "a delay leaves the stream intact";
}

TEST(SocketFaults, OtherRanksFaultsLeaveThisRankAlone) {
  LoopbackPair pair;
  ASSERT_GE(pair.server, 0);
  SocketFaults faults(plan_of("drop:rank=1"), 1, 10, 0, {});
  std::vector<std::byte> copy = bytes(16);
  EXPECT_EQ(faults.on_send(pair.client, copy).reset, 0);
  EXPECT_EQ(faults.summary(), "nothing");
}

// Both ends are in this process, so with pids {me, me} the client's peer is rank 1; a link
// fault to rank 2 (another pid) never fires, and without pids the peer is unknown.
TEST(SocketFaults, LinkTargetsFindThePeerRank) {
  LoopbackPair pair;
  ASSERT_GE(pair.server, 0);
  const long me = ::getpid();
  SocketFaults known(plan_of("drop:link=0->1"), 1, 10, 0, {me, me});
  EXPECT_EQ(known.peer_of(pair.client), 1);
  std::vector<std::byte> copy = bytes(16);
  EXPECT_EQ(known.on_send(pair.client, copy).reset, 1);
  SocketFaults elsewhere(plan_of("drop:link=0->2"), 1, 10, 0, {me, me, 1});
  EXPECT_EQ(elsewhere.on_send(pair.client, copy).reset, 0);
  SocketFaults unknown(plan_of("drop:link=0->1"), 1, 10, 0, {});
  EXPECT_EQ(unknown.on_send(pair.client, copy).reset, 0);
  EXPECT_NE(unknown.summary().find("1 calls to a peer of unknown rank"), std::string::npos) << unknown.summary();
}

TEST(SocketFaults, SignalsAndStreamlessKindsAreNotInjectedHere) {
  LoopbackPair pair;
  ASSERT_GE(pair.server, 0);
  SocketFaults faults(plan_of("kill:rank=0;duplicate:rank=0"), 1, 10, 0, {});
  std::vector<std::byte> copy = bytes(16);
  const collcheck_socket_action action = faults.on_send(pair.client, copy);
  EXPECT_EQ(action.reset, 0) << "kill is a signal (the worker's), not a reset";
  EXPECT_EQ(copy, bytes(16));
  EXPECT_NE(faults.summary().find("not injected on sockets: kill:rank=0"), std::string::npos) << faults.summary();
  EXPECT_NE(faults.summary().find("not injected on sockets: duplicate:rank=0"), std::string::npos) << faults.summary();
}

TEST(SocketFaults, TheCallbackNeverThrowsAndArmingWithoutThePreloadIsANoOp) {
  SocketFaults faults(plan_of("drop"), 1, 10, 0, {});
  unsigned char data[4] = {1, 2, 3, 4};
  collcheck_socket_action action{1, 1};
  SocketFaults::callback(&faults, -1, data, sizeof data, &action);  // not a socket: peer unknown
  EXPECT_EQ(action.reset, 1) << "an untargeted drop hits every call";
  EXPECT_FALSE(interposer_loaded()) << "this test runs without LD_PRELOAD";
  ArmedInterposer armed(faults, {});
  EXPECT_FALSE(armed.armed());
}

}  // namespace
}  // namespace collcheck
