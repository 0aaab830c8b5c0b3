// What worlds leave on a host: the owner pid each name carries (today's names, older builds'
// and names that are not ours), and the removal by owner and the sweep of dead owners' files,
// which never touches a live owner's; and the lines of a world's log kept as its directory goes.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <sys/wait.h>
#include <unistd.h>

#include "impls/worlds/launched_world.h"
#include "impls/worlds/leftovers.h"

namespace collcheck {
namespace {

TEST(Leftovers, NamesCarryTheirOwnersPid) {
  EXPECT_EQ(owner_of("collcheck-world-1234-0"), 1234);
  EXPECT_EQ(owner_of("collcheck-mpi-1234-7-2-pid5678"), 5678);
  EXPECT_EQ(owner_of("collcheck-threads-99-3-0-pid99"), 99);
  EXPECT_EQ(owner_of("collcheck-mpi-1234-1796141844-2"), 1234);  // older builds: rank 0's pid
  const std::string mine = segment_name("mpi-1-2", 3);
  EXPECT_EQ(mine, "collcheck-mpi-1-2-3-pid" + std::to_string(::getpid()));
  EXPECT_EQ(owner_of(mine), ::getpid());
}

TEST(Leftovers, OtherNamesHaveNoOwner) {
  for (const char* name : {"collcheck-world-12x-0", "collcheck-world-1-2-3", "collcheck-mpi-1-2",
                           "collcheck-mpi-1-2-3-pid", "collcheck-mpi-1-2-3-4-5", "collcheck-other-1-2-3",
                           "vader_segment.1.2", "collcheck-world--0", "collcheck-mpi-1-2-3-pid99999999999999999999"}) {
    EXPECT_EQ(owner_of(name), 0) << name;
  }
  EXPECT_EQ(segment_name("a/b c", 0).substr(0, 16), "collcheck-a_b_c-");
}

// A pid that was ours and is now dead (reaped).
long dead_pid() {
  const pid_t child = ::fork();
  if (child == 0) ::_exit(0);
  int status = 0;
  ::waitpid(child, &status, 0);
  return child;
}

TEST(Leftovers, RemovalByOwnerTakesOnlyThatOwnersSegments) {
  const long dead = dead_pid();
  const std::filesystem::path theirs = world_base() / ("collcheck-mpi-9-9-0-pid" + std::to_string(dead));
  const std::filesystem::path mine = world_base() / segment_name("mpi-9-9", 1);
  std::ofstream(theirs.string()).put('x');
  std::ofstream(mine.string()).put('x');
  remove_segments_of({dead});
  EXPECT_FALSE(std::filesystem::exists(theirs));
  EXPECT_TRUE(std::filesystem::exists(mine));
  std::filesystem::remove(mine);
}

TEST(Leftovers, TheSweepRemovesDeadOwnersFilesAndSparesLiveOnes) {
  const std::string dead = std::to_string(dead_pid()), live = std::to_string(::getpid());
  const std::filesystem::path dead_world = world_base() / ("collcheck-world-" + dead + "-7");
  const std::filesystem::path dead_segment = world_base() / ("collcheck-mpi-" + dead + "-7-0-pid" + dead);
  const std::filesystem::path live_world = world_base() / ("collcheck-world-" + live + "-7");
  const std::filesystem::path live_segment = world_base() / ("collcheck-mpi-" + dead + "-7-1-pid" + live);
  std::filesystem::create_directories(dead_world / "inside");
  std::filesystem::create_directories(live_world);
  std::ofstream(dead_segment.string()).put('x');
  std::ofstream(live_segment.string()).put('x');
  sweep_leftovers();
  EXPECT_FALSE(std::filesystem::exists(dead_world));
  EXPECT_FALSE(std::filesystem::exists(dead_segment));
  EXPECT_TRUE(std::filesystem::exists(live_world));
  EXPECT_TRUE(std::filesystem::exists(live_segment));
  std::filesystem::remove_all(live_world);
  std::filesystem::remove(live_segment);
}

// What a dead world's log says of how its processes ended, and nothing else; a long report is cut.
TEST(Leftovers, WorldLogsKeepTheLinesThatSayHowAProcessEnded) {
  const std::string log =
      "rank 0 is up\n"
      "/usr/include/c++/12/bits/stl_vector.h:1124:34: runtime error: reference binding to null pointer\n"
      "    #0 0x561240deba71 in std::vector<signed char>::operator[](unsigned long)\n"
      "==12==ERROR: AddressSanitizer: heap-buffer-overflow on address 0x602\n"
      "terminate called after throwing an instance of 'std::runtime_error'\n"
      "mpirun noticed that process rank 1 with PID 0 on node host exited on signal 6 (Aborted).\n"
      "a last ordinary line\n";
  EXPECT_EQ(notable_log_lines(log),
            "\n    /usr/include/c++/12/bits/stl_vector.h:1124:34: runtime error: reference binding to null pointer"
            "\n    ==12==ERROR: AddressSanitizer: heap-buffer-overflow on address 0x602"
            "\n    terminate called after throwing an instance of 'std::runtime_error'"
            "\n    mpirun noticed that process rank 1 with PID 0 on node host exited on signal 6 (Aborted).");
  EXPECT_EQ(notable_log_lines(log, 1),
            "\n    /usr/include/c++/12/bits/stl_vector.h:1124:34: runtime error: reference binding to null pointer");
  EXPECT_EQ(notable_log_lines("all well\nstill well\n"), "");
}

// Workers of a world across hosts connect to this host's name and run the program's path (every
// host has it, not this process's image): every spelling Open MPI takes for a host list or file
// says so, and nothing else does. Catches a spelling missed (the ranks on other hosts would dial
// 127.0.0.1) and an ordinary option read as one.
TEST(Leftovers, HostListsAndHostFilesInEverySpellingSpanHosts) {
  for (const std::vector<std::string>& arguments :
       std::vector<std::vector<std::string>>{{"--host", "a,b"},
                                             {"--host=a,b"},
                                             {"-H", "a"},
                                             {"-host", "a"},
                                             {"--hostfile", "hosts"},
                                             {"-hostfile", "hosts"},
                                             {"--machinefile", "hosts"},
                                             {"-machinefile=hosts"},
                                             {"--mca", "btl", "tcp,self", "--default-hostfile", "hosts"}}) {
    EXPECT_TRUE(spans_hosts(arguments)) << arguments.front();
  }
  for (const std::vector<std::string>& arguments : std::vector<std::vector<std::string>>{
           {}, {"--mca", "btl", "tcp,self"}, {"--hosts", "a"}, {"--map-by", "ppr:1:node"}, {"-np", "4"}}) {
    EXPECT_FALSE(spans_hosts(arguments)) << (arguments.empty() ? "(none)" : arguments.front());
  }
}

}  // namespace
}  // namespace collcheck
