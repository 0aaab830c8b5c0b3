# Campaigns across hosts (label cli, and mpi where mpiexec runs them): `check --share` splits each
# backend's stream of cases among the processes of an mpirun job, and rank 0 prints one report
# with the failures and replay lines one process finds over the same cases; a share that stops is
# named. Included by tests/harness/CMakeLists.txt when MPI and RapidCheck are there; the runs
# under mpiexec go through campaign_run.cmake, which says what it compares.

# collcheck_add_campaign_test(NAME MODE SHARES LABEL ARGUMENTS...)
function(collcheck_add_campaign_test name mode shares label)
  string(REPLACE ";" "+" arguments "${ARGN}")
  add_test(NAME cli.campaign_${name} COMMAND ${CMAKE_COMMAND} -DCOLLCHECK=$<TARGET_FILE:collcheck>
    -DMPIEXEC=${MPIEXEC_EXECUTABLE} -DWORK=${CMAKE_CURRENT_BINARY_DIR}/campaign_${name} -DMODE=${mode}
    -DSHARES=${shares} -DARGS=${arguments} -P ${CMAKE_CURRENT_SOURCE_DIR}/campaign_run.cmake)
  set_tests_properties(cli.campaign_${name} PROPERTIES LABELS "cli;mpi;${label}" TIMEOUT 120 ENVIRONMENT "${root_ok}")
endfunction()

# Two broken backends (each found by its own groups): 3 shares find what 1 process finds.
collcheck_add_campaign_test(same_failures_as_one_process same 3 sim --backend mutant:drop-remainder@sim
  --backend mutant:chunk-off-by-one@sim --seed 5 --cases 60 --jobs 1 --count 0..4K --time-budget 5m)
# 6 s at -O2, 105 s at -O0 under the sanitizers (32 s at -O1, since stored steps are no longer read
# through a coroutine): labelled long, run by the long preset; the two tests below run in ci.
set_tests_properties(cli.campaign_same_failures_as_one_process PROPERTIES LABELS "cli;mpi;sim;long")
# Under random faults (plans drawn per case, stepped over with the cases of other shares).
collcheck_add_campaign_test(same_failures_under_faults same 2 faults --backend mutant:drop-remainder@sim --seed 11
  --cases 40 --jobs 1 --count 0..1K --faults random:corrupt --time-budget 5m)
# Share 1 of 2 stops: rank 0 reports past --share-wait, naming it, and ends the job.
collcheck_add_campaign_test(missing_share missing 2 sim --backend ring@sim --seed 1 --jobs 1 --time-budget 4s
  --share-wait 1s)

# Each share launches worlds of its own (mpirun in mpirun): the launcher's variables are not theirs.
collcheck_add_campaign_test(same_failures_across_processes same 2 proc --backend mutant:drop-remainder@proc
  --seed 4 --cases 12 --jobs 1 --ranks 2..3 --count 0..1K --time-budget 5m)

# Bad --share values name the field and what it takes; a share alone (no launcher) runs its
# cases and says so.
collcheck_add_cli_test(campaign_share_past_count check --backend ring@sim --share 3/2 STATUS 2
  STDERR "^collcheck check: --share '3/2': must be auto \\(the launcher's rank and size\\) or I/N, share I of N with 0 <= I < N <= 65536\n$")
collcheck_add_cli_test(campaign_share_not_a_share check --backend ring@sim --share x STATUS 2
  STDERR "^collcheck check: --share 'x': must be auto ")
collcheck_add_cli_test(campaign_share_auto_without_launcher check --backend ring@sim --share auto STATUS 2
  STDERR "^collcheck check: --share auto: no launcher started this process .*give --share I/N\n$")
collcheck_add_cli_test(campaign_share_wait_alone check --backend ring@sim --share-wait 5s STATUS 2
  STDERR "^collcheck check: --share-wait goes with --share \\(a campaign\\)\n$")
collcheck_add_cli_test(campaign_share_alone check --backend ring@sim --share 1/2 --seed 3 --cases 8 --jobs 1 STATUS 0
  STDOUT "share 1/2 of a campaign \\(this share alone: no launcher to merge over\\)" "\n4 cases in " EMPTY stderr)
add_test(NAME cli.campaign_share_not_its_own
  COMMAND ${CMAKE_COMMAND} -P ${CMAKE_CURRENT_SOURCE_DIR}/check_cli.cmake --
    RUN ${MPIEXEC_EXECUTABLE} -np 2 --oversubscribe --bind-to none $<TARGET_FILE:collcheck> check
      --backend ring@sim --share 0/3
    STATUS 2 STDERR "--share '0/3': the launcher started this process as share 1/2; give auto \\(or that\\)\n")
set_tests_properties(cli.campaign_share_not_its_own PROPERTIES LABELS "cli;mpi" ENVIRONMENT "${root_ok}" TIMEOUT 60)
set_tests_properties(cli.campaign_share_past_count cli.campaign_share_not_a_share
  cli.campaign_share_auto_without_launcher cli.campaign_share_wait_alone cli.campaign_share_alone
  PROPERTIES LABELS "cli;sim")
