# Runs one `collcheck` command for ctest and checks its exit status, what it printed and, with
# FILE, a file it wrote.
#   cmake -P check_cli.cmake -- RUN <collcheck> <arg>... STATUS <n> [STDOUT <regex>...]
#         [STDERR <regex>...] [EMPTY stdout|stderr...]
#         [FILE <path> [FILE_MATCHES <regex>...] [FILE_HOLDS <regex>...]]
# Every regex must match its stream or the file (anywhere; `.` also matches a newline);
# the EMPTY streams must print nothing. FILE is removed before the run and must exist after it;
# what a FILE_HOLDS regex matches in stdout (a replay line) must be in the file as it is.
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
cmake_parse_arguments(check "" "STATUS;FILE" "RUN;STDOUT;STDERR;EMPTY;FILE_MATCHES;FILE_HOLDS" ${argv})
if(NOT check_RUN OR check_STATUS STREQUAL "")
  message(FATAL_ERROR "check_cli.cmake: needs RUN and STATUS, got: ${argv}")
endif()

if(check_FILE)
  file(REMOVE "${check_FILE}")
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
if(check_FILE)
  if(NOT EXISTS "${check_FILE}")
    message(FATAL_ERROR "expected the command to write ${check_FILE}\n${report}")
  endif()
  file(READ "${check_FILE}" written)
  foreach(regex IN LISTS check_FILE_MATCHES)
    if(NOT written MATCHES "${regex}")
      message(FATAL_ERROR "${check_FILE} does not match '${regex}'\n${report}\n${check_FILE}:\n${written}")
    endif()
  endforeach()
  foreach(regex IN LISTS check_FILE_HOLDS)
    string(REGEX MATCH "${regex}" printed "${stdout}")
    string(FIND "${written}" "${printed}" at)
    if(printed STREQUAL "" OR at EQUAL -1)
      message(FATAL_ERROR "'${printed}' (stdout's match of '${regex}') is not in ${check_FILE}\n${report}\n"
        "${check_FILE}:\n${written}")
    endif()
  endforeach()
endif()
message(STATUS "ok: ${shown} (status ${status})")
