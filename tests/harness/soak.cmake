# The soak (label `soak`): `collcheck check --faults random` over many cases with fixed seeds, each
# seed its own swarm of fault kinds (or the swarm FAULTS names); asserts from the JSON reports that
# no run ended `corrupt`, `hang` or `crash`, that collcheck itself exited 0 (no failure, no crash of
# its own), and that nothing new is left in /dev/shm (segments, world directories: collcheck-*).
# Usage: cmake -DCOLLCHECK=path -DBACKEND=all@sim -DSEEDS="1;2;3" -DWORK=dir
#          -DARGUMENTS="--ranks;1..32;--cases;112" -DMIN_CASES=10000 [-DFAULTS=random:drop,kill]
#          -P soak.cmake
# ARGUMENTS go after a time budget of 10 minutes, so a --time-budget among them wins.
cmake_minimum_required(VERSION 3.25)
if(NOT DEFINED FAULTS)
  set(FAULTS random)
endif()

# The names collcheck-* in /dev/shm now.
function(shared_memory_entries out)
  file(GLOB entries RELATIVE /dev/shm /dev/shm/collcheck-*)
  set(${out} "${entries}" PARENT_SCOPE)
endfunction()

# Fails unless every backend × fault kind of the report has 0 corrupt, hang and crash runs.
function(check_outcomes report_file seed)
  file(READ "${report_file}" report)
  string(JSON faults GET "${report}" faults)
  string(JSON rows LENGTH "${report}" outcomes)
  math(EXPR last "${rows} - 1")
  foreach(row RANGE ${last})
    string(JSON backend GET "${report}" outcomes ${row} backend)
    string(JSON fault GET "${report}" outcomes ${row} fault)
    foreach(outcome IN ITEMS corrupt hang crash)
      string(JSON runs GET "${report}" outcomes ${row} ${outcome})
      if(NOT runs EQUAL 0)
        message(FATAL_ERROR "seed ${seed}: ${runs} ${outcome} run(s) on ${backend} under ${fault} (${faults})")
      endif()
    endforeach()
  endforeach()
  string(JSON cases GET "${report}" summary cases)
  set(report_cases ${cases} PARENT_SCOPE)
  set(report_faults "${faults}" PARENT_SCOPE)
endfunction()

file(REMOVE_RECURSE "${WORK}")
file(MAKE_DIRECTORY "${WORK}")
shared_memory_entries(before)
set(total 0)
set(our_pids "")
foreach(seed IN LISTS SEEDS)
  set(report_file "${WORK}/seed-${seed}.json")
  # sh writes its pid and becomes collcheck: the pid its worlds and segments are named after.
  execute_process(
    COMMAND sh -c "echo $$ > '${WORK}/pid-${seed}'; exec \"$0\" \"$@\"" "${COLLCHECK}" check
      --backend ${BACKEND} --faults ${FAULTS} --seed ${seed} --time-budget 10m ${ARGUMENTS} --json "${report_file}"
    RESULT_VARIABLE status OUTPUT_VARIABLE output ERROR_VARIABLE errors)
  if(NOT status EQUAL 0 OR NOT EXISTS "${report_file}")
    message(FATAL_ERROR "seed ${seed}: collcheck check exited with '${status}' (0 expected)\n${output}\n${errors}")
  endif()
  file(READ "${WORK}/pid-${seed}" pid)
  string(STRIP "${pid}" pid)
  list(APPEND our_pids ${pid})
  check_outcomes("${report_file}" ${seed})
  math(EXPR total "${total} + ${report_cases}")
  message(STATUS "seed ${seed}: ${report_cases} cases, 0 corrupt, hang or crash (faults ${report_faults})")
endforeach()
if(total LESS MIN_CASES)
  message(FATAL_ERROR "${total} cases ran, fewer than the ${MIN_CASES} the soak needs")
endif()

# What a world leaves is removed as the world ends. Left behind: an entry new since the start and
# still there 2 s and 7 s after the last run, named after one of our collcheck processes
# (`collcheck-world-PID-N`, `collcheck-mpi-PID-N-RANK-pidOWNER`: PID is the collcheck that launched
# the world, whichever worker made the segment). Other tests' worlds on the machine are not ours
# to count, so the soak runs beside them.
function(new_entries out)
  execute_process(COMMAND ${CMAKE_COMMAND} -E sleep ${ARGN})
  shared_memory_entries(entries)
  if(before AND entries)
    list(REMOVE_ITEM entries ${before})
  endif()
  set(${out} "${entries}" PARENT_SCOPE)
endfunction()
new_entries(left 2)
if(left)
  new_entries(still 5)
  set(persisting "")
  foreach(entry IN LISTS left)
    if(NOT entry IN_LIST still OR NOT entry MATCHES "^collcheck-[a-z]+-([0-9]+)")
      continue()
    endif()
    set(owner ${CMAKE_MATCH_1})
    if(owner IN_LIST our_pids)
      list(APPEND persisting ${entry})
    endif()
  endforeach()
  if(persisting)
    list(JOIN persisting ", " names)
    message(FATAL_ERROR "left in /dev/shm after the soak: ${names}")
  endif()
endif()
message(STATUS "${total} cases on ${BACKEND}: 0 corrupt, 0 hang, 0 crash, nothing left in /dev/shm")
