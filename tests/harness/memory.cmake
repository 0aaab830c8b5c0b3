# Requests memory cannot hold (label `memory`): every command that runs cases estimates what they
# need before allocating and refuses, as a usage error, what exceeds --memory-limit (here small,
# so the tests are cheap and safe on any machine), naming the estimate and the knobs to change.
# A test of `collcheck ARGS...` whose peak resident set must stay within MAX_KB (peak_resident.py
# says it): passes where the output matches PASS followed by the peak's line; skipped under ASan,
# whose shadow memory is no measure of ours.
function(collcheck_add_peak_resident_test name max_kb pass)
  string(REPLACE ";" " " command "${ARGN}")
  add_test(NAME cli.${name}
    COMMAND sh -c "${skip_under_asan} exec python3 \"$0\" ${max_kb} \"$1\" ${command}"
      ${CMAKE_CURRENT_SOURCE_DIR}/peak_resident.py $<TARGET_FILE:collcheck>)
  set_tests_properties(cli.${name} PROPERTIES LABELS "cli;memory"
    PASS_REGULAR_EXPRESSION "${pass}\npeak resident: [0-9]+ KB, within ${max_kb} KB\n$" SKIP_RETURN_CODE 77)
endfunction()

collcheck_add_cli_test(memory_replay_huge_case replay --backend ring@sim --memory-limit 16G
  "allreduce/i8/sum/n=68719476736/ranks=2" STATUS 2
  STDERR "^collcheck replay: allreduce/i8/sum/n=68719476736/ranks=2/[^ ]* needs about [0-9.]+ [GT]iB \\(buffers 256\\.0 GiB: 2 ranks x \\(64\\.0 GiB in \\+ 64\\.0 GiB out\\). "
  "schedule [0-9.]+ [KMG]?i?B: [0-9]+ steps x [0-9]+ B" "oracle 64\\.0 GiB"
  "\\), more than the --memory-limit of 16\\.0 GiB. lower n or ranks of the case, or raise --memory-limit\n$" EMPTY stdout)
# A stored schedule (tree has no form made on demand) of many chunks: its steps are counted.
collcheck_add_cli_test(memory_simulate_many_chunks simulate --algorithm tree --ranks 64 --counts 1M --chunk 1
  --memory-limit 8G STATUS 2
  STDERR "^collcheck simulate: --counts 1048576 needs about [0-9.]+ GiB \\(schedule [0-9.]+ GiB: 469762112 steps x "
  "events [0-9.]+ GiB" "more than the --memory-limit of 8\\.0 GiB. lower --counts or --ranks, or raise --chunk, or raise --memory-limit"
  EMPTY stdout)
collcheck_add_cli_test(memory_check_large_ranges check --ranks 64..64 --count 16M..16M --cases 1 --memory-limit 8G
  STATUS 2 STDERR "^collcheck check: --count 16M\\.\\.16M on --ranks 64\\.\\.64 needs about [0-9.]+ [GT]iB \\(buffers "
  "lower --count or --ranks \\(the largest case, [a-z]+/[a-z0-9]+/[a-z]+/n=[0-9]+/ranks=64/[^ ]* on [a-z]+@sim\\), or raise --memory-limit"
  EMPTY stdout)
# An all-to-all's stream link per pair, and the route cache's routes across half the ring: counted
# once the schedule is made (on demand here, before any count runs), by a sample of its ranks'
# sends, and refused before the engine allocates (this run held 15 GiB at its peak before they
# were counted).
collcheck_add_cli_test(memory_simulate_all_to_all_routes simulate --algorithm pairwise --collective alltoall
  --ranks 2048 --counts 1 --timing-only --memory-limit 10G STATUS 2
  STDERR "^collcheck simulate: --counts 1 needs about [0-9.]+ GiB \\(.*links [0-9.]+ GiB: 4192256 streams x .*"
  "routes [0-9.]+ GiB: 4192256 routes of 2147483648 links\\), more than the --memory-limit of 10\\.0 GiB"
  EMPTY stdout)
# prove refuses up front a shape that not even rank 0's proof would fit in; one whose full proof
# would not fit but rank 0's would runs if its schedule is symmetric, and is refused when
# it is reached otherwise, after the bands proven before it are shown.
collcheck_add_cli_test(memory_prove_many_ranks prove --algorithm ring --collective allreduce --ranks 4096
  --memory-limit 1M STATUS 2
  STDERR "^collcheck prove: ring allreduce on 4096 ranks, count 12290 needs about [0-9.]+ GiB \\(schedule [0-9.]+ KiB: no steps held \\(made on demand\\), 4096 participants x [0-9]+ B. proof state "
  "lower --ranks or --counts, or raise --memory-limit\n$" EMPTY stdout)
collcheck_add_cli_test(memory_prove_symmetric_by_rank0 prove --algorithm ring --collective allreduce --ranks 1024
  --counts 1024 --memory-limit 16M STATUS 0 STDOUT "  513\\.\\.1024 +2 +2 +0 +[0-9]+ +[0-9.]+ s +2 +0 +0\n2 of 2 schedules proven\n$"
  EMPTY stderr)
# Pairwise all-to-all is made on demand too: rank 0's proof fits where the stored schedule (144 MiB
# here) would not.
collcheck_add_cli_test(memory_prove_alltoall_by_rank0 prove --algorithm pairwise --collective alltoall --ranks 1024
  --counts 1 --memory-limit 16M STATUS 0 STDOUT "  513\\.\\.1024 +2 +2 +0 +[0-9]+ +[0-9.]+ s +2 +0 +0\n2 of 2 schedules proven\n$"
  EMPTY stderr)
# Recursive doubling is symmetric by XOR: rank 0's 64 Ki elements fit where every rank's 64 Mi
# (1 GiB) would not.
collcheck_add_cli_test(memory_prove_rd_by_xor prove --algorithm rd --collective allgather --ranks 1024
  --counts 64 --layout outofplace --memory-limit 16M STATUS 0
  STDOUT "  513\\.\\.1024 +1 +1 +0 +[0-9]+ +[0-9.]+ s +1 +0 +0\n1 of 1 schedules proven\n$" EMPTY stderr)
# In-network all-gather has no symmetry (its switches are participants of their own), but it never
# cuts a block: proven in units of the count, every rank's 64 Mi elements (1 GiB) become 1 Mi.
collcheck_add_cli_test(memory_prove_innet_in_units prove --algorithm innet --collective allgather --ranks 1024
  --counts 64 --layout outofplace --memory-limit 64M STATUS 0
  STDOUT "  513\\.\\.1024 +1 +1 +0 +[0-9]+ +[0-9.]+ s +0 +1 +0\n1 of 1 schedules proven\n$" EMPTY stderr)
# The ring's all-gather-v keeps every element in its place on the line of blocks, and its spread
# counts share no unit: proven in pieces, a piece per non-empty block, where every rank's 40 Ki
# elements (1.3 GiB by the estimate) would not fit; in less memory refused, with what the pieces need.
collcheck_add_cli_test(memory_prove_allgatherv_in_pieces prove --algorithm ring --collective allgatherv --ranks 1024
  --counts 64 --memory-limit 64M STATUS 0
  STDOUT "  513\\.\\.1024 +1 +1 +0 +[0-9]+ +[0-9.]+ s +0 +0 +1\n1 of 1 schedules proven\n$" EMPTY stderr)
collcheck_add_cli_test(memory_prove_allgatherv_in_pieces_refused prove --algorithm ring --collective allgatherv
  --ranks 1024 --counts 64 --memory-limit 8M STATUS 2
  STDERR "^collcheck prove: ring allgatherv on 1024 ranks, count [0-9]+ in pieces \\(a piece per block at least\\) needs about [0-9.]+ MiB .*the line's cuts"
  EMPTY stdout)
# A shape whose ranks' buffers differ (pairwise all-to-allv's uneven counts) is proven on rank 0 through
# its cover (all-to-all on the longest pair's count, in units of a block). With chunks shorter than
# the longest block no cover is offered, and its counts share no unit: proven in pieces (a piece per
# chunk of a block) where its full proof (200 MiB) does not fit; where neither the cover's proof nor
# a piece per block would fit, refused before any schedule is made, the table never started, with
# the estimate of the least (through the cover where the line is too long to cut).
collcheck_add_cli_test(memory_prove_alltoallv_through_cover prove --algorithm pairwise --collective alltoallv
  --ranks 1024 --counts 4096 STATUS 0
  STDOUT "  513\\.\\.1024 +1 +1 +0 +[0-9]+ +[0-9.]+ s +1 +1 +0\n1 of 1 schedules proven\n$" EMPTY stderr)
collcheck_add_cli_test(memory_prove_alltoallv_cover_refused prove --algorithm pairwise --collective alltoallv
  --ranks 12000 --counts 4096 --memory-limit 1G STATUS 2
  STDERR "^collcheck prove: pairwise alltoallv on 12000 ranks, count [0-9]+ through its cover needs about [0-9.]+ GiB .*the counts [0-9.]+ GiB: 144000000 counts x 24 B\\), more than the --memory-limit of 1\\.0 GiB; lower --ranks or --counts, or raise --memory-limit\n$"
  EMPTY stdout)
# Tests under a limit of address space (ulimit -v) skip under AddressSanitizer, whose shadow memory
# alone reserves terabytes of it: `${skip_under_asan}` comes first in their commands.
if(CMAKE_CXX_FLAGS MATCHES "-fsanitize=[a-z,]*address")
  set(skip_under_asan "echo 'skipped: AddressSanitizer reserves terabytes of address space, which ulimit -v refuses'; exit 77;")
else()
  set(skip_under_asan "")
endif()
# A sweep makes each shape as its proof starts: over 61 rank counts near 2000 the all-to-all-v cases'
# counts (32 MB each, 2 GB together) are never all held, under an address space of 1.2 GB.
add_test(NAME cli.memory_prove_sweep_makes_shapes_as_it_goes
  COMMAND sh -c "${skip_under_asan} ulimit -v 1200000 && exec \"$0\" prove --algorithm pairwise --collective alltoallv --ranks 2000..2060 --counts 1"
    $<TARGET_FILE:collcheck>)
set_tests_properties(cli.memory_prove_sweep_makes_shapes_as_it_goes PROPERTIES LABELS "cli;memory"
  PASS_REGULAR_EXPRESSION "\n61 of 61 schedules proven\n$" SKIP_RETURN_CODE 77)
# Each of these shapes is proven in pieces along a line of about 40 MiB cut while its memory is
# checked; the lines kept for the proofs stay within what the --memory-limit leaves (kept all, the
# 22 took about 880 MiB and the sweep ran out of its 600 MB of address space before any proof).
add_test(NAME cli.memory_prove_sweep_keeps_cut_lines_within_the_limit
  COMMAND sh -c "${skip_under_asan} ulimit -v 600000 && exec \"$0\" prove --algorithm pairwise --collective alltoallv --ranks 231..252 --counts 4096 --channels 2 --memory-limit 75M --jobs 1"
    $<TARGET_FILE:collcheck>)
set_tests_properties(cli.memory_prove_sweep_keeps_cut_lines_within_the_limit PROPERTIES LABELS "cli;memory"
  PASS_REGULAR_EXPRESSION "  0 +0 +22\n22 of 22 schedules proven\n$" SKIP_RETURN_CODE 77)
# Memory a proof freed goes back to the system before the next one (give_back_freed_memory): eight
# shapes whose proofs need about 70 MB each by the estimate peak at about 81 MB resident, where
# with the freed blocks kept in glibc's heap they peaked at 100 MB.
collcheck_add_peak_resident_test(memory_prove_sweep_gives_freed_memory_back 90000 "8 of 8 schedules proven"
  prove --algorithm pairwise --collective alltoallv --ranks 245..252 --counts 4096 --channels 2 --memory-limit 75M
  --jobs 1)
# A ring made on demand is estimated with its stream links counted, one per rank (the bound of
# 2 (log2 p + 1) per rank estimated this run at 171 MiB and refused it): it runs under the limit,
# and its peak resident set stays within it.
collcheck_add_peak_resident_test(memory_simulate_on_demand_links_counted 65536 "\n +65536 +16384 +f32 +sum .*"
  simulate --algorithm ring --ranks 2048 --counts 16K --timing-only --memory-limit 64M)
# check runs no more cases at once than the budget holds of its largest (here 373 MiB by the
# estimate, its kept inputs included: two in 800M), whatever --jobs asks, and says so: with four at
# once this run held 708-836 MB at its peak (before the inputs were kept), up to past the limit;
# two held 594 MB.
collcheck_add_peak_resident_test(memory_check_jobs_held_to_what_fits 819200
  "2 of 4 jobs at once \\(the memory budget holds no more of the largest case\\)\n.*4 cases in [0-9.]+ s: 4 passed.*"
  check --backend ring@sim --collective allreduce --dtype f32 --ranks 8..8 --count 1M..1M --memory-limit 800M
  --jobs 4 --cases 4 --seed 1)
collcheck_add_cli_test(memory_prove_alltoallv_in_pieces prove --algorithm pairwise --collective alltoallv
  --ranks 64 --counts 4096 --chunk 1024 --memory-limit 16M STATUS 0
  STDOUT "  33\\.\\.64 +1 +1 +0 +[0-9]+ +[0-9.]+ s +0 +0 +1\n1 of 1 schedules proven\n$" EMPTY stderr)
# With two channels the schedule made on demand has two streams per rank, so its proof stores it and
# validates it first (every send's count listed per stream link): 68.6 MiB, where its heap peaks at
# 69.3 MiB (valgrind's massif); estimated as proven while made, it passed at 47 MiB.
collcheck_add_cli_test(memory_prove_stored_schedule_counted prove --algorithm pairwise --collective alltoallv
  --ranks 250 --counts 4096 --channels 2 --memory-limit 50M STATUS 2
  STDERR "in pieces \\(a piece per block at least\\) needs about 6[0-9]\\.[0-9] MiB \\(schedule [0-9.]+ MiB: [0-9]+ steps x 48 B; .*validation [0-9.]+ MiB: 124500 stream links' sends listed"
  EMPTY stdout)
collcheck_add_cli_test(memory_prove_uneven_refused_up_front prove --algorithm pairwise --collective alltoallv
  --ranks 64 --counts 4096 --memory-limit 1M STATUS 2
  STDERR "^collcheck prove: pairwise alltoallv on 64 ranks, count [0-9]+ in pieces \\(a piece per block at least\\) needs about [0-9.]+ MiB .* more than the --memory-limit of 1\\.0 MiB; lower --ranks or --counts, or raise --memory-limit\n$"
  EMPTY stdout)
# The ring all-reduce at count 7 is neither symmetric (most blocks are empty, too few for its
# cover) nor in units: at 4096 ranks its full proof is refused when it is reached, after the band
# proven before it is shown.
collcheck_add_cli_test(memory_prove_refused_when_reached prove --algorithm ring --collective allreduce --ranks 128,4096
  --counts 7 --layout outofplace --memory-limit 1M STATUS 2
  STDOUT "  65\\.\\.128 +1 +1 +0 +[0-9]+ +[0-9.]+ s +0 +0 +0\n +2049\\.\\.4096 +0 +0 +0 +0 +[0-9.]+ s +0 +0 +0\n$"
  STDERR "^collcheck prove: ring allreduce on 4096 ranks, count 7 needs about [0-9.]+ MiB .* more than the --memory-limit of 1\\.0 MiB; its schedule is not symmetric \\(by rotation or XOR\\), so every rank is proven: lower --ranks or --counts, or raise --memory-limit\n$")
collcheck_add_cli_test(memory_bench_large_size bench -e 1G --memory-limit 1G STATUS 2
  STDERR "^collcheck bench: -e 1\\.0 GiB on ring@sim needs about [0-9.]+ GiB" "lower -e or --ranks" EMPTY stdout)
# Unchecked (-c 0), a timed run hands nothing back, and on @sim it moves no data: a sweep of predicted
# times to 16 GiB fits in 1 GiB (the checked estimate would be hundreds of GiB).
collcheck_add_cli_test(memory_bench_unchecked_sim_holds_no_data bench --backend ring@sim --ranks 8 -b 16G -e 16G
  -c 0 --memory-limit 1G STATUS 0 STDOUT "\n +17179869184 +4294967296 +float +sum +-1 +[0-9]+ " EMPTY stderr)
# A large schedule of a registered algorithm is made on demand, as simulate makes it: never held
# whole, by the estimate nor by the run. Ring all-reduce on 2048 ranks (16.8 M steps, 768 MiB
# stored) runs in 400 MiB; at 16,384 ranks (1.07 G steps, 48 GiB stored) the estimate is under 2 GiB.
collcheck_add_cli_test(memory_bench_unchecked_sim_schedule_on_demand bench --backend ring@sim --ranks 2048 -b 1M
  -e 1M -c 0 --memory-limit 400M STATUS 0 STDOUT "\n +1048576 +262144 +float +sum +-1 +[0-9.]+ " EMPTY stderr)
# Checked, the same schedule made on demand runs with data and every rank's output is right.
collcheck_add_cli_test(memory_bench_checked_sim_schedule_on_demand bench --backend ring@sim --ranks 1024 -b 4K
  -e 4K -c 1 -n 1 -w 0 STATUS 0 STDOUT "\n +4096 +1024 +float +sum +-1 +[0-9.]+ +[0-9.]+ +[0-9.]+ +0 +[0-9.]+ +[0-9.]+ +[0-9.]+ +0\n"
  EMPTY stderr)
collcheck_add_cli_test(memory_bench_unchecked_sim_schedule_counted bench --backend ring@sim --ranks 16384 -b 64M
  -e 64M -c 0 --memory-limit 1G STATUS 2
  STDERR "^collcheck bench: -e 64\\.0 MiB on ring@sim needs about 1\\.[0-9]+ GiB \\(events .*schedule [0-9.]+ MiB: no steps held \\(made on demand\\), 16384 participants x [0-9]+ B\\), more than"
  EMPTY stdout)
# A world of processes on this host holds more than its ranks' buffers: the processes, proc's
# shared-memory segments and schedules, a vendor library's temporaries.
if(COLLCHECK_HAVE_MPI)
  collcheck_add_cli_test(memory_replay_proc_world replay --backend ring@proc --memory-limit 64M
    "allreduce/f32/sum/n=1024/ranks=4" STATUS 2
    STDERR "^collcheck replay: allreduce/f32/sum/n=1024/ranks=4/[^ ]* needs about [0-9.]+ MiB \\(buffers "
    "processes 120\\.0 MiB: 4 workers and mpirun, 24\\.0 MiB each" "segments 64\\.0 MiB: 4 ranks x 16\\.0 MiB of shared memory"
    "schedules [0-9.]+ KiB: the whole schedule in each of 4 workers" "lower n or ranks of the case, or raise --memory-limit\n$"
    EMPTY stdout)
  collcheck_add_cli_test(memory_replay_mpi_world replay --backend mpi --memory-limit 64M
    "allreduce/f32/sum/n=1024/ranks=4" STATUS 2
    STDERR "processes 120\\.0 MiB: 4 workers and mpirun" "library 32\\.0 KiB: temporaries as large as every rank's input and output"
    EMPTY stdout)
  # Unchecked, the ranks' buffers without the results handed back: 256 MiB on 2 ranks holds about
  # 1.1 GiB at its peak (the checked estimate, 4.3 GiB, refused it); 4 GiB still needs its 16 GiB.
  collcheck_add_cli_test(memory_bench_unchecked_proc_runs bench --backend ring@proc --ranks 2 -b 256M -e 256M -c 0
    -n 2 -w 1 --memory-limit 2G STATUS 0 STDOUT "\n +268435456 +67108864 +float +sum +-1 +[0-9.]+ " EMPTY stderr)
  collcheck_add_cli_test(memory_bench_unchecked_proc_buffers_counted bench --backend ring@proc --ranks 2 -b 4G -e 4G
    -c 0 --memory-limit 8G STATUS 2
    STDERR "^collcheck bench: -e 4\\.0 GiB on ring@proc needs about 16\\.[0-9] GiB \\(buffers 16\\.0 GiB: 2 ranks x \\(4\\.0 GiB in \\+ 4\\.0 GiB out\\); processes"
    EMPTY stdout)
  set_tests_properties(cli.memory_replay_proc_world cli.memory_replay_mpi_world cli.memory_bench_unchecked_proc_runs
    cli.memory_bench_unchecked_proc_buffers_counted PROPERTIES LABELS "cli;memory;proc")
endif()
# What fits runs as before; 0 is no limit; a bad size names the option.
collcheck_add_cli_test(memory_replay_fits replay --backend ring@sim --memory-limit 64M
  "allreduce/f32/sum/n=1000/ranks=3" STATUS 0 STDOUT "held +oracle" EMPTY stderr)
collcheck_add_cli_test(memory_no_limit simulate --algorithm ring --ranks 4 --counts 1K --memory-limit 0 STATUS 0
  STDOUT "\n +4096 +1024 +f32 " EMPTY stderr)
collcheck_add_cli_test(memory_bad_limit prove --algorithm ring --ranks 4 --memory-limit lots STATUS 2
  STDERR "^collcheck prove: --memory-limit 'lots': must be an integer" EMPTY stdout)
collcheck_add_cli_test(memory_too_small simulate --algorithm ring --ranks 4 --counts 1K --memory-limit 1K STATUS 2
  STDERR "^collcheck simulate: --counts 1024 needs about [0-9.]+ KiB" EMPTY stdout)
set_tests_properties(cli.memory_replay_huge_case cli.memory_simulate_many_chunks cli.memory_simulate_all_to_all_routes cli.memory_check_large_ranges
  cli.memory_prove_many_ranks cli.memory_prove_symmetric_by_rank0 cli.memory_prove_alltoall_by_rank0 cli.memory_prove_innet_in_units cli.memory_prove_allgatherv_in_pieces
  cli.memory_prove_allgatherv_in_pieces_refused cli.memory_prove_alltoallv_through_cover
  cli.memory_prove_alltoallv_cover_refused cli.memory_prove_alltoallv_in_pieces cli.memory_prove_uneven_refused_up_front
  cli.memory_prove_refused_when_reached cli.memory_prove_stored_schedule_counted cli.memory_bench_large_size
  cli.memory_bench_unchecked_sim_holds_no_data cli.memory_bench_unchecked_sim_schedule_counted cli.memory_replay_fits cli.memory_no_limit
  cli.memory_bad_limit cli.memory_too_small PROPERTIES LABELS "cli;memory")
