# Writes ${PROJECT_BINARY_DIR}/generated/collcheck/config.h from cmake/config.h.in and defines
# the INTERFACE target collcheck_config that puts it on the include path.
# Include after detect.cmake, whose results it records.

# A string as the body of a C string literal.
function(_collcheck_c_string out text)
  string(REPLACE "\\" "\\\\" text "${text}")
  string(REPLACE "\"" "\\\"" text "${text}")
  string(REPLACE "\n" "\\n" text "${text}")
  set(${out} "${text}" PARENT_SCOPE)
endfunction()

function(_collcheck_write_config)
  if(CMAKE_CONFIGURATION_TYPES)
    set(build_type "multi-config")
  elseif(CMAKE_BUILD_TYPE)
    set(build_type "${CMAKE_BUILD_TYPE}")
  else()
    set(build_type "none")
  endif()
  _collcheck_c_string(COLLCHECK_BUILD_TYPE_C "${build_type}")
  string(STRIP "${CMAKE_CXX_FLAGS}" flags)
  _collcheck_c_string(COLLCHECK_CXX_FLAGS_C "${flags}")

  set(rows "")
  foreach(part IN LISTS COLLCHECK_PARTS)
    _collcheck_c_string(COLLCHECK_${part}_REASON_C "${COLLCHECK_${part}_REASON}")
    _collcheck_c_string(title "${COLLCHECK_${part}_TITLE}")
    list(APPEND rows "  X(\"${title}\", COLLCHECK_HAVE_${part}, COLLCHECK_${part}_REASON)")
  endforeach()
  list(JOIN rows " \\\n" COLLCHECK_OPTIONAL_PART_ROWS)

  configure_file(${PROJECT_SOURCE_DIR}/cmake/config.h.in
    ${PROJECT_BINARY_DIR}/generated/collcheck/config.h @ONLY)
endfunction()

_collcheck_write_config()
add_library(collcheck_config INTERFACE)
target_include_directories(collcheck_config INTERFACE ${PROJECT_BINARY_DIR}/generated)
