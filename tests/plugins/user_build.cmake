# A user's own build of the example plugin, as docs/plugins.md shows it: `cc` with nothing but
# the installed header, then `collcheck check` loading the result, correct and with one bug.
#   cmake -DCOLLCHECK=<collcheck> -DSOURCE=<project root> -DWORK=<directory> -P user_build.cmake
cmake_minimum_required(VERSION 3.25)
file(MAKE_DIRECTORY "${WORK}")
find_program(cc NAMES cc REQUIRED)
execute_process(COMMAND ${cc} -std=c11 -O2 -shared -fPIC -I ${SOURCE}/include
  ${SOURCE}/examples/plugins/ring_plugin.c -o libring.so
  WORKING_DIRECTORY "${WORK}" RESULT_VARIABLE status ERROR_VARIABLE compiler)
if(NOT status EQUAL 0)
  message(FATAL_ERROR "cc failed (${status}):\n${compiler}")
endif()

# `check` on launched worlds: status and a regex its stdout must match.
function(check_plugin spec expected_status regex)
  execute_process(COMMAND ${COLLCHECK} check --backend ${spec} --ranks 2..3 --count 0..200 --cases 24 --seed 7
    WORKING_DIRECTORY "${WORK}" RESULT_VARIABLE status OUTPUT_VARIABLE stdout ERROR_VARIABLE stderr)
  if(NOT status EQUAL expected_status OR NOT stdout MATCHES "${regex}")
    message(FATAL_ERROR "check --backend ${spec}: expected status ${expected_status} and '${regex}', got "
      "${status}\nstdout:\n${stdout}\nstderr:\n${stderr}")
  endif()
  message(STATUS "ok: ${spec} (status ${status})")
endfunction()
check_plugin(plugin:./libring.so 0 " 0 failed, ")
check_plugin(plugin:./libring.so:bug=odd-ranks 1 "FAILED oracle on plugin:\\./libring\\.so:bug=odd-ranks")
