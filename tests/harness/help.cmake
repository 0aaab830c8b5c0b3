# tests/harness/help.cmake, included from CMakeLists.txt (label `cli;help`): every command answers
# `collcheck COMMAND --help` (and -h) and `collcheck help COMMAND` with its usage line, every
# option of its table with the defaults, and an example; `help` of an unknown command is a usage
# error that lists the commands.

# The options each command's help must list (long names; bench also nccl-tests' short ones).
set(help_version_options "")
set(help_list_options "")
set(help_help_options "")
set(help_prove_options --algorithm --schedule --collective --ranks --counts --roots --layout --chunk --channels --fan-in
  --memory-limit)
set(help_simulate_options --algorithm --collective --ranks --counts --dtype --op --values --seed --schedule-seed
  --topology --root --chunk --channels --fan-in --faults --inplace --progress --json --memory-limit)
set(help_check_options --backend --collective --dtype --op --values --ranks --count --cases --seed --time-budget
  --property --json --junit --html --deadline --mpirun-args --faults --memory-limit)
set(help_replay_options --backend --schedule-seed --property --deadline --mpirun-args --faults --memory-limit)
set(help_bench_options "-b, --minbytes" "-e, --maxbytes" "-f, --stepfactor" "-i, --stepbytes" "-n, --iters"
  "-w, --warmup_iters, --warmup-iters, --warmup" "-c, --check" "-d, --datatype, --dtype" "-o, --op" "-r, --root"
  --backend --vs --collective --ranks --csv --svg --html "-J, --output_file, --output-file" --deadline --progress
  --memory-limit)
set(help_worker_options --backend --connect)
set(help_guard_options --launcher --launcher-pidfd --world --directory --grace)
# A default each help must show, where the command has defaults.
set(help_prove_default "--ranks LIST +rank counts, up to 16384 \\(default 1\\.\\.64\\)")
set(help_simulate_default "--counts LIST +element counts, one table row each \\(default 1K,64K,1M\\)")
set(help_check_default "--time-budget T +[^\n]* \\(default 60s\\)")
set(help_replay_default "--backend B +[^\n]* \\(default ring@sim\\)")
set(help_bench_default "-b, --minbytes BYTES +smallest message size \\(default 8\\)")

set(help_commands version list prove simulate bench worker guard help)
if(COLLCHECK_HAVE_RAPIDCHECK)
  list(APPEND help_commands check replay)
endif()
foreach(command IN LISTS help_commands)
  set(expected "^usage: collcheck ${command}[ \n]" "\noptions:\n" "\n  -h, --help +print this help\n"
    "\nexample:\n  [^\n]*collcheck ${command}")
  foreach(option IN LISTS help_${command}_options)
    list(APPEND expected "\n  ${option}[ \n]")
  endforeach()
  if(DEFINED help_${command}_default)
    list(APPEND expected "${help_${command}_default}")
  endif()
  collcheck_add_cli_test(help_${command} help ${command} STATUS 0 STDOUT ${expected} EMPTY stderr)
  collcheck_add_cli_test(${command}_help_option ${command} --help STATUS 0 STDOUT ${expected} EMPTY stderr)
  set_tests_properties(cli.help_${command} cli.${command}_help_option PROPERTIES LABELS "cli;help")
endforeach()

# -h too, and --help after other options; a value that reads `-h` is a value, not a request for help.
collcheck_add_cli_test(prove_short_help prove --algorithm ring -h STATUS 0 STDOUT "^usage: collcheck prove "
  EMPTY stderr)
collcheck_add_cli_test(bench_help_after_flags bench -b 8 -r -1 --help STATUS 0 STDOUT "^usage: collcheck bench "
  EMPTY stderr)
collcheck_add_cli_test(bench_help_as_a_value bench -d -h STATUS 2 STDERR "^collcheck bench: -d " EMPTY stdout)
# The overview names every command and how to get one command's help.
collcheck_add_cli_test(help_overview help STATUS 0
  STDOUT "^usage: collcheck <command>" "\n  collcheck prove \\[--algorithm A\\|all\\] \\[--schedule FILE\\] " "\n  collcheck bench \\[-b BYTES\\] "
  "collcheck help COMMAND \\(or collcheck COMMAND --help\\)" EMPTY stderr)
collcheck_add_cli_test(help_unknown_command help nosuchcommand STATUS 2
  STDERR "^collcheck help: unknown command 'nosuchcommand': allowed: version, list, prove, simulate, export, (check, replay, )?bench, worker, guard, help\n$"
  EMPTY stdout)
collcheck_add_cli_test(help_two_commands help prove bench STATUS 2
  STDERR "^collcheck help: unexpected argument 'bench': help takes one command\n$" EMPTY stdout)
set_tests_properties(cli.prove_short_help cli.bench_help_after_flags cli.bench_help_as_a_value cli.help_overview
  cli.help_unknown_command cli.help_two_commands PROPERTIES LABELS "cli;help")
