# Runs `collcheck check` under a fault plan of several faults for faults_sockets.cmake, which
# cannot pass a `;` through check_cli.cmake: PLAN separates faults with `+` instead.
#   cmake -DCOLLCHECK=<exe> -DBACKEND=<spec> -DPLAN=<a+b> -DEXPECT=<regex> -P faults_sockets_run.cmake
cmake_minimum_required(VERSION 3.25)
string(REPLACE "+" ";" plan "${PLAN}")
execute_process(COMMAND "${COLLCHECK}" check --backend "${BACKEND}" --ranks 2 --count 1..64 --cases 2 --seed 1
  --deadline 5s --property liveness --faults "${plan}"
  RESULT_VARIABLE status OUTPUT_VARIABLE stdout ERROR_VARIABLE stderr)
if(NOT status EQUAL 0 OR NOT "${stdout}" MATCHES "${EXPECT}")
  message(FATAL_ERROR "expected status 0 and stdout matching '${EXPECT}'\nstatus: ${status}\nstdout:\n${stdout}\nstderr:\n${stderr}")
endif()
