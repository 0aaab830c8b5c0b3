# tests/harness/faults_outcomes.cmake: CLI tests of issue 6 (outcomes), included from CMakeLists.txt.
