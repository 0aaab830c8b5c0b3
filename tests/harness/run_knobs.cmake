# A knob drawn per case on a launched backend, end to end: `collcheck check` finds a bug that
# shows only at a drawn knob value, prints the knob in the failure's replay line, and that line,
# run as printed, fails the same way.
#   cmake -DCOLLCHECK=<exe> -DBACKEND=<spec> -DKNOB=<regex the replay's spec must hold>
#         -DARGS=<a+b+...> -P run_knobs.cmake
# ARGS separates the check's arguments with `+` (a `;` cannot pass through add_test).
cmake_minimum_required(VERSION 3.25)

string(REPLACE "+" ";" arguments "${ARGS}")
execute_process(COMMAND ${COLLCHECK} check --backend ${BACKEND} ${arguments}
  RESULT_VARIABLE status OUTPUT_VARIABLE out ERROR_VARIABLE err)
set(report "check: status ${status}\nstdout:\n${out}\nstderr:\n${err}")
if(NOT status EQUAL 1)
  message(FATAL_ERROR "expected the check to fail (status 1)\n${report}")
endif()
if(NOT out MATCHES "replay: collcheck replay --backend '([^']+)' --schedule-seed ([0-9]+) --property ([a-z-]+) '([^']+)'")
  message(FATAL_ERROR "no replay line\n${report}")
endif()
set(spec "${CMAKE_MATCH_1}")
set(replay_arguments --backend "${spec}" --schedule-seed "${CMAKE_MATCH_2}" --property "${CMAKE_MATCH_3}"
  "${CMAKE_MATCH_4}")
if(NOT spec MATCHES "^${BACKEND}:${KNOB}$")
  message(FATAL_ERROR "the replay's backend '${spec}' does not carry the drawn knob '${KNOB}'\n${report}")
endif()
execute_process(COMMAND ${COLLCHECK} replay ${replay_arguments}
  RESULT_VARIABLE status OUTPUT_VARIABLE out ERROR_VARIABLE err)
string(APPEND report "\nreplay ${replay_arguments}: status ${status}\nstdout:\n${out}\nstderr:\n${err}")
if(NOT status EQUAL 1 OR NOT out MATCHES "FAILED")
  message(FATAL_ERROR "the replay line does not fail as the check did\n${report}")
endif()
