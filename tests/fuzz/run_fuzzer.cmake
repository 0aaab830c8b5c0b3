# Runs one libFuzzer target for SECONDS over the seed corpus SEEDS (read only): new inputs and any
# crash go to WORK, emptied first, so the repository's corpus never changes. Fails on a finding.
# Usage: cmake -DFUZZER=path -DSEEDS=dir -DWORK=dir -DSECONDS=30 -P run_fuzzer.cmake
file(REMOVE_RECURSE "${WORK}")
file(MAKE_DIRECTORY "${WORK}/corpus")
execute_process(
  COMMAND "${FUZZER}" -max_total_time=${SECONDS} -timeout=10 -rss_limit_mb=2048 -print_final_stats=1
    -artifact_prefix=${WORK}/ "${WORK}/corpus" "${SEEDS}"
  RESULT_VARIABLE status)
if(NOT status EQUAL 0)
  message(FATAL_ERROR "${FUZZER} found a failure (exit status ${status}); the input is in ${WORK}/")
endif()
