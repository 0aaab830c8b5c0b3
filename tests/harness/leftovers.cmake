# Nothing left behind (labels cli, proc, and mpi or gloo): collcheck interrupted by SIGINT or
# SIGTERM while a world starts, while cases run and while hung worlds are torn down and
# relaunched leaves no process and no file within 2 s and exits 130 or 143; after a SIGKILL the
# processes go by themselves (an mpirun deaf to its SIGTERM too: the world's guard ends it) and
# the next run sweeps the files, sparing live owners' files; a rank killed while its world
# connects leaves no segment; runs that sweep do not disturb a run going on; when mpirun fails
# every launch, collcheck ends and leaves nothing; a program, a plugin or a schedule file replaced
# while its campaign runs (removed, something else in its place) does not change what the
# campaign's worlds run. Included by
# tests/harness/CMakeLists.txt when MPI and RapidCheck are there; each test runs
# leftovers_run.cmake, which says how it counts.

# collcheck_add_leftovers_test(NAME MODE SIGNAL PHASE RANKS ARGUMENTS...)
function(collcheck_add_leftovers_test name mode signal phase ranks)
  string(REPLACE ";" "+" arguments "${ARGN}")
  add_test(NAME cli.leftovers_${name} COMMAND ${CMAKE_COMMAND} -DCOLLCHECK=$<TARGET_FILE:collcheck>
    -DWORK=${CMAKE_CURRENT_BINARY_DIR}/leftovers_${name} -DMODE=${mode} -DSIGNAL=${signal} -DPHASE=${phase}
    -DRANKS=${ranks} -DARGS=${arguments} -P ${CMAKE_CURRENT_SOURCE_DIR}/leftovers_run.cmake)
  set_tests_properties(cli.leftovers_${name} PROPERTIES LABELS "cli;proc" TIMEOUT 60 ENVIRONMENT "${root_ok}")
endfunction()

set(proc_run check --backend ring@proc --ranks 3..3 --count 0..64K --seed 1 --time-budget 40s)
collcheck_add_leftovers_test(proc_sigint_start signal INT start 3 ${proc_run})
collcheck_add_leftovers_test(proc_sigterm_running signal TERM running 3 ${proc_run})
collcheck_add_leftovers_test(proc_sigint_hangs signal INT running 2 check --backend mutant:hang@proc --ranks 2..2
  --count 0..64 --seed 3 --deadline 1s --time-budget 40s)
collcheck_add_leftovers_test(proc_sigkill_start kill KILL start 3 ${proc_run})
collcheck_add_leftovers_test(proc_sigkill_running kill KILL running 3 ${proc_run})
collcheck_add_leftovers_test(proc_sigkill_deaf_mpirun kill-deaf-mpirun KILL running 3 ${proc_run})
collcheck_add_leftovers_test(proc_dead_rank dead-rank - - 3)
collcheck_add_leftovers_test(proc_concurrent concurrent - - 2)
collcheck_add_leftovers_test(proc_launch_fails launch-fails - - 3 check --backend ring@proc --ranks 3..3
  --count 0..64 --seed 1 --cases 2 --mpirun-args --no-such-mpirun-option)
collcheck_add_leftovers_test(proc_binary_replaced binary-replaced - - 5 check --backend ring@proc --ranks 2..3
  --count 0..4K --seed 1 --time-budget 6s)
# The program and the libraries beside it, with a vendor under faults: its worlds preload the
# socket interposer, which must be the one first preloaded.
add_test(NAME cli.leftovers_interposer_replaced COMMAND ${CMAKE_COMMAND} -DCOLLCHECK=$<TARGET_FILE:collcheck>
  -DWORK=${CMAKE_CURRENT_BINARY_DIR}/leftovers_interposer_replaced -DMODE=binary-replaced -DRANKS=5 -DLIBRARIES=1
  -DARGS=check+--backend+mpi+--faults+delay:rank=1:ms=5+--collective+allgather+--ranks+2..3+--count+0..1K+--seed+1+--time-budget+6s
  -P ${CMAKE_CURRENT_SOURCE_DIR}/leftovers_run.cmake)
set_tests_properties(cli.leftovers_interposer_replaced PROPERTIES LABELS "cli;mpi" TIMEOUT 60 ENVIRONMENT "${root_ok}")
# The same for a user's plugin rebuilt while its campaign runs (the example's file replaced).
add_test(NAME cli.leftovers_plugin_replaced COMMAND ${CMAKE_COMMAND} -DCOLLCHECK=$<TARGET_FILE:collcheck>
  -DWORK=${CMAKE_CURRENT_BINARY_DIR}/leftovers_plugin_replaced -DMODE=binary-replaced -DRANKS=5
  -DPLUGIN=$<TARGET_FILE:collcheck_example_ring>
  -DARGS=check+--backend+plugin:@PLUGIN@+--ranks+2..3+--count+0..1K+--seed+1+--time-budget+6s
  -P ${CMAKE_CURRENT_SOURCE_DIR}/leftovers_run.cmake)
set_tests_properties(cli.leftovers_plugin_replaced PROPERTIES LABELS "cli;plugin" TIMEOUT 60 ENVIRONMENT "${root_ok}")
# And for a user's schedule file edited while its campaign runs.
add_test(NAME cli.leftovers_schedule_replaced COMMAND ${CMAKE_COMMAND} -DCOLLCHECK=$<TARGET_FILE:collcheck>
  -DWORK=${CMAKE_CURRENT_BINARY_DIR}/leftovers_schedule_replaced -DMODE=binary-replaced -DRANKS=3 -DSCHEDULE_RANKS=3
  -DARGS=check+--backend+schedule:@SCHEDULE@@proc+--count+0..1K+--seed+1+--time-budget+6s
  -P ${CMAKE_CURRENT_SOURCE_DIR}/leftovers_run.cmake)
set_tests_properties(cli.leftovers_schedule_replaced PROPERTIES LABELS "cli;proc" TIMEOUT 60 ENVIRONMENT "${root_ok}")

set(mpi_run check --backend mpi --ranks 3..3 --count 0..4K --seed 1 --time-budget 40s)
collcheck_add_leftovers_test(mpi_sigint_start signal INT start 3 ${mpi_run})
collcheck_add_leftovers_test(mpi_sigterm_running signal TERM running 3 ${mpi_run})
set_tests_properties(cli.leftovers_mpi_sigint_start cli.leftovers_mpi_sigterm_running PROPERTIES LABELS "cli;mpi")

if(COLLCHECK_HAVE_GLOO)
  set(gloo_run check --backend gloo:all-algorithms --ranks 3..5 --count 0..4K --seed 1 --time-budget 40s)
  collcheck_add_leftovers_test(gloo_sigint_start signal INT start 3 ${gloo_run})
  collcheck_add_leftovers_test(gloo_sigterm_running signal TERM running 3 ${gloo_run})
  collcheck_add_leftovers_test(gloo_sigkill_start kill KILL start 3 ${gloo_run})
  set_tests_properties(cli.leftovers_gloo_sigint_start cli.leftovers_gloo_sigterm_running
    cli.leftovers_gloo_sigkill_start PROPERTIES LABELS "cli;gloo")
endif()
