# tests/harness/faults_sockets.cmake: CLI tests of issue 6 (sockets), included from CMakeLists.txt.
