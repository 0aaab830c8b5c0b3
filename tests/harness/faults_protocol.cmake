# tests/harness/faults_protocol.cmake: CLI tests of issue 6 (protocol), included from CMakeLists.txt.
