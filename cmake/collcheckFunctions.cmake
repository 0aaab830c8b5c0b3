# The functions of collcheck's installed CMake package (cmake/collcheckConfig.cmake.in), which put
# collcheck's checks into a user's own ctest:
#
#   collcheck_add_test(NAME name BACKEND spec [COLLECTIVES c...] [RANKS a..b] [COUNT a..b]
#                      [TIME_BUDGET t] [CASES n] [SEED s] [FAULTS plan] [LABELS l...]
#                      [WORKING_DIRECTORY dir] [ARGS extra...])
#     `collcheck check --backend spec ...` as a ctest named `name`: passes when every property
#     holds, fails on a finding (its shrunk case and replay line in the test's output), skips
#     (exit status 77) when nothing can run here; the JUnit report lands in the build folder as
#     name.junit.xml.
#
#   collcheck_add_conformance(NAME name BACKEND spec [LABELS l...] [WORKING_DIRECTORY dir])
#     The conformance suite (every behaviour a backend must have) on `spec`, as one ctest; a
#     behaviour the backend does not offer is a skip with its reason.
#
# A spec names a built-in backend (`ring@sim`, `mpi`, `gloo`) or a plugin, `plugin:PATH[:k=v,...]`;
# a PATH relative to WORKING_DIRECTORY (default: the current build folder). Plugins run one
# process per rank under Open MPI's mpirun, which refuses to start as root unless told: these
# tests tell it (OMPI_ALLOW_RUN_AS_ROOT), as containers and CI runners need.
include_guard(GLOBAL)

function(collcheck_add_test)
  cmake_parse_arguments(PARSE_ARGV 0 arg "" "NAME;BACKEND;RANKS;COUNT;TIME_BUDGET;CASES;SEED;FAULTS;WORKING_DIRECTORY"
    "COLLECTIVES;LABELS;ARGS")
  if(arg_UNPARSED_ARGUMENTS OR NOT arg_NAME OR NOT arg_BACKEND)
    message(FATAL_ERROR "collcheck_add_test: expected NAME name BACKEND spec [COLLECTIVES c...] [RANKS a..b] "
      "[COUNT a..b] [TIME_BUDGET t] [CASES n] [SEED s] [FAULTS plan] [LABELS l...] [WORKING_DIRECTORY dir] "
      "[ARGS extra...], got unexpected '${arg_UNPARSED_ARGUMENTS}'")
  endif()
  set(command check --backend ${arg_BACKEND} --junit ${CMAKE_CURRENT_BINARY_DIR}/${arg_NAME}.junit.xml)
  foreach(collective IN LISTS arg_COLLECTIVES)
    list(APPEND command --collective ${collective})
  endforeach()
  foreach(option RANKS COUNT TIME_BUDGET CASES SEED FAULTS)
    if(DEFINED arg_${option})
      string(TOLOWER "${option}" flag)
      string(REPLACE "_" "-" flag "${flag}")
      list(APPEND command --${flag} ${arg_${option}})
    endif()
  endforeach()
  _collcheck_add(${arg_NAME} "${arg_WORKING_DIRECTORY}" "${arg_LABELS}" collcheck::collcheck ${command} ${arg_ARGS})
endfunction()

function(collcheck_add_conformance)
  cmake_parse_arguments(PARSE_ARGV 0 arg "" "NAME;BACKEND;WORKING_DIRECTORY" "LABELS")
  if(arg_UNPARSED_ARGUMENTS OR NOT arg_NAME OR NOT arg_BACKEND)
    message(FATAL_ERROR "collcheck_add_conformance: expected NAME name BACKEND spec [LABELS l...] "
      "[WORKING_DIRECTORY dir], got unexpected '${arg_UNPARSED_ARGUMENTS}'")
  endif()
  if(NOT TARGET collcheck::conformance)
    message(FATAL_ERROR "collcheck_add_conformance: this collcheck was installed without collcheck-conformance "
      "(it is built with collcheck's tests: BUILD_TESTING=ON and GoogleTest found)")
  endif()
  _collcheck_add(${arg_NAME} "${arg_WORKING_DIRECTORY}" "${arg_LABELS}" collcheck::conformance
    --backend ${arg_BACKEND} --gtest_brief=1)
endfunction()

# One ctest running `program arguments...`, with the package's environment and skip status.
function(_collcheck_add name working_directory labels program)
  if(NOT working_directory)
    set(working_directory ${CMAKE_CURRENT_BINARY_DIR})
  endif()
  add_test(NAME ${name} COMMAND ${program} ${ARGN} WORKING_DIRECTORY ${working_directory})
  set_tests_properties(${name} PROPERTIES SKIP_RETURN_CODE 77
    ENVIRONMENT "OMPI_ALLOW_RUN_AS_ROOT=1;OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1")
  if(labels)
    set_tests_properties(${name} PROPERTIES LABELS "${labels}")
  endif()
endfunction()
