# tests/harness/faults_sockets.cmake: CLI tests of faults on sockets, included from CMakeLists.txt.
# Faults on real vendor traffic through libcollcheck-interpose.so, and stop/kill as signals.
#
# Every test is small (2..3 ranks, a few cases, short deadlines; Gloo's own timeout set to 1-2 s
# so a survivor gives up well inside the run's deadline). Outcome rows are matched loosely on
# `FAULT RUNS OK DETECTED ...`; what each asserts is said above it.

# collcheck_add_plan_test(NAME BACKEND PLAN REGEX): `check` on 2 ranks, 2 cases, under a plan
# of several faults joined by `+` (faults_sockets_run.cmake), exit 0 and stdout matching REGEX.
function(collcheck_add_plan_test name backend plan regex)
  add_test(NAME cli.${name} COMMAND ${CMAKE_COMMAND} -DCOLLCHECK=$<TARGET_FILE:collcheck> -DBACKEND=${backend}
    -DPLAN=${plan} -DEXPECT=${regex} -P ${CMAKE_CURRENT_SOURCE_DIR}/faults_sockets_run.cmake)
endfunction()

if(COLLCHECK_HAVE_GLOO)
  # A delay longer than Gloo's 1 s timeout reaches the traffic: the waiting rank gives up, every
  # run `detected`, none ok.
  collcheck_add_cli_test(check_gloo_delay_fault check --backend gloo:allreduce_ring:timeout=1 --ranks 2
    --count 1..64 --cases 2 --seed 1 --deadline 5s --property liveness --faults "delay:rank=1:ms=2500:times=1"
    STATUS 0 STDOUT "delay +[0-9]+ +0 +[1-9][0-9]* +0 +0 +0")
  # A short delay changes nothing but time: every run ok.
  collcheck_add_cli_test(check_gloo_short_delay_fault check --backend gloo:allreduce_ring:timeout=2 --ranks 2..3
    --count 1..1K --cases 4 --seed 1 --deadline 5s --faults "delay:rank=1:ms=5"
    STATUS 0 STDOUT " 0 failed, " "delay +[0-9]+ +[1-9][0-9]* +0 +0 +0 +0")
  # A dropped call resets the connection: Gloo sees it closed and says so, `detected`.
  collcheck_add_cli_test(check_gloo_drop_fault check --backend gloo:allreduce_ring:timeout=2 --ranks 2
    --count 1..64 --cases 1 --seed 1 --deadline 5s --property liveness --faults "drop:rank=1:times=1"
    STATUS 0 STDOUT "drop +1 +0 +1 +0 +0 +0")
  # Flipped bits reach Gloo: in its header (an exception escapes Gloo's I/O thread: `crash`) or
  # in the data (a wrong answer reported as success: `corrupt`); never all ok.
  collcheck_add_cli_test(check_gloo_corrupt_fault check --backend gloo:allreduce_ring:timeout=2 --ranks 2
    --count 1..64 --cases 3 --seed 1 --deadline 5s --faults "corrupt:rank=1:times=1"
    STATUS 1 STDOUT "FAILED [a-z-]+ on gloo:allreduce_ring" "under faults corrupt:rank=1:times=1")
  # A stopped or killed rank: the other ranks report errors (`detected`), the world is relaunched
  # and the next case runs on a fresh one (every case detected, none a crash).
  # (rank 0's delay keeps the run going past `at`: a rank killed at 0 may die before the run's
  # first barrier over the control world, which has no deadline.)
  collcheck_add_plan_test(check_gloo_kill_fault gloo:allreduce_ring:timeout=2 "delay:rank=0:ms=100+kill:rank=1:at=0.05"
    "kill +2 +0 +2 +0 +0 +0")
  set_tests_properties(cli.check_gloo_delay_fault cli.check_gloo_short_delay_fault cli.check_gloo_drop_fault
    cli.check_gloo_corrupt_fault cli.check_gloo_kill_fault PROPERTIES LABELS "cli;faults;gloo" TIMEOUT 60)
endif()

# Open MPI over btl/tcp: a short delay is ok; a reset connection leaves its ranks waiting (a
# hang at the deadline: Open MPI 4.1.4 neither retries nor reports it).
collcheck_add_cli_test(check_mpi_delay_fault check --backend mpi --ranks 2 --count 1..1K --cases 3 --seed 1
  --deadline 5s --faults "delay:rank=1:ms=5" STATUS 0 STDOUT " 0 failed, " "delay +[0-9]+ +[1-9][0-9]* +0 +0 +0 +0")
collcheck_add_cli_test(check_mpi_drop_fault check --backend mpi --ranks 2 --count 1..64 --cases 1 --seed 1
  --deadline 3s --property liveness --faults "drop:rank=1:times=1"
  STATUS 1 STDOUT "FAILED liveness on mpi" "hang: ranks? [0-9.,]+ did not return within the deadline")
# Finding: one flipped bit in the data of Open MPI's TCP traffic reaches the result and the call
# reports success (`corrupt`, caught by safety): btl/tcp carries no checksum. (Gloo: the same,
# in check_gloo_corrupt_fault above.)
collcheck_add_cli_test(check_mpi_corrupt_fault check --backend mpi --ranks 2 --count 4K..64K --cases 2 --seed 2
  --deadline 5s --property safety --faults "corrupt:rank=1:times=1"
  STATUS 1 STDOUT "FAILED safety on mpi" "the run reported success with a wrong result")
set_tests_properties(cli.check_mpi_delay_fault cli.check_mpi_drop_fault cli.check_mpi_corrupt_fault
  PROPERTIES LABELS "cli;faults;mpi" TIMEOUT 60)

# stop and kill on @proc as signals: the killed rank's peer ends `detected` (the rank's own
# delay keeps the run going past `at`), and the world is relaunched for the next case.
collcheck_add_plan_test(check_proc_kill_signal ring@proc "delay:rank=0:ms=100+kill:rank=1:at=0.05" "kill +2 +0 +2 +0 +0 +0")
set_tests_properties(cli.check_proc_kill_signal PROPERTIES LABELS "cli;faults;proc" TIMEOUT 60)

# A rank killed or stopped before the others reach a barrier of the control world (the setup of a
# new world, our Gloo adapter's barriers at a new case shape): the others give up at the run's
# deadline instead of waiting for ever (`detected`, not `hang`), and the world is relaunched.
collcheck_add_cli_test(check_proc_kill_at_start check --backend ring@proc --ranks 3 --count 1..64 --cases 2 --seed 1
  --deadline 4s --property liveness --faults "kill:rank=1" STATUS 0 STDOUT "kill +2 +0 +2 +0 +0 +0")
set_tests_properties(cli.check_proc_kill_at_start PROPERTIES LABELS "cli;faults;proc" TIMEOUT 60)
if(COLLCHECK_HAVE_GLOO)
  collcheck_add_cli_test(check_gloo_stop_at_start check --backend gloo:allreduce_ring:timeout=2 --ranks 3
    --count 4M --cases 2 --seed 1 --deadline 4s --property liveness --faults "stop:rank=1:at=0.01"
    STATUS 0 STDOUT "stop +2 +0 +2 +0 +0 +0")
  set_tests_properties(cli.check_gloo_stop_at_start PROPERTIES LABELS "cli;faults;gloo" TIMEOUT 60)
endif()
