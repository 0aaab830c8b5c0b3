# Runs one `collcheck` command for ctest and checks its exit status and what it printed.
#   cmake -P check_cli.cmake -- RUN <collcheck> <arg>... STATUS <n> [STDOUT <regex>...]
#         [STDERR <regex>...] [EMPTY stdout|stderr...]
# Every regex must match its stream (anywhere; `.` also matches a newline);
# the EMPTY streams must print nothing.
cmake_minimum_required(VERSION 3.25)

set(argv "")
set(after_separator OFF)
math(EXPR last "${CMAKE_ARGC} - 1")
foreach(i RANGE ${last})
  if(after_separator)
    list(APPEND argv "${CMAKE_ARGV${i}}")
  elseif(CMAKE_ARGV${i} STREQUAL "--")
    set(after_separator ON)
  endif()
endforeach()
cmake_parse_arguments(check "" "STATUS" "RUN;STDOUT;STDERR;EMPTY" ${argv})
if(NOT check_RUN OR check_STATUS STREQUAL "")
  message(FATAL_ERROR "check_cli.cmake: needs RUN and STATUS, got: ${argv}")
endif()

execute_process(COMMAND ${check_RUN}
  RESULT_VARIABLE status OUTPUT_VARIABLE stdout ERROR_VARIABLE stderr)
string(REPLACE ";" " " shown "${check_RUN}")
set(report "command: ${shown}\nstatus: ${status}\nstdout:\n${stdout}\nstderr:\n${stderr}")

if(NOT status STREQUAL check_STATUS)
  message(FATAL_ERROR "expected exit status ${check_STATUS}\n${report}")
endif()
foreach(stream stdout stderr)
  string(TOUPPER "${stream}" key)
  foreach(regex IN LISTS check_${key})
    if(NOT "${${stream}}" MATCHES "${regex}")
      message(FATAL_ERROR "${stream} does not match '${regex}'\n${report}")
    endif()
  endforeach()
  if(stream IN_LIST check_EMPTY AND NOT "${${stream}}" STREQUAL "")
    message(FATAL_ERROR "expected nothing on ${stream}\n${report}")
  endif()
endforeach()
message(STATUS "ok: ${shown} (status ${status})")
