# tests/harness/faults_protocol.cmake: CLI tests of the link protocol under faults, included from CMakeLists.txt.
# Launched `@proc` worlds under single-fault plans: without `reliable` every fault that damages
# or loses a message ends `detected` (never `corrupt`); with it, transient faults end `ok`; with
# checksums off (mutant:no-checksum) a corruption is `corrupt`. Columns of the outcome table:
# runs, ok, detected, hang, corrupt, crash.

# A corrupted message is caught by its checksum: detected on some runs, corrupt on none.
collcheck_add_cli_test(check_proc_corrupt_is_detected check --backend ring@proc --faults "corrupt:link=0->1:times=1"
  --ranks 2..3 --seed 1 --time-budget 3s STATUS 0 STDOUT " 0 failed, "
  "\n +ring@proc +corrupt +[0-9]+ +[0-9]+ +[1-9][0-9]* +0 +0 +0\n")

# Reliable mode repairs each transient fault: every run ok.
foreach(fault "corrupt:link=0->1:times=1" "drop:link=1->0:times=1" "duplicate:rank=0" "reorder:link=0->1:times=2")
  string(REGEX REPLACE ":.*" "" kind "${fault}")
  collcheck_add_cli_test(check_proc_reliable_${kind} check --backend ring@proc:reliable=on --faults "${fault}"
    --ranks 2..3 --seed 1 --time-budget 3s STATUS 0 STDOUT " 0 failed, "
    "\n +ring@proc:reliable=on +${kind} +([0-9]+) +[0-9]+ +0 +0 +0 +0\n")
  set_tests_properties(cli.check_proc_reliable_${kind} PROPERTIES LABELS "cli;proc;faults" TIMEOUT 60)
endforeach()

# Without checksums the same corruption reaches the output: a safety failure, found and shrunk.
collcheck_add_cli_test(check_proc_no_checksum_is_corrupt check --backend mutant:no-checksum@proc
  --faults "corrupt:link=0->1" --ranks 2..3 --seed 1 --time-budget 3s STATUS 1
  STDOUT "FAILED [a-z-]+ on mutant:no-checksum@proc" "\n +mutant:no-checksum@proc +corrupt +[0-9]+ +[0-9]+ +[0-9]+ +0 +[1-9][0-9]* +0\n")

set_tests_properties(cli.check_proc_corrupt_is_detected cli.check_proc_no_checksum_is_corrupt
  PROPERTIES LABELS "cli;proc;faults" TIMEOUT 60)

# A rank stopped (SIGSTOP) in the middle of a run: its peers give up after the link timeout and
# stop each other, reliable or not: detected, never a hang. (A rank stopped before the world's
# first connect leaves the others in World::allgather, which has no timeout: not tested here.)
foreach(mode "timeout=500" "reliable=on,timeout=500")
  string(REGEX REPLACE "[=,]" "_" name "${mode}")
  collcheck_add_cli_test(check_proc_stop_${name} check --backend "ring@proc:${mode}" --faults "stop:rank=1:at=0.03"
    --ranks 2 --count 16M --collective allreduce --seed 1 --cases 2 --property liveness STATUS 0
    STDOUT "\n +ring@proc:${mode} +stop +2 +0 +2 +0 +0 +0\n")
  set_tests_properties(cli.check_proc_stop_${name} PROPERTIES LABELS "cli;proc;faults" TIMEOUT 60)
endforeach()

# Waits that never time out (mutant:no-timeout): a lost message leaves its receiver waiting until
# the launcher's deadline: a hang, which liveness reports and shrinks.
collcheck_add_cli_test(check_proc_no_timeout_is_a_hang check --backend mutant:no-timeout@proc
  --faults "drop:link=0->1" --ranks 2 --seed 1 --cases 3 --deadline 2s --property liveness STATUS 1
  STDOUT "FAILED liveness on mutant:no-timeout@proc" "hang: ranks? [0-9.,]+ did not return within the deadline of 2\\.0 s")
set_tests_properties(cli.check_proc_no_timeout_is_a_hang PROPERTIES LABELS "cli;proc;faults" TIMEOUT 60)

# Random plans: our executor on launched worlds never ends corrupt or hung and recovers after
# every detected run (safety, liveness and recovery hold, so nothing fails) — under the swarms the
# seed draws, and under all ten kinds named; with reliable=on and transient kinds only, every run
# ends ok (reliability).
collcheck_add_cli_test(check_proc_random_faults check --backend ring@proc --faults random
  --ranks 2..3 --count 0..4K --seed 5 --cases 25 --time-budget 40s
  --property safety --property liveness --property recovery --property reliability STATUS 0
  STDOUT "faults: random, a swarm per 16 cases " " 0 failed, " "\n +ring@proc +[a-z-]+ +[0-9]+ +[0-9]+ +[0-9]+ +0 +0 +0\n")
collcheck_add_cli_test(check_proc_random_faults_every_kind check --backend tree@proc
  --faults random:drop,delay,corrupt,duplicate,reorder,link-down,link-flap,straggler,stop,kill
  --ranks 2..3 --count 0..4K --seed 6 --cases 20 --time-budget 30s
  --property safety --property liveness --property recovery STATUS 0 STDOUT " 0 failed, ")
collcheck_add_cli_test(check_proc_random_faults_reliable check --backend ring@proc:reliable=on
  --faults random:drop,delay,corrupt,duplicate,reorder,link-flap,straggler
  --ranks 2..3 --count 0..4K --seed 7 --cases 20 --time-budget 30s
  --property safety --property liveness --property reliability STATUS 0 STDOUT " 0 failed, "
  "\n +ring@proc:reliable=on +drop +[0-9]+ +[0-9]+ +0 +0 +0 +0\n")
set_tests_properties(cli.check_proc_random_faults cli.check_proc_random_faults_every_kind
  cli.check_proc_random_faults_reliable PROPERTIES LABELS "cli;proc;faults" TIMEOUT 90)

# The cuda engine on the host (threads as ranks): with reliable=on and transient kinds only, every
# run ends ok (reliability), as on proc.
collcheck_add_cli_test(check_cuda_host_random_faults_reliable check --backend ring@cuda-host:reliable=on
  --faults random:drop,delay,corrupt,duplicate,reorder,link-flap,straggler
  --ranks 2..4 --count 1K..64K --seed 7 --cases 20 --time-budget 30s
  --property safety --property liveness --property reliability STATUS 0 STDOUT " 0 failed, "
  "\n +ring@cuda-host:reliable=on +drop +[0-9]+ +[0-9]+ +0 +0 +0 +0\n")
set_tests_properties(cli.check_cuda_host_random_faults_reliable PROPERTIES LABELS "cli;cuda;faults" TIMEOUT 90)
