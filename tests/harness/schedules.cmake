# tests/harness/schedules.cmake, included from CMakeLists.txt (label `cli`): schedule files, in
# collcheck's text form (`collcheck export`) and MSCCL's XML, proven by `prove --schedule` and
# checked as `schedule:FILE@sim` and `@proc`.
# The eight real files live outside the repository (COLLCHECK_MSCCL_DIR, tests/impls); the two
# small hand-written ones in tests/data: a correct two-gpu all-reduce and a copy missing a
# reduction, which prove must refuse with the step named.

set(data ${PROJECT_SOURCE_DIR}/tests/data)
collcheck_add_cli_test(schedule_prove_2gpu prove --schedule ${data}/msccl_allreduce_2gpu.xml STATUS 0
  STDOUT "the MSCCL algorithm allreduce_pairs_2gpu \\(allreduce on 2 ranks in place, count a multiple of 2, ops sum, prod, min, max\\)"
         "\n  2 +[0-9]+ +[0-9]+ +proven" "proven: allreduce for every count it admits \\(multiples of 2\\)\n"
  EMPTY stderr)
collcheck_add_cli_test(schedule_prove_refuses_missing_reduction
  prove --schedule ${data}/msccl_allreduce_2gpu_no_reduce.xml STATUS 1
  STDOUT "FAILED"
  STDERR "does not implement allreduce \\(count 2\\): rank 0 output element 1 \\(output chunk 1\\) holds [^\n]*last written by rank 0 step 3 [^\n]*\\[gpu 0 tb 0 step 3 \\(r, line 8\\)\\]")
if(COLLCHECK_HAVE_RAPIDCHECK)  # check finds the same mistake by running it
  collcheck_add_cli_test(schedule_check_catches_missing_reduction
    check --backend schedule:${data}/msccl_allreduce_2gpu_no_reduce.xml@sim --cases 200 --seed 7 --jobs 1 STATUS 1
    STDOUT "FAILED [a-z-]+ on schedule:[^\n]*msccl_allreduce_2gpu_no_reduce.xml@sim")
endif()
collcheck_add_cli_test(schedule_prove_missing_file prove --schedule ${data}/no_such.xml STATUS 1
  STDERR "no_such.xml: not a readable file" EMPTY stdout)
collcheck_add_cli_test(schedule_prove_with_algorithm prove --schedule ${data}/msccl_allreduce_2gpu.xml
  --algorithm ring STATUS 2 STDERR "--schedule and --algorithm: give one of them" EMPTY stdout)

# The text form: `export` writes a built-in algorithm; a file it wrote (the ring all-reduce on 4
# ranks, tests/data/ring_allreduce_4.schedule) proves for every count it admits and passes
# check on both executors; bad requests are refused naming the field.
collcheck_add_cli_test(export_ring export --algorithm ring --ranks 4 --count 16 STATUS 0
  STDOUT "^collcheck-schedule 1\nalgorithm ring\ncollective allreduce\nranks 4\nlayout outofplace\nchunks 4 "
  "\nrank 3 scratch 0\n  send 0 input:3\\+1\n" EMPTY stderr)
collcheck_add_cli_test(export_refuses_v_collectives export --algorithm ring --collective allgatherv STATUS 2
  STDERR "allgatherv: the text form is for collectives of one count" EMPTY stdout)
collcheck_add_cli_test(export_refuses_unknown_algorithm export --algorithm rung STATUS 2
  STDERR "--algorithm rung: one of ring, " EMPTY stdout)
collcheck_add_cli_test(export_refuses_count_zero export --algorithm ring --count 0 STATUS 2 STDERR "--count" EMPTY stdout)
collcheck_add_cli_test(schedule_prove_text prove --schedule ${data}/ring_allreduce_4.schedule STATUS 0
  STDOUT "the schedule ring \\(allreduce on 4 ranks out of place, count a multiple of 4\\)"
  "proven: allreduce for every count it admits \\(multiples of 4\\)" EMPTY stderr)
if(COLLCHECK_HAVE_RAPIDCHECK)
  foreach(executor sim proc)
    collcheck_add_cli_test(schedule_check_text_${executor}
      check --backend schedule:${data}/ring_allreduce_4.schedule@${executor} --cases 60 --seed 7 --jobs 1
      STATUS 0 STDOUT " 0 failed, ")
  endforeach()
endif()

if(NOT EXISTS "${COLLCHECK_MSCCL_DIR}/allreduce_ring_4gpu_1ch.xml")
  return()
endif()
set(msccl_files allgather_rd_8gpu allgather_ring_8gpu_1ch allreduce_1step_4gpu allreduce_hier_4x2
  allreduce_rdh_8gpu allreduce_ring_4gpu_1ch allreduce_ring_8gpu_2ch alltoall_allpairs_8gpu)
# allreduce_1step_4gpu's ranks end with different bits on real values (a finding: its ranks
# reduce in different orders, docs/schedules.md), so it is checked on exact values, and the
# finding itself is a test.
set(values_allreduce_1step_4gpu --values exact)
foreach(file IN LISTS msccl_files)
  collcheck_add_cli_test(schedule_prove_${file} prove --schedule ${COLLCHECK_MSCCL_DIR}/${file}.xml STATUS 0
    STDOUT "proven: [a-z]+ for every count it admits" EMPTY stderr)
  if(COLLCHECK_HAVE_RAPIDCHECK)
    collcheck_add_cli_test(schedule_check_sim_${file} check --backend schedule:${COLLCHECK_MSCCL_DIR}/${file}.xml@sim
      --cases 200 --seed 7 --jobs 1 ${values_${file}} STATUS 0 STDOUT "\n[0-9]+ cases in ")
  endif()
endforeach()
if(COLLCHECK_HAVE_RAPIDCHECK)
  collcheck_add_cli_test(schedule_check_sim_1step_ranks_disagree
    check --backend schedule:${COLLCHECK_MSCCL_DIR}/allreduce_1step_4gpu.xml@sim --values real --dtype f16
    --cases 200 --seed 7 --jobs 1 STATUS 1 STDOUT "FAILED rank-agreement on")
endif()
if(COLLCHECK_HAVE_RAPIDCHECK)
  # Under random faults, and across processes.
  collcheck_add_cli_test(schedule_check_sim_faults
    check --backend schedule:${COLLCHECK_MSCCL_DIR}/allreduce_rdh_8gpu.xml@sim --faults random --cases 200 --seed 7
    --jobs 1 STATUS 0 STDOUT "\n[0-9]+ cases in ")
  collcheck_add_cli_test(schedule_check_proc
    check --backend schedule:${COLLCHECK_MSCCL_DIR}/allreduce_ring_4gpu_1ch.xml@proc --faults random --cases 8
    --seed 7 --time-budget 40s STATUS 0 STDOUT "\n[0-9]+ cases in ")
  set_tests_properties(cli.schedule_check_proc PROPERTIES LABELS "cli;proc;faults" TIMEOUT 90)
endif()
