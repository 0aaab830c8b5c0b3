# tests/harness/faults_outcomes.cmake: outcomes under faults, included from CMakeLists.txt (with
# RapidCheck): random fault plans, the properties under faults on small broken backends, and
# `check --faults random` from the command line (labels `cli;faults`).
if(COLLCHECK_HAVE_GTEST)
  collcheck_add_gtest(faults_outcomes_tests
    LABELS harness faults
    SOURCES faults_outcomes_test.cc
    LIBRARIES collcheck_harness collcheck_impls rapidcheck nlohmann_json::nlohmann_json)
  # Swarms per batch, faults on a stream's last message, special values at block edges.
  collcheck_add_gtest(placement_tests
    LABELS harness faults
    SOURCES placement_test.cc
    LIBRARIES collcheck_harness collcheck_impls)
endif()

# `check --faults random` from the command line: how the swarms are drawn is printed first (seed
# 1113's first swarm is delay and straggler; the later batches draw others), every case runs
# under its own plan, and the matrix backend × fault kind follows the table. A bad swarm names
# the kind; replay takes one concrete plan, never `random`.
collcheck_add_cli_test(check_random_faults check --backend ring@sim --faults random --cases 40 --seed 1113
  STATUS 0
  STDOUT "\nfaults: random, a swarm per 16 cases \\(from seed 1113\\)\n"
         "\n40 cases in [0-9.]+ s: 40 passed, 0 failed, 0 skipped"
         "outcomes under faults random, a swarm per 16 cases \\(from seed 1113\\)"
         "\n +backend +fault +runs +ok +detected +hang +corrupt +crash\n"
         "\n +ring@sim +delay +[1-9][0-9]* +[0-9]+ +[0-9]+ +0 +0 +0\n"
         "\n +ring@sim +straggler +[1-9][0-9]* +[0-9]+ +[0-9]+ +0 +0 +0\n"
  EMPTY stderr)
collcheck_add_cli_test(check_random_faults_bad_kind check --backend ring@sim --faults random:drop,flood STATUS 2
  STDERR "^collcheck check: --faults random:KIND,...: unknown fault kind 'flood'" EMPTY stdout)
collcheck_add_cli_test(replay_refuses_random_faults replay --backend ring@sim --faults random
  allreduce/f32/sum/n=10/ranks=3 STATUS 2 STDERR "replay takes one plan" EMPTY stdout)
set_tests_properties(cli.check_random_faults cli.check_random_faults_bad_kind cli.replay_refuses_random_faults
  PROPERTIES LABELS "cli;faults")

# End to end on `sim` with its link protocol: corrupted messages end `detected` on ring@sim and
# `corrupt` on the mutant that skips checksums (a safety failure whose replay line carries the
# concrete shrunk plan); a drop leaves the mutant that never times out hanging (liveness); a
# reliable ring ends `ok` under transient faults.
collcheck_add_cli_test(check_random_faults_safety_holds check --backend ring@sim --faults random:corrupt,drop,kill
  --cases 100 --seed 1 --property safety --property liveness --property recovery STATUS 0
  STDOUT " 0 failed, " "\n +ring@sim +corrupt +[0-9]+ +[0-9]+ +[1-9][0-9]* +0 +0 +0\n" EMPTY stderr)
collcheck_add_cli_test(check_random_faults_catch_no_checksum check --backend mutant:no-checksum@sim
  --faults random:corrupt --cases 30 --seed 1 --property safety STATUS 1
  STDOUT "\n +mutant:no-checksum@sim +corrupt +[0-9]+ +[0-9]+ +[0-9]+ +0 +[1-9][0-9]* +0\n"
         "FAILED safety on mutant:no-checksum@sim" "\n  under faults corrupt:[^\n]*\n"
         "replay: collcheck replay --backend 'mutant:no-checksum@sim' [^\n]* --faults 'corrupt:[^'\n]*'\n")
collcheck_add_cli_test(check_random_faults_catch_no_timeout check --backend mutant:no-timeout@sim
  --faults random:drop --cases 30 --seed 1 --property liveness STATUS 1
  STDOUT "FAILED liveness on mutant:no-timeout@sim" "hang: rank [0-9]+ step [0-9]+ [^\n]*still waiting at the deadline"
         "--faults 'drop:[^'\n]*'\n")
collcheck_add_cli_test(check_random_faults_reliable check --backend ring@sim:reliable=on
  --faults random:drop,corrupt,duplicate,reorder,delay --cases 100 --seed 4 --property reliability --property safety
  STATUS 0 STDOUT " 0 failed, " EMPTY stderr)
set_tests_properties(cli.check_random_faults_safety_holds cli.check_random_faults_catch_no_checksum
  cli.check_random_faults_catch_no_timeout cli.check_random_faults_reliable PROPERTIES LABELS "cli;faults")
