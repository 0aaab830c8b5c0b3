# `collcheck check` across processes (labels proc, mpi, gloo): worlds launched through mpirun by
# check itself, lockstep under mpirun, and the mutants that hang and crash, which must be
# reported as findings within their deadline while the run goes on. Included by
# tests/harness/CMakeLists.txt when MPI and RapidCheck are there.

# Processes that start MPI run without LeakSanitizer's check in the sanitizer preset (Open MPI
# leaks from modules it has unloaded; see tests/impls/CMakeLists.txt).
set(root_ok "OMPI_ALLOW_RUN_AS_ROOT=1;OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1;ASAN_OPTIONS=detect_leaks=0:abort_on_error=1")

# Every reference algorithm @proc on 2..5 processes with a fixed seed.
collcheck_add_cli_test(check_all_proc check --backend all@proc --seed 20261129 --ranks 2..5
  --count 0..4K --time-budget 40s STATUS 0 STDOUT " 0 failed, " EMPTY stderr)
set_tests_properties(cli.check_all_proc PROPERTIES LABELS "cli;proc" TIMEOUT 240)

# The cuda engine with one rank per process (mode=processes: its rings in shared memory between
# the processes mpirun launched), every algorithm; and a mutant it must find so.
collcheck_add_cli_test(check_all_cuda_host_processes check --backend all@cuda-host:mode=processes --seed 20261204
  --ranks 2..5 --count 0..4K --time-budget 20s STATUS 0 STDOUT " 0 failed, " EMPTY stderr)
set_tests_properties(cli.check_all_cuda_host_processes PROPERTIES LABELS "cli;cuda;proc" TIMEOUT 180)
collcheck_add_cli_test(check_cuda_host_processes_mutant check --backend mutant:drop-remainder@cuda-host:mode=processes
  --seed 3 --ranks 2..4 --time-budget 15s STATUS 1
  STDOUT "FAILED oracle on mutant:drop-remainder@cuda-host:mode=processes"
  "replay: collcheck replay --backend 'mutant:drop-remainder@cuda-host:mode=processes'")
set_tests_properties(cli.check_cuda_host_processes_mutant PROPERTIES LABELS "cli;cuda;proc" TIMEOUT 120)
# The same engine with the rings between its processes over RDMA writes (net=ib, ib_rings.h): on the
# verbs' in-process loopback its ranks are threads of one launched worker; every algorithm clean,
# and the ring under random faults, reliable (every run ends ok or detected, no finding). Over
# libibverbs where there is no device, nothing is launched and the reason is said (77); the
# options that make no sense without processes, or without net=ib, are refused by name.
collcheck_add_cli_test(check_all_cuda_host_net_ib check --backend all@cuda-host:mode=processes,net=ib,verbs=loopback
  --seed 20261205 --ranks 2..5 --count 0..4K --time-budget 15s STATUS 0 STDOUT " 0 failed, " EMPTY stderr)
collcheck_add_cli_test(check_cuda_host_net_ib_faults check
  --backend ring@cuda-host:mode=processes,net=ib,verbs=loopback,reliable=on --faults random --seed 5 --ranks 2..4
  --time-budget 10s STATUS 0 STDOUT " 0 failed, " "outcomes under faults random")
add_test(NAME cli.check_cuda_host_net_ib_no_device
  COMMAND $<TARGET_FILE:collcheck> check --backend ring@cuda-host:mode=processes,net=ib --cases 2)
set_tests_properties(cli.check_cuda_host_net_ib_no_device PROPERTIES PASS_REGULAR_EXPRESSION
  "NOT RUN ring@cuda-host:mode=processes,net=ib: [^\n]*; verbs=loopback runs it in one process| 0 failed, ")
collcheck_add_cli_test(check_cuda_host_net_ib_needs_processes check --backend ring@cuda-host:net=ib STATUS 2
  STDERR "net=ib carries messages between processes: give mode=processes with it" EMPTY stdout)
collcheck_add_cli_test(check_cuda_host_verbs_needs_net_ib check --backend ring@cuda-host:mode=processes,verbs=loopback
  STATUS 2 STDERR "verbs, dev, port and gid choose net=ib's verbs: give net=ib" EMPTY stdout)
set_tests_properties(cli.check_all_cuda_host_net_ib cli.check_cuda_host_net_ib_faults cli.check_cuda_host_net_ib_no_device
  cli.check_cuda_host_net_ib_needs_processes cli.check_cuda_host_verbs_needs_net_ib PROPERTIES LABELS "cli;cuda;ib" TIMEOUT 120)

# The same loop on every rank of a world the user launched (rank 0 alone prints).
add_test(NAME cli.check_ring_proc_lockstep
  COMMAND ${CMAKE_COMMAND} -P ${CMAKE_CURRENT_SOURCE_DIR}/check_cli.cmake --
    RUN ${MPIEXEC_EXECUTABLE} -np 3 --oversubscribe --bind-to none $<TARGET_FILE:collcheck> check
      --backend ring@proc --backend tree@proc --seed 7 --count 0..4K --time-budget 20s
    STATUS 0 STDOUT "in lockstep on 3 ranks" " 0 failed, ")
set_tests_properties(cli.check_ring_proc_lockstep PROPERTIES LABELS "cli;proc" ENVIRONMENT "${root_ok}" TIMEOUT 120)

# An infinite deadline means none: every run completes (it used to be an immediate `hang`).
collcheck_add_cli_test(bench_deadline_infinity bench --backend ring@proc --ranks 2 -b 8 -e 64 -n 1 -w 0
  --deadline infinity STATUS 0 STDOUT "deadline: none" "# Out of bounds values : 0 OK" EMPTY stderr)
set_tests_properties(cli.bench_deadline_infinity PROPERTIES LABELS "cli;proc;numbers" TIMEOUT 120)

# A rank that stops forever is a hang, a rank that aborts is a crash: both are findings with a
# shrunk case and a replay line, reported within the deadline, and the run completes. A crash
# lists every rank that died, in no fixed order (the others end when the aborting one takes
# the world down: `rank 0 died: its process ended; rank 1 died: signal 6 (SIGABRT)`).
collcheck_add_cli_test(check_hang_mutant check --backend mutant:hang@proc --seed 3 --ranks 2..4
  --count 0..64 --deadline 3s --time-budget 14s STATUS 1
  STDOUT "FAILED liveness on mutant:hang@proc" "hang: ranks? [0-9.,]+ did not return within the deadline of 3\\.0 s"
  "replay: collcheck replay --backend 'mutant:hang@proc'")
set_tests_properties(cli.check_hang_mutant PROPERTIES LABELS "cli;proc" TIMEOUT 120)
# A run that hangs past the time budget is the check's last: no property runs the case again
# (recovery would wait out a second deadline), so only liveness fails, in one deadline.
collcheck_add_cli_test(check_hang_past_budget check --backend mutant:hang@proc --seed 3 --ranks 2..4
  --count 0..64 --deadline 3s --time-budget 1s STATUS 1
  STDOUT "1 cases in [0-9.]+ s: 0 passed, 1 failed"
  "\nFAILED liveness on mutant:hang@proc after 1 case \\([0-9.]+ s\\), shrunk in 0 runs to:\n[^\n]*\n[^\n]*\n  replay: [^\n]*\n$")
set_tests_properties(cli.check_hang_past_budget PROPERTIES LABELS "cli;proc" TIMEOUT 120)
collcheck_add_cli_test(check_crash_mutant check --backend mutant:crash@proc --seed 3 --ranks 2..4
  --count 0..64 --deadline 10s --time-budget 10s STATUS 1
  STDOUT "FAILED liveness on mutant:crash@proc" "crash: rank [0-9]+ died" "rank [0-9]+ died: signal 6 \\(SIGABRT\\)"
  "replay: collcheck replay --backend 'mutant:crash@proc'")
set_tests_properties(cli.check_crash_mutant PROPERTIES LABELS "cli;proc" TIMEOUT 120)

# Open MPI under test. The default decisions on every dtype and op MPI can express, within what
# holds on this machine's Open MPI 4.1.4 (each dtype in every predefined spelling of its width);
# then the findings (docs/vendors.md), each asserted so that a fix or a regression shows: 8-bit
# sums saturate (op/avx: without it they wrap), MPI_MIN/MPI_MAX drop NaNs depending on the order
# of the reduction, and MPI_MIN/MPI_MAX compare MPI_UNSIGNED_LONG as signed.
collcheck_add_cli_test(check_mpi check --backend mpi --seed 1 --ranks 2..4 --cases 400
  --dtype i32 --dtype u32 --dtype i64 --dtype f32 --dtype f64 --values exact --values real
  STATUS 0 STDOUT " 0 failed, " EMPTY stderr)
collcheck_add_cli_test(check_mpi_u64_sums check --backend mpi --seed 1 --ranks 2..4 --cases 100
  --dtype u64 --op sum --op prod --values exact STATUS 0 STDOUT " 0 failed, " EMPTY stderr)
collcheck_add_cli_test(check_mpi_finds_unsigned_long_min_max check --backend mpi --seed 1 --ranks 2..3
  --collective allreduce --dtype u64 --op min --op max --values exact --cases 40 --property oracle STATUS 1
  STDOUT "FAILED oracle on mpi" "allreduce/u64/m(in|ax)/n=1/ranks=2/" "expected [0-9]+, got [0-9]+")
set_tests_properties(cli.check_mpi_u64_sums cli.check_mpi_finds_unsigned_long_min_max
  PROPERTIES LABELS "cli;mpi" TIMEOUT 240)
collcheck_add_cli_test(check_mpi_all_algorithms check --backend mpi:all-algorithms --seed 1
  --ranks 2..4 --time-budget 60s --dtype i32 --dtype f32 --dtype f64 --values exact --values real
  STATUS 0 STDOUT " 0 failed, " EMPTY stderr)
collcheck_add_cli_test(check_mpi_finds_saturating_byte_sums check --backend mpi --seed 1 --ranks 2..3
  --collective allreduce --dtype i8 --op sum --values exact --cases 40 STATUS 1
  STDOUT "FAILED oracle on mpi" "allreduce/i8/sum/" "expected -?[0-9]+, got (127|-128)")
collcheck_add_cli_test(check_mpi_bytes_wrap_without_op_avx check --backend mpi --mpirun-args "--mca op ^avx"
  --seed 1 --ranks 2..3 --collective allreduce --dtype i8 --dtype u8 --op sum --values exact --cases 40
  STATUS 0 STDOUT " 0 failed, " EMPTY stderr)
collcheck_add_cli_test(check_mpi_finds_nan_dropping_min_max check --backend mpi --seed 1 --ranks 3
  --collective allreduce --dtype f32 --op min --op max --values special --cases 100 --property oracle STATUS 1
  STDOUT "FAILED oracle on mpi" "expected nan")
set_tests_properties(cli.check_mpi cli.check_mpi_finds_saturating_byte_sums
  cli.check_mpi_bytes_wrap_without_op_avx cli.check_mpi_finds_nan_dropping_min_max PROPERTIES LABELS "cli;mpi" TIMEOUT 240)
# A minute over all 37 algorithms at -O2: labelled long, run by the long preset (ci/test long).
set_tests_properties(cli.check_mpi_all_algorithms PROPERTIES LABELS "cli;mpi;long" TIMEOUT 240)

# Gloo under test: every algorithm it ships on exact values, the properties that hold on this
# machine's Gloo (0.5.0, Debian's 2022-05-18 snapshot); then the findings of docs/vendors.md that
# reproduce on every run, each asserted.
if(COLLCHECK_HAVE_GLOO)
  collcheck_add_cli_test(check_gloo check --backend gloo --seed 1 --ranks 2..5 --count 1..4K --values exact
    --property liveness --property oracle --property buffer-safety --property in-place --property composition
    --cases 30 STATUS 0 STDOUT " 0 failed, " EMPTY stderr)
  collcheck_add_cli_test(check_gloo_finds_allgather_crash check --backend gloo:allgather --seed 1 --ranks 2..3
    --count 0..16 --cases 5 --property liveness STATUS 1
    STDOUT "FAILED liveness on gloo:allgather" "allgather/[a-z0-9]+/sum/n=0/ranks=2/" "crash: rank [0-9] died"
    "rank [0-9] died: signal 8 \\(SIGFPE\\)")
  collcheck_add_cli_test(check_gloo_finds_rank_disagreement check --backend gloo:allreduce_ring --seed 1
    --ranks 3..5 --dtype f16 --op sum --values real --property rank-agreement --cases 60 STATUS 1
    STDOUT "FAILED rank-agreement on gloo:allreduce_ring" "ranks disagree: rank [0-9]+ element [0-9]+")
  collcheck_add_cli_test(check_gloo_finds_bcube_wrong_on_six_ranks check --backend gloo:allreduce_bcube --seed 1
    --ranks 6..6 --dtype i32 --op sum --values exact --property oracle --cases 5 STATUS 1
    STDOUT "FAILED oracle on gloo:allreduce_bcube" "allreduce/i32/sum/n=1/ranks=6/" "1 of 1 elements wrong")
  # The v-collectives through Gloo's own per-rank counts (zeros included); reduce-scatter's
  # recvElems wait for ever on an empty block inside a chunk (finding 14).
  collcheck_add_cli_test(check_gloo_v_collectives check --backend gloo:allgatherv --backend gloo:alltoallv
    --collective allgatherv --collective alltoallv --seed 1 --ranks 1..5 --count 0..2K --cases 25
    STATUS 0 STDOUT "gloo:allgatherv +allgatherv +25 +25 +0" "gloo:alltoallv +alltoallv +25 +25 +0" " 0 failed, "
    EMPTY stderr)
  collcheck_add_cli_test(check_gloo_finds_reduce_scatter_v_hang check --backend gloo:reduce_scatter_halving_doubling
    --collective reducescatterv --seed 1 --ranks 4..4 --count 8..32 --property liveness --cases 28 --deadline 1
    STATUS 1 STDOUT "FAILED liveness on gloo:reduce_scatter_halving_doubling"
    "reducescatterv/[a-z0-9]+/sum/n=[0-9]+/counts=[0-9,]*,0,[0-9,]+/ranks=4/" "hang: rank")
  set_tests_properties(cli.check_gloo cli.check_gloo_finds_allgather_crash cli.check_gloo_finds_rank_disagreement
    cli.check_gloo_finds_bcube_wrong_on_six_ranks cli.check_gloo_v_collectives
    cli.check_gloo_finds_reduce_scatter_v_hang PROPERTIES LABELS "cli;gloo" TIMEOUT 240)
  # Built with UndefinedBehaviorSanitizer (presets ci and sanitize), Gloo's reduce-scatter on
  # all-zero counts is undefined behaviour that stops every worker (docs/vendors.md, finding 8):
  # the hang above is then found beside that crash, and the crash names UBSan's report, read from
  # the world's log (the workers die without a word of their own).
  if(CMAKE_CXX_FLAGS MATCHES "-fsanitize=[a-z,]*undefined")
    collcheck_add_cli_test(replay_gloo_sanitizer_report_reaches_the_verdict replay
      --backend gloo:reduce_scatter_halving_doubling --property liveness
      "reducescatterv/i8/sum/n=0/counts=0,0,0,0/ranks=4/root=0/outofplace/offset=0/values=exact/seed=0"
      STATUS 1 STDOUT "FAILED  liveness: crash: rank [0-9] died: its process ended"
      "runtime error: reference binding to null pointer")
    set_tests_properties(cli.replay_gloo_sanitizer_report_reaches_the_verdict PROPERTIES LABELS "cli;gloo" TIMEOUT 120)
  endif()
endif()

# Faults on launched @proc worlds: every worker builds the same injector from the plan and the
# run's seed. A dropped message shows at once as a gap and ends `detected` on every rank, with
# the step named in the replayable failure of the liveness property run on its own (a detected
# run under faults passes it: this checks the text by asking for the detail with --property).
# The link protocol's own tests are in faults_protocol.cmake, the vendors' in faults_sockets.cmake.
collcheck_add_cli_test(check_proc_drop_fault check --backend ring@proc --faults "drop:link=1->0:times=1"
  --ranks 2..3 --deadline 2s --seed 1 --time-budget 10s STATUS 0 STDOUT " 0 failed, "
  "faults 'drop:link=1->0:times=1'" "\n +ring@proc +drop +[0-9]+ +[0-9]+ +[1-9][0-9]* +0 +0 +0\n")
set_tests_properties(cli.check_proc_drop_fault PROPERTIES LABELS "cli;proc;faults" TIMEOUT 120)

# The proc engine over RDMA links: every algorithm on the in-process loopback of the verbs, clean
# and under corruption (never `corrupt`); over libibverbs where this machine has no RDMA device,
# check launches nothing and says why (77), or, on a runner with a device, runs.
collcheck_add_cli_test(check_all_ib_loopback check --backend all@ib:verbs=loopback --seed 20261203 --ranks 2..5
  --count 0..4K --time-budget 20s STATUS 0 STDOUT " 0 failed, " EMPTY stderr)
collcheck_add_cli_test(check_ib_loopback_corrupt check --backend ring@ib:verbs=loopback --faults corrupt --seed 5
  --ranks 2..4 --time-budget 8s STATUS 0 STDOUT "ring@ib:verbs=loopback  corrupt" " 0 failed, ")
set_tests_properties(cli.check_all_ib_loopback cli.check_ib_loopback_corrupt PROPERTIES LABELS "cli;ib" TIMEOUT 120)
# The loopback's ranks are threads of one launched worker (`worker --threads N`), not of the
# check: a rank that aborts or hangs deaf to every deadline is a finding with its replay line,
# and the check goes on (on a world of threads in its own process it took the check down).
collcheck_add_cli_test(check_crash_mutant_ib_loopback check --backend mutant:crash@ib:verbs=loopback --seed 3
  --ranks 2..4 --count 0..64 --deadline 10s --time-budget 4s STATUS 1
  STDOUT "FAILED liveness on mutant:crash@ib:verbs=loopback" "crash: rank [0-9]+ died: signal 6 \\(SIGABRT\\)"
  "replay: collcheck replay --backend 'mutant:crash@ib:verbs=loopback'")
collcheck_add_cli_test(check_hang_mutant_ib_loopback check --backend mutant:hang@ib:verbs=loopback --seed 3
  --ranks 2..4 --count 0..64 --deadline 3s --time-budget 1s STATUS 1
  STDOUT "FAILED liveness on mutant:hang@ib:verbs=loopback"
  "hang: ranks? [0-9.,]+ did not return within the deadline of 3\\.0 s")
set_tests_properties(cli.check_crash_mutant_ib_loopback cli.check_hang_mutant_ib_loopback PROPERTIES
  LABELS "cli;ib" TIMEOUT 60)
# In such a world a planned kill of a rank silences its messages (as on sim) instead of a signal,
# which would take every rank: rank 1 still answers (which rank notices the silence first varies;
# the two it stops say the same, once, with their ranks).
collcheck_add_cli_test(replay_ib_loopback_kill_silences_the_rank replay --backend ring@ib:verbs=loopback
  --faults kill:rank=1:at=0 --deadline 3s allreduce/f32/sum/n=64/ranks=3/root=0/outofplace/offset=0/values=exact/seed=0
  STATUS 0 STDOUT
  "outcome: detected: (ranks 0,1|ranks 0,2|rank 0): proc call 0: [^\n]*; (rank 2|rank 1|ranks 1,2): proc call 0: [^\n]*no message for 2 s")
set_tests_properties(cli.replay_ib_loopback_kill_silences_the_rank PROPERTIES LABELS "cli;ib;faults" TIMEOUT 60)
# A worker serving every rank as threads reads its count as every count option is read.
collcheck_add_cli_test(worker_threads_refused worker --backend ring@proc --connect 127.0.0.1:1 --threads 0
  STATUS 2 STDERR "collcheck worker: --threads 0: must be 1..16384")
set_tests_properties(cli.worker_threads_refused PROPERTIES LABELS "cli;proc")
# A small /dev/shm (a container's): proc's segments reserve their pages as they are made, so one
# with no room there goes to /tmp instead of killing its rank with SIGBUS at the first page the
# tmpfs cannot give (before: "crash: rank 0 died: signal 7 (SIGBUS)", a false finding); with no
# room in either, the run is refused, saying where and why, not reported as the backend's failure.
add_test(NAME cli.proc_small_dev_shm_segments_go_to_tmp
  COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/small_shared_memory.sh 16m - $<TARGET_FILE:collcheck>
    replay --backend ring@proc --property oracle allreduce/f32/sum/n=4000000/ranks=8)
set_tests_properties(cli.proc_small_dev_shm_segments_go_to_tmp PROPERTIES LABELS "cli;proc" ENVIRONMENT "${root_ok}"
  PASS_REGULAR_EXPRESSION "\noutcome: ok\n" FAIL_REGULAR_EXPRESSION "SIGBUS" SKIP_RETURN_CODE 77 TIMEOUT 120)
add_test(NAME cli.proc_no_room_for_segments_refused
  COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/small_shared_memory.sh 64m 1m $<TARGET_FILE:collcheck>
    replay --backend ring@proc --property oracle allreduce/f32/sum/n=4000000/ranks=8)
set_tests_properties(cli.proc_no_room_for_segments_refused PROPERTIES LABELS "cli;proc" ENVIRONMENT "${root_ok}"
  PASS_REGULAR_EXPRESSION "\noutcome: refused by the backend \\(a precondition, not a finding\\): [^\n]*shared memory has no room for rank [0-9]+'s 16\\.0 MiB segment: /dev/shm \\([0-9.]+ [KM]iB free\\): No space left on device; /tmp/[^:]+: No space left on device"
  FAIL_REGULAR_EXPRESSION "SIGBUS" SKIP_RETURN_CODE 77 TIMEOUT 120)
# The same refusal where a segment is made inside a rank's run and fails by an exception: the cuda
# engine's rings between processes (before, "detected: an exception ... No space left", a finding).
add_test(NAME cli.cuda_host_processes_no_room_for_rings_refused
  COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/small_shared_memory.sh 52m 1m $<TARGET_FILE:collcheck>
    replay --backend pairwise@cuda-host:mode=processes,channels=4 --property oracle alltoall/f32/sum/n=400000/ranks=8)
set_tests_properties(cli.cuda_host_processes_no_room_for_rings_refused PROPERTIES LABELS "cli;proc;cuda"
  ENVIRONMENT "${root_ok}"
  PASS_REGULAR_EXPRESSION "\noutcome: refused by the backend \\(a precondition, not a finding\\): [^\n]*shared memory has no room for rank [0-9]+'s [0-9.]+ MiB segment: /dev/shm"
  SKIP_RETURN_CODE 77 TIMEOUT 120)
# A world's files (Open MPI's shared-memory files, its session directory) go to /tmp where /dev/shm
# has no room for them: under 8 MiB of /dev/shm every world's MPI_Init failed (the first world:
# "cannot run here"; in a container whose 64 MiB the worlds kept for other rank counts had
# filled, a later world's case was reported as the backend's crash).
foreach(backend ring@proc mpi)
  string(REPLACE "@" "_" name ${backend})
  add_test(NAME cli.world_files_in_tmp_when_dev_shm_is_small_${name}
    COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/small_shared_memory.sh 8m - $<TARGET_FILE:collcheck>
      replay --backend ${backend} --property oracle allreduce/f32/sum/n=1000/ranks=4)
  set_tests_properties(cli.world_files_in_tmp_when_dev_shm_is_small_${name} PROPERTIES LABELS "cli;proc"
    ENVIRONMENT "${root_ok}" PASS_REGULAR_EXPRESSION "\noutcome: ok\n" SKIP_RETURN_CODE 77 TIMEOUT 120)
endforeach()
