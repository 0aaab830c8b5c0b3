# Nothing left behind, for leftovers.cmake: starts `collcheck` with a marker in its environment
# (which mpirun and the workers inherit) and a private TMPDIR, signals it at a phase, and counts
# the processes that carry the marker and the files its worlds left: world directories
# (/dev/shm/collcheck-world-PID-*), segments (/dev/shm/collcheck-mpi-* that appeared and whose
# owners are gone) and anything under the private TMPDIR (Open MPI's session directories).
#   cmake -DCOLLCHECK=<exe> -DWORK=<dir> -DMODE=signal -DSIGNAL=INT|TERM -DPHASE=start|running
#         -DARGS=<a+b+...> -P leftovers_run.cmake     within 2 s: nothing; exit 128 + signal
#   ... -DMODE=kill -DPHASE=... -DARGS=...             SIGKILL: processes gone, then the next run
#                                                      sweeps the files (and spares live owners')
#   ... -DMODE=kill-deaf-mpirun -DPHASE=running ...    the same with an mpirun deaf to the SIGTERM
#                                                      of its parent's death, which lingers after
#                                                      its ranks: the world's guard must end it
#   ... -DMODE=dead-rank                               a rank killed while connecting: no segment
#   ... -DMODE=concurrent                              runs that sweep spare a run going on
#   ... -DMODE=launch-fails -DARGS=...                 mpirun fails every launch: collcheck ends,
#                                                      and within 2 s nothing is left
#   ... -DMODE=binary-replaced -DARGS=...              the program removed and something else put
#                                                      in its place before its world starts: the
#                                                      ranks and the guard run the launcher's image
#   ... -DMODE=binary-replaced -DPLUGIN=FILE ...       the same for a plugin: the ranks load the
#                                                      file as the launcher first loaded it
#   ... -DMODE=binary-replaced -DSCHEDULE_RANKS=N ...  and for a schedule file: the ranks read the
#                                                      text the launcher first read
#   ... -DMODE=binary-replaced -DLIBRARIES=1 ...       the program and the libraries beside it: the
#                                                      worlds under faults preload the interposer
#                                                      as first preloaded
# ARGS separates arguments with `+` (a `;` cannot pass through add_test).
cmake_minimum_required(VERSION 3.25)

file(REMOVE_RECURSE "${WORK}")
file(MAKE_DIRECTORY "${WORK}/tmp")
string(RANDOM LENGTH 12 marker)
set(marker "leftovers-${marker}")
set(report "")

function(fail why)
  foreach(stream out err)
    if(EXISTS "${WORK}/${stream}")
      file(READ "${WORK}/${stream}" text)
      string(APPEND why "\n${stream}:\n${text}")
    endif()
  endforeach()
  message(FATAL_ERROR "${why}\n${report}")
endfunction()

function(pause seconds)
  execute_process(COMMAND sleep ${seconds})
endfunction()

# "PID COMMAND-LINE" for every live process that carries the marker.
function(marked_processes out)
  execute_process(COMMAND sh -c "for f in $(grep -las -- '${marker}' /proc/[0-9]*/environ); do p=\${f#/proc/}; \
p=\${p%/environ}; c=$(tr '\\0' ' ' < /proc/$p/cmdline 2>/dev/null | cut -c1-160); [ -n \"$c\" ] && echo \"$p $c\"; done"
    OUTPUT_VARIABLE lines ERROR_QUIET)
  string(STRIP "${lines}" lines)
  string(REPLACE "\n" ";" lines "${lines}")
  set(${out} "${lines}" PARENT_SCOPE)
endfunction()

# Starts collcheck in the background through timeout (which gives it SIGINT back: a shell's
# background job starts with it ignored); its exit status goes to WORK/status.
function(start_collcheck)
  execute_process(COMMAND sh -c "(cd '${WORK}' && TMPDIR='${WORK}/tmp' timeout -s KILL 120 \
env COLLCHECK_LEFTOVERS_MARK='${marker}' \"$@\" >out 2>err & echo $! >'${WORK}/timeout'; wait $!; \
echo $? >'${WORK}/status') >/dev/null 2>&1 </dev/null &" sh ${ARGN})
endfunction()

# The pid of collcheck itself (timeout's child), once it runs.
function(collcheck_pid out)
  foreach(try RANGE 200)
    if(EXISTS "${WORK}/timeout")
      file(READ "${WORK}/timeout" parent)
      string(STRIP "${parent}" parent)
      execute_process(COMMAND pgrep -P ${parent} OUTPUT_VARIABLE child OUTPUT_STRIP_TRAILING_WHITESPACE)
      if(child MATCHES "^[0-9]+$")
        set(${out} ${child} PARENT_SCOPE)
        return()
      endif()
    endif()
    pause(0.02)
  endforeach()
  fail("collcheck did not start")
endfunction()

# Waits (up to 60 s) for the phase: `start`, mpirun has just been started (its ranks have not
# connected yet); `running`, every rank of a world runs and cases go on.
function(wait_for_phase phase ranks)
  foreach(try RANGE 3000)
    marked_processes(processes)
    set(workers 0)
    set(launchers 0)
    foreach(line IN LISTS processes)
      if(line MATCHES "^[0-9]+ mpirun ")
        math(EXPR launchers "${launchers} + 1")
      elseif(line MATCHES "^[0-9]+ [^ ]*collcheck worker ")
        math(EXPR workers "${workers} + 1")
      endif()
    endforeach()
    if(phase STREQUAL "start" AND launchers GREATER 0)
      return()
    elseif(phase STREQUAL "running" AND workers GREATER_EQUAL ranks)
      pause(1)
      return()
    endif()
    pause(0.02)
  endforeach()
  fail("phase ${phase} never came")
endfunction()

function(pid_alive pid out)
  if(EXISTS "/proc/${pid}")
    set(${out} TRUE PARENT_SCOPE)
  else()
    set(${out} FALSE PARENT_SCOPE)
  endif()
endfunction()

# The files collcheck `pid`'s worlds left: its world directories, segments that were not there
# before (`before`) whose owners are gone or are its own worlds', and the private TMPDIR's entries.
function(leftover_files pid before out)
  file(GLOB found LIST_DIRECTORIES true "/dev/shm/collcheck-world-${pid}-*" "${WORK}/tmp/*")
  file(GLOB segments LIST_DIRECTORIES false "/dev/shm/collcheck-mpi-*" "/tmp/collcheck-mpi-*")
  foreach(segment IN LISTS segments)
    get_filename_component(name "${segment}" NAME)
    if("${name}" IN_LIST before)
      continue()
    endif()
    if(name MATCHES "^collcheck-mpi-${pid}-")
      list(APPEND found "${segment}")
      continue()
    endif()
    string(REGEX MATCH "^collcheck-mpi-([0-9]+)-" first "${name}")
    set(first "${CMAKE_MATCH_1}")
    string(REGEX MATCH "-pid([0-9]+)$" owner "${name}")
    set(owner "${CMAKE_MATCH_1}")
    pid_alive("${first}" first_alive)
    set(owner_alive FALSE)
    if(owner)
      pid_alive("${owner}" owner_alive)
    endif()
    if(NOT first_alive AND NOT owner_alive)
      list(APPEND found "${segment}")
    endif()
  endforeach()
  set(${out} "${found}" PARENT_SCOPE)
endfunction()

function(segments_now out)
  file(GLOB segments RELATIVE /dev/shm "/dev/shm/collcheck-mpi-*")
  set(${out} "${segments}" PARENT_SCOPE)
endfunction()

# Polls until no marked process and no leftover file remain, or `seconds` pass; sets `left` to
# what remains.
function(wait_until_clean pid before seconds left)
  string(TIMESTAMP start "%s%f")
  while(TRUE)
    marked_processes(processes)
    leftover_files(${pid} "${before}" files)
    string(TIMESTAMP now "%s%f")
    math(EXPR elapsed "(${now} - ${start}) / 1000")
    if(NOT processes AND NOT files)
      set(${left} "" PARENT_SCOPE)
      set(elapsed_ms ${elapsed} PARENT_SCOPE)
      return()
    endif()
    if(elapsed GREATER_EQUAL "${seconds}000")
      set(${left} "after ${elapsed} ms:\n  processes: ${processes}\n  files: ${files}" PARENT_SCOPE)
      return()
    endif()
    pause(0.05)
  endwhile()
endfunction()

# Fails with `what` unless nothing is left within `seconds` (wait_until_clean); sets elapsed_ms.
function(expect_nothing_left pid before seconds what)
  wait_until_clean(${pid} "${before}" ${seconds} left)
  if(left)
    fail("${what}: left behind ${left}")
  endif()
  set(elapsed_ms ${elapsed_ms} PARENT_SCOPE)
endfunction()

# A running world's guard (`collcheck guard`) holds no descriptor of the launcher's: its 0-2 are
# /dev/null and its only other one, 3, the launcher's pidfd (a control connection it held open
# would keep a worker from seeing the launcher's death); and SIGINT, SIGTERM and SIGHUP, which
# its world's process group may get, do not end it.
function(guard_is_deaf_and_holds_nothing_of_the_launcher)
  set(expected 1)  # one guard a running world: one world unless said
  if(ARGC GREATER 0)
    set(expected ${ARGV0})
  endif()
  marked_processes(processes)
  set(guards 0)
  foreach(line IN LISTS processes)
    if(NOT line MATCHES "^([0-9]+) [^ ]*collcheck guard ")
      continue()
    endif()
    set(guard ${CMAKE_MATCH_1})
    math(EXPR guards "${guards} + 1")
    execute_process(COMMAND sh -c "cd /proc/${guard}/fd && for d in *; do echo \"$d $(readlink $d)\"; done"
      OUTPUT_VARIABLE held OUTPUT_STRIP_TRAILING_WHITESPACE)
    if(NOT held MATCHES "^0 /dev/null\n1 /dev/null\n2 /dev/null(\n3 anon_inode:\\[pidfd\\])?$")
      fail("the guard ${guard} holds more than /dev/null and the launcher's pidfd:\n${held}")
    endif()
    execute_process(COMMAND kill -s TERM ${guard})
    execute_process(COMMAND kill -s INT ${guard})
    execute_process(COMMAND kill -s HUP ${guard})
    pause(0.3)
    execute_process(COMMAND cat /proc/${guard}/stat OUTPUT_VARIABLE stat ERROR_QUIET)
    if(NOT stat MATCHES "^[0-9]+ \\([^)]*\\) [RSD] ")
      fail("the guard ${guard} did not outlive SIGTERM, SIGINT and SIGHUP: ${stat}")
    endif()
  endforeach()
  if(NOT guards EQUAL expected)
    fail("expected ${expected} world's guards among the running processes, found ${guards}: ${processes}")
  endif()
endfunction()

function(wait_for_status out)
  foreach(try RANGE 300)
    if(EXISTS "${WORK}/status")
      file(READ "${WORK}/status" status)
      string(STRIP "${status}" status)
      if(NOT status STREQUAL "")
        set(${out} ${status} PARENT_SCOPE)
        return()
      endif()
    endif()
    pause(0.05)
  endforeach()
  fail("collcheck did not exit within 15 s of the signal")
endfunction()

string(REPLACE "+" ";" args "${ARGS}")
if(NOT RANKS)
  set(RANKS 2)
endif()
segments_now(before)

if(MODE STREQUAL "signal")
  start_collcheck("${COLLCHECK}" ${args})
  collcheck_pid(pid)
  wait_for_phase(${PHASE} ${RANKS})
  execute_process(COMMAND kill -s ${SIGNAL} ${pid})
  expect_nothing_left(${pid} "${before}" 2 "SIG${SIGNAL} at ${PHASE}")
  wait_for_status(status)
  if(SIGNAL STREQUAL "INT")
    set(expected 130)
  else()
    set(expected 143)
  endif()
  if(NOT status EQUAL expected)
    fail("SIG${SIGNAL} at ${PHASE}: exit status ${status}, expected ${expected}")
  endif()
  message(STATUS "SIG${SIGNAL} at ${PHASE}: nothing left after ${elapsed_ms} ms, exit status ${status}")

elseif(MODE STREQUAL "kill" OR MODE STREQUAL "kill-deaf-mpirun")
  set(path "$ENV{PATH}")
  if(MODE STREQUAL "kill-deaf-mpirun")
    # First on PATH: an mpirun that ignores SIGTERM, runs the real one and then sleeps a minute,
    # as a loaded mpirun slow to act on its SIGTERM would stay (it is the session leader that the
    # launcher's death signals). Only the world's guard ends it within the 10 s below.
    find_program(real_mpirun mpirun REQUIRED)
    file(WRITE "${WORK}/bin/mpirun" "#!/bin/sh\ntrap '' TERM\n'${real_mpirun}' \"$@\"\nsleep 60\n")
    file(CHMOD "${WORK}/bin/mpirun" PERMISSIONS OWNER_READ OWNER_WRITE OWNER_EXECUTE)
    set(ENV{PATH} "${WORK}/bin:${path}")
  endif()
  start_collcheck("${COLLCHECK}" ${args})
  collcheck_pid(pid)
  wait_for_phase(${PHASE} ${RANKS})
  if(PHASE STREQUAL "running")
    guard_is_deaf_and_holds_nothing_of_the_launcher()
  endif()
  execute_process(COMMAND kill -s KILL ${pid})
  # Nothing can clean up after SIGKILL at once; the ranks, and then mpirun, see the launcher gone.
  foreach(try RANGE 100)
    marked_processes(processes)
    if(NOT processes)
      break()
    endif()
    pause(0.1)
  endforeach()
  if(processes)
    fail("SIGKILL at ${PHASE}: processes still alive after 10 s: ${processes}")
  endif()
  set(ENV{PATH} "${path}")
  # (Its world directory is left for a sweep: this one's, or that of any run meanwhile.)
  # The next run sweeps what the dead owner left, and only that: a directory and a segment of a
  # live owner (a process of ours that sleeps) stay; a dead owner's fake ones go.
  execute_process(COMMAND sh -c "sleep 60 >/dev/null 2>&1 & echo $!" OUTPUT_VARIABLE live OUTPUT_STRIP_TRAILING_WHITESPACE)
  execute_process(COMMAND sh -c "echo $$" OUTPUT_VARIABLE dead OUTPUT_STRIP_TRAILING_WHITESPACE)
  set(live_files "/dev/shm/collcheck-world-${live}-99" "/dev/shm/collcheck-mpi-${live}-99-0-pid${live}")
  set(dead_files "/dev/shm/collcheck-world-${dead}-99" "/dev/shm/collcheck-mpi-${dead}-99-0-pid${dead}")
  file(MAKE_DIRECTORY "/dev/shm/collcheck-world-${live}-99" "/dev/shm/collcheck-world-${dead}-99")
  file(TOUCH "/dev/shm/collcheck-mpi-${live}-99-0-pid${live}" "/dev/shm/collcheck-mpi-${dead}-99-0-pid${dead}")
  execute_process(COMMAND "${COLLCHECK}" replay --backend ring@proc --deadline 8s "allreduce/f32/sum/n=64/ranks=2"
    RESULT_VARIABLE status OUTPUT_VARIABLE stdout ERROR_VARIABLE stderr)
  set(report "the sweeping run: status ${status}\n${stdout}${stderr}")
  leftover_files(${pid} "${before}" files)
  set(spared TRUE)
  foreach(f IN LISTS live_files)
    if(NOT EXISTS "${f}")
      set(spared FALSE)
    endif()
  endforeach()
  set(swept_fakes TRUE)
  foreach(f IN LISTS dead_files)
    if(EXISTS "${f}")
      set(swept_fakes FALSE)
    endif()
  endforeach()
  file(REMOVE_RECURSE ${live_files} ${dead_files})
  execute_process(COMMAND kill ${live})
  if(NOT status EQUAL 0)
    fail("the run after SIGKILL failed")
  elseif(files OR NOT swept_fakes)
    fail("SIGKILL at ${PHASE}: the next run did not sweep: ${files}; dead owner's fakes swept: ${swept_fakes}")
  elseif(NOT spared)
    fail("the sweep removed a live owner's directory or segment: ${live_files}")
  endif()
  message(STATUS "SIGKILL at ${PHASE}: processes gone; the next run swept the rest and spared live owners")

elseif(MODE STREQUAL "dead-rank")
  # A rank killed at 0 dies while the world connects its links, between creating its segment and
  # removing the name; those that outlive it must remove it, and their own.
  foreach(try RANGE 1)
    start_collcheck("${COLLCHECK}" replay --backend ring@proc --deadline 8s --faults "kill:rank=1:at=0"
      "allreduce/f32/sum/n=4096/ranks=3")
    collcheck_pid(pid)
    wait_for_status(status)
    file(REMOVE "${WORK}/status" "${WORK}/timeout")
    expect_nothing_left(${pid} "${before}" 2 "a rank killed at 0")
  endforeach()

elseif(MODE STREQUAL "concurrent")
  # Runs that start (and sweep) while another one goes on do not disturb it.
  start_collcheck("${COLLCHECK}" check --backend ring@proc --ranks 2..3 --seed 5 --time-budget 8s)
  collcheck_pid(pid)
  wait_for_phase(running 2)
  foreach(try RANGE 2)
    execute_process(COMMAND "${COLLCHECK}" replay --backend ring@proc --deadline 8s "allreduce/f32/sum/n=64/ranks=2"
      RESULT_VARIABLE status OUTPUT_VARIABLE stdout ERROR_VARIABLE stderr)
    if(NOT status EQUAL 0)
      fail("a concurrent run failed: ${status}\n${stdout}${stderr}")
    endif()
  endforeach()
  wait_for_status(status)
  file(READ "${WORK}/out" out)
  if(NOT status EQUAL 0 OR NOT out MATCHES " 0 failed, ")
    fail("the run that went on was disturbed: status ${status}")
  endif()
elseif(MODE STREQUAL "launch-fails")
  # mpirun refuses its arguments, so every world's launch fails; collcheck reports it and ends
  # by itself, and within 2 s of that nothing of its worlds is left.
  start_collcheck("${COLLCHECK}" ${args})
  collcheck_pid(pid)
  wait_for_status(status)
  if(status EQUAL 0 OR status GREATER 128)
    fail("failed launches: exit status ${status}, expected a finding or an error, not a pass or a signal")
  endif()
  expect_nothing_left(${pid} "${before}" 2 "failed launches")
  message(STATUS "failed launches: nothing left ${elapsed_ms} ms after the exit (status ${status})")
elseif(MODE STREQUAL "binary-replaced")
  # A campaign whose program (with -DLIBRARIES=1 the libraries beside it too, with -DPLUGIN=FILE
  # its plugin, with -DSCHEDULE_RANKS=N its schedule file, a ring on N ranks) is rebuilt while it
  # runs: the cases run on a copy, and the
  # mpirun first on PATH removes that copy and writes a script that exits 42 in its place before
  # it starts a world. The ranks must still run what the campaign started with (the launcher's
  # image, the plugin's file as first loaded, the schedule's text as first read), and so must the
  # guard of the second world (RANKS: both worlds' ranks; the first world's guard starts before
  # its mpirun does), and the run end clean with nothing left. ARGS name the copy @PLUGIN@ or
  # @SCHEDULE@.
  set(guards 2)
  if(DEFINED PLUGIN)
    file(COPY "${PLUGIN}" DESTINATION "${WORK}/installed")
    get_filename_component(plugin_name "${PLUGIN}" NAME)
    set(replaced "${WORK}/installed/${plugin_name}")
    set(program "${COLLCHECK}")
    string(REPLACE "@PLUGIN@" "${replaced}" args "${args}")
    set(what "plugin")
  elseif(DEFINED SCHEDULE_RANKS)
    # A schedule file fixes its ranks: one world, one guard.
    set(replaced "${WORK}/installed/ring.schedule")
    file(MAKE_DIRECTORY "${WORK}/installed")
    execute_process(COMMAND "${COLLCHECK}" export --algorithm ring --ranks ${SCHEDULE_RANKS} --count ${SCHEDULE_RANKS}
      --output "${replaced}" RESULT_VARIABLE exported)
    if(NOT exported EQUAL 0)
      fail("could not export a ring schedule on ${SCHEDULE_RANKS} ranks")
    endif()
    set(program "${COLLCHECK}")
    string(REPLACE "@SCHEDULE@" "${replaced}" args "${args}")
    set(what "schedule file")
    set(guards 1)
  else()
    get_filename_component(build_bin "${COLLCHECK}" DIRECTORY)
    file(GLOB libraries "${build_bin}/*.so")
    file(COPY "${COLLCHECK}" ${libraries} DESTINATION "${WORK}/installed")
    set(replaced "${WORK}/installed/collcheck")
    set(program "${replaced}")
    set(what "program")
    if(LIBRARIES)
      # The libraries beside it too (the socket interposer that worlds under faults preload).
      file(GLOB copies "${WORK}/installed/*.so")
      list(APPEND replaced ${copies})
      set(what "program and its libraries")
    endif()
  endif()
  file(WRITE "${WORK}/not-collcheck" "#!/bin/sh\nexit 42\n")
  file(CHMOD "${WORK}/not-collcheck" PERMISSIONS OWNER_READ OWNER_WRITE OWNER_EXECUTE)
  find_program(real_mpirun mpirun REQUIRED)
  set(wrapper "#!/bin/sh\n")
  foreach(file IN LISTS replaced)
    string(APPEND wrapper "rm -f '${file}'\ncp '${WORK}/not-collcheck' '${file}'\n")
  endforeach()
  file(WRITE "${WORK}/bin/mpirun" "${wrapper}exec '${real_mpirun}' \"$@\"\n")
  file(CHMOD "${WORK}/bin/mpirun" PERMISSIONS OWNER_READ OWNER_WRITE OWNER_EXECUTE)
  set(path "$ENV{PATH}")
  set(ENV{PATH} "${WORK}/bin:${path}")
  start_collcheck("${program}" ${args})
  collcheck_pid(pid)
  # Its worlds running (every rank connected), or the run over first (the ranks never came).
  foreach(try RANGE 1500)
    marked_processes(processes)
    list(FILTER processes INCLUDE REGEX "^[0-9]+ [^ ]*collcheck worker ")
    list(LENGTH processes workers)
    if(workers GREATER_EQUAL RANKS OR EXISTS "${WORK}/status")
      break()
    endif()
    pause(0.02)
  endforeach()
  if(NOT workers GREATER_EQUAL RANKS)
    fail("${what} replaced: the worlds' ranks never all ran (found ${workers} of ${RANKS})")
  endif()
  pause(0.5)
  guard_is_deaf_and_holds_nothing_of_the_launcher(${guards})
  set(ENV{PATH} "${path}")
  wait_for_status(status)
  file(READ "${WORK}/out" out)
  if(NOT status EQUAL 0 OR NOT out MATCHES " [1-9][0-9]* passed, 0 failed, ")
    fail("${what} replaced: exit status ${status}, expected 0 with cases passed and none failed")
  endif()
  expect_nothing_left(${pid} "${before}" 2 "${what} replaced")
  message(STATUS "${what} replaced before the worlds started: they ran what the campaign started with")
else()
  message(FATAL_ERROR
    "leftovers_run.cmake: MODE must be signal, kill, kill-deaf-mpirun, dead-rank, concurrent, launch-fails or binary-replaced")
endif()
