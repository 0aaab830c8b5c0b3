# A campaign across the processes of an mpirun job, for campaign.cmake:
#   cmake -DCOLLCHECK=<exe> -DMPIEXEC=<mpiexec> -DWORK=<dir> -DMODE=same -DSHARES=N -DARGS=<a+b+...>
#     -P campaign_run.cmake   one process and a campaign of N shares over the same cases find the
#                             same failures: the same table, groups, counts and replay lines, in
#                             the text report and in --json
#   ... -DMODE=missing -DARGS=...   share 1 of 2 stopped (SIGSTOP) once the run began: rank 0
#                             still prints the report, naming the share, and ends the job
# ARGS separates arguments with `+` (a `;` cannot pass through add_test).
cmake_minimum_required(VERSION 3.25)

file(REMOVE_RECURSE "${WORK}")
file(MAKE_DIRECTORY "${WORK}")
string(REPLACE "+" ";" args "${ARGS}")
set(mpiexec ${MPIEXEC} -np ${SHARES} --oversubscribe --bind-to none)

function(fail why)
  message(FATAL_ERROR "${why}")
endfunction()

# The lines of a text report that do not depend on timing or on how many processes ran: the table
# rows, each group's heading (its seconds taken out) and the lines under it.
function(comparable text out)
  string(REGEX REPLACE "\\([0-9.]+ s\\)" "" text "${text}")
  string(REGEX REPLACE "cases in [0-9.]+ s" "cases" text "${text}")
  string(REGEX REPLACE "collcheck check: seed [^\n]*\n" "" text "${text}")
  string(REGEX REPLACE "merged from [0-9]+ shares of a campaign\n" "" text "${text}")
  set(${out} "${text}" PARENT_SCOPE)
endfunction()

# The failures of a --json report, each as backend, property, case, count, replay.
function(json_failures file out)
  file(READ "${file}" json)
  string(JSON n LENGTH "${json}" failures)
  set(all "")
  if(n GREATER 0)
    math(EXPR last "${n} - 1")
    foreach(i RANGE ${last})
      foreach(key backend property case count replay)
        string(JSON value GET "${json}" failures ${i} ${key})
        string(APPEND all "${key}: ${value}\n")
      endforeach()
    endforeach()
  endif()
  set(${out} "${all}" PARENT_SCOPE)
endfunction()

if(MODE STREQUAL "same")
  execute_process(COMMAND ${COLLCHECK} check ${args} --json ${WORK}/one.json
    RESULT_VARIABLE one_status OUTPUT_VARIABLE one_out ERROR_VARIABLE one_err)
  execute_process(COMMAND ${mpiexec} ${COLLCHECK} check ${args} --share auto --json ${WORK}/campaign.json
    RESULT_VARIABLE campaign_status OUTPUT_VARIABLE campaign_out ERROR_VARIABLE campaign_err)
  set(both "one process (status ${one_status}):\n${one_out}${one_err}\ncampaign (status ${campaign_status}):\n\
${campaign_out}${campaign_err}")
  if(NOT one_status EQUAL 1 OR NOT campaign_status EQUAL 1)
    fail("expected both to find failures (status 1)\n${both}")
  endif()
  if(NOT campaign_out MATCHES "a campaign of ${SHARES} shares on 1 host\n" OR NOT campaign_out MATCHES
      "merged from ${SHARES} shares of a campaign\n")
    fail("the campaign's report does not say it was merged from ${SHARES} shares\n${both}")
  endif()
  comparable("${one_out}" one_text)
  comparable("${campaign_out}" campaign_text)
  if(NOT one_text STREQUAL campaign_text)
    fail("the reports differ\n${both}")
  endif()
  json_failures(${WORK}/one.json one_json)
  json_failures(${WORK}/campaign.json campaign_json)
  file(READ ${WORK}/campaign.json campaign_file)
  string(JSON shares GET "${campaign_file}" campaign shares)
  if(NOT one_json STREQUAL campaign_json OR NOT shares EQUAL SHARES)
    fail("the JSON reports differ (campaign shares: ${shares})\none:\n${one_json}\ncampaign:\n${campaign_json}")
  endif()
  message(STATUS "the same failures from 1 process and from ${SHARES} shares")
elseif(MODE STREQUAL "missing")
  # mpirun in the background; each rank's environment carries OMPI_COMM_WORLD_RANK and the marker.
  string(RANDOM LENGTH 12 marker)
  execute_process(COMMAND sh -c "(cd '${WORK}' && timeout -s KILL 120 env COLLCHECK_CAMPAIGN_MARK='${marker}' \
\"$@\" >out 2>err; echo $? >'${WORK}/status') >/dev/null 2>&1 </dev/null &"
    sh ${mpiexec} ${COLLCHECK} check ${args} --share auto --json ${WORK}/campaign.json)
  set(stopped "")
  foreach(tries RANGE 600)
    if(EXISTS ${WORK}/out)
      file(READ ${WORK}/out out)
      if(out MATCHES "a campaign of 2 shares")
        execute_process(COMMAND sh -c "for f in $(grep -las -- '${marker}' /proc/[0-9]*/environ); do \
tr '\\0' '\\n' < $f | grep -qx OMPI_COMM_WORLD_RANK=1 && p=\${f#/proc/} && echo \${p%/environ}; done"
          OUTPUT_VARIABLE stopped OUTPUT_STRIP_TRAILING_WHITESPACE)
        if(NOT stopped STREQUAL "")
          execute_process(COMMAND kill -STOP ${stopped})
          break()
        endif()
      endif()
    endif()
    execute_process(COMMAND sleep 0.1)
  endforeach()
  foreach(tries RANGE 600)
    if(EXISTS ${WORK}/status)
      break()
    endif()
    execute_process(COMMAND sleep 0.1)
  endforeach()
  if(NOT stopped STREQUAL "")
    execute_process(COMMAND kill -KILL ${stopped} ERROR_QUIET)
  endif()
  foreach(stream out err status)
    set(${stream} "")
    if(EXISTS ${WORK}/${stream})
      file(READ ${WORK}/${stream} ${stream})
    endif()
  endforeach()
  set(shown "status: ${status}\nstdout:\n${out}\nstderr:\n${err}")
  if(stopped STREQUAL "")
    fail("no rank 1 found to stop\n${shown}")
  endif()
  if(status STREQUAL "" OR status EQUAL 0)
    fail("expected the job to end with an error\n${shown}")
  endif()
  if(NOT out MATCHES "\nMISSING share 1/2 on [^:\n]+: no report within --share-wait 1s past the time budget")
    fail("the report does not name the missing share\n${shown}")
  endif()
  file(READ ${WORK}/campaign.json json)
  string(JSON missing GET "${json}" campaign missing 0 share)
  if(NOT missing EQUAL 1)
    fail("the JSON report does not name the missing share\n${json}")
  endif()
  message(STATUS "the missing share named: ${stopped} stopped")
else()
  fail("campaign_run.cmake: MODE must be same or missing, got '${MODE}'")
endif()
