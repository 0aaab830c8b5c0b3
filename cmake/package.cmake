# What `cmake --install` puts under its prefix, and the CMake package a user's own project finds
# with find_package(collcheck CONFIG): the programs (collcheck, the socket interposer and the NCCL net plugin beside it,
# collcheck-conformance where the tests are built), the plugin headers, and
# lib/cmake/collcheck/ with the imported targets collcheck::collcheck, collcheck::conformance and
# collcheck::plugin and the functions collcheck_add_test and collcheck_add_conformance
# (cmake/collcheckFunctions.cmake; docs/plugins.md shows them in use). Included last by the
# top-level CMakeLists.txt, once every target exists.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(COLLCHECK_PACKAGE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/collcheck)

install(TARGETS collcheck EXPORT collcheckTargets RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
# Launched worlds under a fault plan preload it from next to the collcheck binary.
install(TARGETS collcheck_interpose LIBRARY DESTINATION ${CMAKE_INSTALL_BINDIR})
# NCCL's network plugin with faults, where the nccl backend finds it: beside collcheck.
install(TARGETS collcheck_nccl_net LIBRARY DESTINATION ${CMAKE_INSTALL_BINDIR})
install(TARGETS collcheck_plugin_headers EXPORT collcheckTargets)
install(FILES ${PROJECT_SOURCE_DIR}/include/collcheck/plugin.h ${PROJECT_SOURCE_DIR}/include/collcheck/plugin_v1.h
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/collcheck)
if(TARGET collcheck_conformance_program)
  install(TARGETS collcheck_conformance_program EXPORT collcheckTargets RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
endif()

install(EXPORT collcheckTargets NAMESPACE collcheck:: DESTINATION ${COLLCHECK_PACKAGE_DIR})
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/collcheckConfig.cmake.in
  ${PROJECT_BINARY_DIR}/package/collcheckConfig.cmake INSTALL_DESTINATION ${COLLCHECK_PACKAGE_DIR})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/package/collcheckConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/package/collcheckConfig.cmake
  ${PROJECT_BINARY_DIR}/package/collcheckConfigVersion.cmake ${PROJECT_SOURCE_DIR}/cmake/collcheckFunctions.cmake
  DESTINATION ${COLLCHECK_PACKAGE_DIR})
