# `collcheck check` across processes (labels proc, mpi, gloo): worlds launched through mpirun by
# check itself, lockstep under mpirun, and the mutants that hang and crash, which must be
# reported as findings within their deadline while the run goes on. Included by
# tests/harness/CMakeLists.txt when MPI and RapidCheck are there.

set(root_ok "OMPI_ALLOW_RUN_AS_ROOT=1;OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1")

# Every reference algorithm @proc on 2..5 processes with a fixed seed.
collcheck_add_cli_test(check_all_proc check --backend all@proc --seed 20261129 --ranks 2..5
  --count 0..4K --time-budget 60s STATUS 0 STDOUT " 0 failed, " EMPTY stderr)
set_tests_properties(cli.check_all_proc PROPERTIES LABELS "cli;proc" TIMEOUT 240)

# The same loop on every rank of a world the user launched (rank 0 alone prints).
add_test(NAME cli.check_ring_proc_lockstep
  COMMAND ${CMAKE_COMMAND} -P ${CMAKE_CURRENT_SOURCE_DIR}/check_cli.cmake --
    RUN ${MPIEXEC_EXECUTABLE} -np 3 --oversubscribe --bind-to none $<TARGET_FILE:collcheck> check
      --backend ring@proc --backend tree@proc --seed 7 --count 0..4K --time-budget 20s
    STATUS 0 STDOUT "in lockstep on 3 ranks" " 0 failed, ")
set_tests_properties(cli.check_ring_proc_lockstep PROPERTIES LABELS "cli;proc" ENVIRONMENT "${root_ok}" TIMEOUT 120)

# A rank that stops forever is a hang, a rank that aborts is a crash: both are findings with a
# shrunk case and a replay line, reported within the deadline, and the run completes.
collcheck_add_cli_test(check_hang_mutant check --backend mutant:hang@proc --seed 3 --ranks 2..4
  --count 0..64 --deadline 3s --time-budget 30s STATUS 1
  STDOUT "FAILED liveness on mutant:hang@proc" "hang: rank\\(s\\) [0-9, ]+ did not return within the deadline of 3\\.0 s"
  "replay: collcheck replay --backend 'mutant:hang@proc'")
set_tests_properties(cli.check_hang_mutant PROPERTIES LABELS "cli;proc" TIMEOUT 120)
collcheck_add_cli_test(check_crash_mutant check --backend mutant:crash@proc --seed 3 --ranks 2..4
  --count 0..64 --deadline 10s --time-budget 30s STATUS 1
  STDOUT "FAILED liveness on mutant:crash@proc" "crash: rank [0-9]+ died: signal 6 \\(SIGABRT\\)"
  "replay: collcheck replay --backend 'mutant:crash@proc'")
set_tests_properties(cli.check_crash_mutant PROPERTIES LABELS "cli;proc" TIMEOUT 120)
