# tests/harness/verdicts.cmake: verdicts that must never be wrong about collcheck itself, included
# from CMakeLists.txt. An exception in a rank is `detected` with its message (never its buffers
# judged as data), a timeout is clamped below the deadline (a lost link is `detected`, not a
# `hang`), a link timeout waits for a large message on a slow link, an interface that is not
# there is a usage error, and an mpirun that cannot start ranks here is "cannot run here" (77) —
# none of these a crash of the backend.

# A user's timeout past the virtual deadline (61 s against 60) is clamped to half of it: the
# link that went down is detected, not waited on until the run is a hang.
collcheck_add_cli_test(replay_timeout_clamped_below_deadline replay --backend "ring@sim:timeout=61000"
  --property liveness --faults "link-down:link=1->0" "allreduce/i8/sum/n=1/ranks=2" STATUS 0
  STDOUT "outcome: detected: [^\n]*no message for 30 s \\(the link timeout\\)" "held +liveness" EMPTY stderr)

# A 2 MB message on a 1 MB/s link needs 2 s, four times the 0.5 s link timeout: waited for.
collcheck_add_cli_test(simulate_slow_link_waits_for_its_message simulate --ranks 2 --counts 1M
  --topology ${CMAKE_CURRENT_SOURCE_DIR}/slow-ethernet.topo STATUS 0
  STDOUT "\n +4194304 +1048576 +f32 +sum +- +[0-9.]+ +[0-9.]+ +[0-9.]+ +0 +[0-9a-f]+\n" EMPTY stderr)
set_tests_properties(cli.replay_timeout_clamped_below_deadline cli.simulate_slow_link_waits_for_its_message
  PROPERTIES LABELS "cli;sim;faults")

if(COLLCHECK_HAVE_RAPIDCHECK AND COLLCHECK_HAVE_MPI)
  set(root_ok "OMPI_ALLOW_RUN_AS_ROOT=1;OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1;ASAN_OPTIONS=detect_leaks=0:abort_on_error=1")
  # A rank that throws inside the call (mutant:throw@proc), in a launched world: the run is
  # detected with the exception's message, never the buffers as the throw left them; a peer
  # left waiting for it (here for a minute) is not waited for past a second.
  collcheck_add_cli_test(replay_exception_in_worker_is_detected replay --backend "mutant:throw@proc:timeout=60000"
    --deadline 8s --property liveness "allreduce/f32/sum/n=4096/ranks=2" STATUS 1
    STDOUT "outcome: detected: rank 0: still inside the call when rank 1's exception ended the run; rank 1: an exception: mutant:throw: an invariant broken inside the call"
    "FAILED +liveness: detected on a clean run")
  set_tests_properties(cli.replay_exception_in_worker_is_detected PROPERTIES LABELS "cli;proc" TIMEOUT 60)
  # The same in lockstep under mpirun.
  add_test(NAME cli.check_exception_in_lockstep_is_detected
    COMMAND ${CMAKE_COMMAND} -P ${CMAKE_CURRENT_SOURCE_DIR}/check_cli.cmake --
      RUN ${MPIEXEC_EXECUTABLE} -np 2 --oversubscribe --bind-to none $<TARGET_FILE:collcheck> check
        --backend mutant:throw@proc --seed 3 --count 1..16 --cases 1 --time-budget 8s --property liveness
      STATUS 1 STDOUT "in lockstep on 2 ranks" "FAILED liveness on mutant:throw@proc"
      "detected on a clean run \\(a false alarm\\): [^\n]*rank 1: an exception: mutant:throw")
  set_tests_properties(cli.check_exception_in_lockstep_is_detected PROPERTIES LABELS "cli;proc"
    ENVIRONMENT "${root_ok}" TIMEOUT 60)
  # mpirun refuses what --mpirun-args adds: no world ever starts, so the backend is not run,
  # with mpirun's own words, and no property is judged on it.
  collcheck_add_cli_test(check_mpirun_refuses_arguments_cannot_run_here check --backend ring@proc --ranks 3..3
    --count 0..64 --seed 1 --cases 2 --mpirun-args --no-such-mpirun-option STATUS 77
    STDOUT "0 cases in" "NOT RUN ring@proc: launching `mpirun [^`]*`: mpirun ended before every rank connected"
    STDERR "ring@proc cannot run here: [^\n]*\n[^\n]*unknown option \"--no-such-mpirun-option\"")
  collcheck_add_cli_test(replay_mpirun_refuses_arguments_cannot_run_here replay --backend ring@proc
    --mpirun-args --no-such-mpirun-option "allreduce/i32/sum/n=4/ranks=2" STATUS 77 EMPTY stdout
    STDERR "^collcheck replay: ring@proc cannot run here: launching")
  set_tests_properties(cli.check_mpirun_refuses_arguments_cannot_run_here
    cli.replay_mpirun_refuses_arguments_cannot_run_here PROPERTIES LABELS "cli;proc" ENVIRONMENT "${root_ok}")
endif()

# Gloo over an interface this host does not have: refused before any world starts, naming the
# option and the interfaces there are.
if(COLLCHECK_HAVE_GLOO)
  collcheck_add_cli_test(check_gloo_missing_interface_is_a_usage_error check --backend gloo:allreduce_ring:iface=nosuch0
    --ranks 2 --cases 1 STATUS 2
    STDERR "^collcheck check: --backend 'gloo:allreduce_ring:iface=nosuch0': iface=nosuch0: no such network interface on [^;]+; interfaces with an address: [^\n]*lo"
    EMPTY stdout)
  set_tests_properties(cli.check_gloo_missing_interface_is_a_usage_error PROPERTIES LABELS "cli;gloo")
endif()
