# The downstream example (examples/downstream/) against this build, as a user runs it: install
# collcheck into a fresh prefix, configure the example with nothing but that prefix, build it,
# and run its ctest, whose three tests must all pass (the example plugin holds, passes the
# conformance suite, and its bug is found).
#   cmake -DBUILD=<collcheck's build> -DSOURCE=<project root> -DWORK=<directory> -P downstream.cmake
cmake_minimum_required(VERSION 3.25)
file(REMOVE_RECURSE "${WORK}")
file(MAKE_DIRECTORY "${WORK}")

function(run what)
  execute_process(COMMAND ${ARGN} WORKING_DIRECTORY "${WORK}" RESULT_VARIABLE status OUTPUT_VARIABLE out
    ERROR_VARIABLE err)
  if(NOT status EQUAL 0)
    message(FATAL_ERROR "${what} failed (${status}):\n${out}\n${err}")
  endif()
  set(output "${out}" PARENT_SCOPE)
endfunction()

run("cmake --install" ${CMAKE_COMMAND} --install "${BUILD}" --prefix "${WORK}/prefix")
foreach(installed bin/collcheck bin/collcheck-conformance bin/libcollcheck-interpose.so
    include/collcheck/plugin.h include/collcheck/plugin_v1.h)
  if(NOT EXISTS "${WORK}/prefix/${installed}")
    message(FATAL_ERROR "cmake --install left out ${installed}")
  endif()
endforeach()
run("configuring the example" ${CMAKE_COMMAND} -S "${SOURCE}/examples/downstream" -B "${WORK}/build"
  "-DCMAKE_PREFIX_PATH=${WORK}/prefix")
run("building the example" ${CMAKE_COMMAND} --build "${WORK}/build")
run("the example's ctest" ctest --test-dir "${WORK}/build"
  --output-on-failure)
foreach(test ring_holds ring_conformance ring_bug_is_found)
  if(NOT output MATCHES "Test +#[0-9]+: ${test} [.]+ +Passed")
    message(FATAL_ERROR "the example's test ${test} did not pass:\n${output}")
  endif()
endforeach()
message(STATUS "the downstream example passed:\n${output}")
