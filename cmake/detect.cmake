# Detects the optional parts collcheck can use; a missing part never fails the configure.
# Sets COLLCHECK_HAVE_<PART> (ON/OFF) and COLLCHECK_<PART>_REASON for each, then prints one summary.
# Required parts (nlohmann-json, header-only, and pugixml, both in Debian) stop the configure with the package to
# install, and the summary lists them too.
#
# Parts: CUDA, CUDA_HEADERS, NCCL, MPI, GLOO, IBVERBS, RAPIDCHECK, GTEST, BENCHMARK.
# COLLCHECK_ENABLE_<PART> (CUDA, NCCL, MPI, GLOO, IBVERBS) turns a part off; ON means "use it
# if found". CUDA_HEADERS follows COLLCHECK_ENABLE_CUDA; GTEST follows BUILD_TESTING.
# Also set where found: COLLCHECK_CUDA_INCLUDE_DIR, COLLCHECK_NCCL_INCLUDE_DIR,
# COLLCHECK_NCCL_LIBRARY, COLLCHECK_IBVERBS_INCLUDE_DIR, COLLCHECK_IBVERBS_LIBRARY.

option(COLLCHECK_ENABLE_CUDA "Use CUDA (nvcc and the toolkit headers) if found" ON)
option(COLLCHECK_ENABLE_NCCL "Use NCCL if found (needs CUDA)" ON)
option(COLLCHECK_ENABLE_MPI "Use MPI if found" ON)
option(COLLCHECK_ENABLE_GLOO "Use Gloo if found" ON)
option(COLLCHECK_ENABLE_IBVERBS "Use libibverbs if found" ON)

set(COLLCHECK_PARTS CUDA CUDA_HEADERS NCCL MPI GLOO IBVERBS RAPIDCHECK GTEST BENCHMARK)

# Records one part's result. Use inside a _collcheck_detect_* function: it sets the variables in
# the scope that called that function.
macro(_collcheck_part part have reason)
  set(COLLCHECK_HAVE_${part} ${have} PARENT_SCOPE)
  set(COLLCHECK_${part}_REASON "${reason}" PARENT_SCOPE)
endmacro()

# The usual hint for a package ci/install-deps installs.
function(_collcheck_install_hint out package)
  set(${out} "not found: install ${package} (ci/install-deps)" PARENT_SCOPE)
endfunction()

# The toolkit folder nvcc belongs to, as nvcc itself reports it: `nvcc` may be a wrapper script or
# a link in another folder (/usr/local/bin), so its own path does not say.
function(_collcheck_nvcc_root out nvcc)
  set(probe "${PROJECT_BINARY_DIR}/CMakeFiles/collcheck_nvcc_root.cu")
  file(WRITE "${probe}" "")
  execute_process(COMMAND "${nvcc}" --dryrun -c "${probe}" -o "${probe}.o"
    OUTPUT_VARIABLE output ERROR_VARIABLE output RESULT_VARIABLE ignored)
  if(output MATCHES "#\\$ _HERE_=([^\r\n]+)")
    get_filename_component(root "${CMAKE_MATCH_1}" DIRECTORY)
  else()
    get_filename_component(real "${nvcc}" REALPATH)
    get_filename_component(bin_dir "${real}" DIRECTORY)
    get_filename_component(root "${bin_dir}" DIRECTORY)
  endif()
  set(${out} "${root}" PARENT_SCOPE)
endfunction()

# nvcc through CMake's own probe (check_language compiles a test program); the toolkit through
# FindCUDAToolkit, for its version and root. enable_language(CUDA) waits for CUDA sources.
function(_collcheck_detect_cuda)
  if(NOT COLLCHECK_ENABLE_CUDA)
    _collcheck_part(CUDA OFF "turned off by COLLCHECK_ENABLE_CUDA=OFF")
    return()
  endif()
  find_program(COLLCHECK_NVCC nvcc
    HINTS ENV CUDA_HOME ENV CUDA_PATH /usr/local/cuda PATH_SUFFIXES bin)
  if(COLLCHECK_NVCC AND NOT DEFINED ENV{CUDACXX} AND NOT DEFINED CMAKE_CUDA_COMPILER)
    set(ENV{CUDACXX} "${COLLCHECK_NVCC}")  # check_language's child configure reads it
  endif()
  set(CMAKE_MESSAGE_LOG_LEVEL NOTICE)  # keep the probes' chatter out of the summary
  include(CheckLanguage)
  check_language(CUDA)
  if(NOT CMAKE_CUDA_COMPILER)
    if(COLLCHECK_NVCC)
      _collcheck_part(CUDA OFF
        "${COLLCHECK_NVCC} cannot build a test program (see CMakeFiles/CheckCUDA)")
    else()
      _collcheck_part(CUDA OFF "nvcc not found: set CUDACXX or put nvcc on PATH")
    endif()
    return()
  endif()
  _collcheck_nvcc_root(root "${CMAKE_CUDA_COMPILER}")
  if(NOT DEFINED CUDAToolkit_ROOT)
    set(CUDAToolkit_ROOT "${root}")
  endif()
  find_package(CUDAToolkit QUIET)
  if(NOT CUDAToolkit_FOUND)
    _collcheck_part(CUDA OFF "${CMAKE_CUDA_COMPILER} works but FindCUDAToolkit found no toolkit")
    return()
  endif()
  set(COLLCHECK_CUDA_TOOLKIT_INCLUDE_DIRS "${CUDAToolkit_INCLUDE_DIRS}" PARENT_SCOPE)
  _collcheck_part(CUDA ON "nvcc ${CUDAToolkit_VERSION}, ${root}")
endfunction()

# cuda_fp16.h, cuda_bf16.h and cuda_fp8.h, used by host-only tests that compare our float
# conversions with CUDA's; they must compile with the C++ compiler, no nvcc involved.
function(_collcheck_detect_cuda_headers)
  set(COLLCHECK_CUDA_INCLUDE_DIR "" PARENT_SCOPE)
  if(NOT COLLCHECK_ENABLE_CUDA)
    _collcheck_part(CUDA_HEADERS OFF "turned off by COLLCHECK_ENABLE_CUDA=OFF")
    return()
  endif()
  find_path(COLLCHECK_CUDA_FP8_HEADER_DIR cuda_fp8.h
    HINTS ${COLLCHECK_CUDA_TOOLKIT_INCLUDE_DIRS} ENV CUDA_HOME ENV CUDA_PATH /usr/local/cuda
    PATH_SUFFIXES include)
  set(dir "${COLLCHECK_CUDA_FP8_HEADER_DIR}")
  if(NOT dir OR NOT EXISTS "${dir}/cuda_fp16.h" OR NOT EXISTS "${dir}/cuda_bf16.h")
    _collcheck_part(CUDA_HEADERS OFF
      "cuda_fp16.h, cuda_bf16.h, cuda_fp8.h not found: set CUDA_HOME")
    return()
  endif()
  include(CheckCXXSourceCompiles)
  set(CMAKE_MESSAGE_LOG_LEVEL NOTICE)
  set(CMAKE_REQUIRED_INCLUDES "${dir}")
  set(CMAKE_REQUIRED_QUIET ON)
  check_cxx_source_compiles([[
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
int main() {
  __nv_fp8_e4m3 e4m3(1.5f);
  return static_cast<int>(__half2float(__float2half(1.0f)) +
                          __bfloat162float(__float2bfloat16(1.0f)) + static_cast<float>(e4m3));
}]] COLLCHECK_CUDA_HEADERS_COMPILE)
  if(NOT COLLCHECK_CUDA_HEADERS_COMPILE)
    _collcheck_part(CUDA_HEADERS OFF
      "${dir}/cuda_fp8.h does not compile with ${CMAKE_CXX_COMPILER_ID}")
    return()
  endif()
  set(COLLCHECK_CUDA_INCLUDE_DIR "${dir}" PARENT_SCOPE)
  _collcheck_part(CUDA_HEADERS ON "${dir} (cuda_fp16.h, cuda_bf16.h, cuda_fp8.h)")
endfunction()

# nccl.h and libnccl, from NCCL_HOME or the CUDA toolkit; the version is read from nccl.h.
function(_collcheck_detect_nccl)
  if(NOT COLLCHECK_ENABLE_NCCL)
    _collcheck_part(NCCL OFF "turned off by COLLCHECK_ENABLE_NCCL=OFF")
    return()
  endif()
  if(NOT COLLCHECK_HAVE_CUDA)
    _collcheck_part(NCCL OFF "needs CUDA, which is disabled")
    return()
  endif()
  set(hints $ENV{NCCL_HOME} $ENV{NCCL_ROOT} $ENV{CUDA_HOME} /usr/local/cuda)
  find_path(COLLCHECK_NCCL_INCLUDE_DIR nccl.h HINTS ${hints} ${COLLCHECK_CUDA_TOOLKIT_INCLUDE_DIRS}
    PATH_SUFFIXES include)
  find_library(COLLCHECK_NCCL_LIBRARY nccl HINTS ${hints} PATH_SUFFIXES lib64 lib)
  if(NOT COLLCHECK_NCCL_INCLUDE_DIR)
    _collcheck_part(NCCL OFF "nccl.h not found: set NCCL_HOME")
    return()
  endif()
  if(NOT COLLCHECK_NCCL_LIBRARY)
    _collcheck_part(NCCL OFF "libnccl not found: set NCCL_HOME")
    return()
  endif()
  file(STRINGS "${COLLCHECK_NCCL_INCLUDE_DIR}/nccl.h" lines
    REGEX "^#define NCCL_(MAJOR|MINOR|PATCH) ")
  set(version "")
  foreach(field MAJOR MINOR PATCH)
    string(REGEX MATCH "NCCL_${field} +([0-9]+)" ignored "${lines}")
    list(APPEND version "${CMAKE_MATCH_1}")
  endforeach()
  list(JOIN version "." version)
  _collcheck_part(NCCL ON "${version}, ${COLLCHECK_NCCL_LIBRARY}")
endfunction()

# MPI's C API, called from C++ (the project has no C language, so the CXX component;
# MPI_CXX_SKIP_MPICXX keeps the deprecated C++ bindings out).
function(_collcheck_detect_mpi)
  if(NOT COLLCHECK_ENABLE_MPI)
    _collcheck_part(MPI OFF "turned off by COLLCHECK_ENABLE_MPI=OFF")
    return()
  endif()
  set(MPI_CXX_SKIP_MPICXX ON)
  set(MPI_DETERMINE_LIBRARY_VERSION ON)
  set(CMAKE_MESSAGE_LOG_LEVEL NOTICE)
  find_package(MPI QUIET COMPONENTS CXX)
  if(NOT MPI_CXX_FOUND)
    _collcheck_install_hint(reason libopenmpi-dev)
    _collcheck_part(MPI OFF "${reason}")
    return()
  endif()
  # "Open MPI v4.1.4, package: ..." or "MPICH Version: 4.0\n...": the first phrase is enough.
  string(REGEX REPLACE "[,\n].*" "" library "${MPI_CXX_LIBRARY_VERSION_STRING}")
  string(REGEX REPLACE "[ \t]+" " " library "${library}")
  if(NOT library OR library STREQUAL "NOTFOUND")
    set(library "library version unknown")
  endif()
  _collcheck_part(MPI ON "${library} (MPI ${MPI_CXX_VERSION}), ${MPIEXEC_EXECUTABLE}")
endfunction()

function(_collcheck_detect_gloo)
  if(NOT COLLCHECK_ENABLE_GLOO)
    _collcheck_part(GLOO OFF "turned off by COLLCHECK_ENABLE_GLOO=OFF")
    return()
  endif()
  # Gloo's package files stop the configure if their library is gone: look for it first.
  find_library(COLLCHECK_GLOO_LIBRARY gloo)
  if(NOT COLLCHECK_GLOO_LIBRARY)
    _collcheck_install_hint(reason libgloo-dev)
    _collcheck_part(GLOO OFF "${reason}")
    return()
  endif()
  find_package(Gloo CONFIG QUIET)
  if(NOT Gloo_FOUND OR NOT TARGET gloo)
    _collcheck_install_hint(reason libgloo-dev)
    _collcheck_part(GLOO OFF "${reason}")
    return()
  endif()
  get_target_property(library gloo LOCATION)
  _collcheck_part(GLOO ON "${GLOO_VERSION}, ${library}")
endfunction()

# libibverbs; its version comes from the pkg-config file beside the library, when there is one.
function(_collcheck_detect_ibverbs)
  if(NOT COLLCHECK_ENABLE_IBVERBS)
    _collcheck_part(IBVERBS OFF "turned off by COLLCHECK_ENABLE_IBVERBS=OFF")
    return()
  endif()
  find_path(COLLCHECK_IBVERBS_INCLUDE_DIR infiniband/verbs.h)
  find_library(COLLCHECK_IBVERBS_LIBRARY ibverbs)
  if(NOT COLLCHECK_IBVERBS_INCLUDE_DIR OR NOT COLLCHECK_IBVERBS_LIBRARY)
    _collcheck_install_hint(reason libibverbs-dev)
    _collcheck_part(IBVERBS OFF "${reason}")
    return()
  endif()
  get_filename_component(library_dir "${COLLCHECK_IBVERBS_LIBRARY}" DIRECTORY)
  set(pc "${library_dir}/pkgconfig/libibverbs.pc")
  set(version "")
  if(EXISTS "${pc}")
    file(STRINGS "${pc}" version_line REGEX "^Version:")
    string(REGEX REPLACE "^Version: *" "" version "${version_line}")
  endif()
  if(version)
    _collcheck_part(IBVERBS ON "${version}, ${COLLCHECK_IBVERBS_LIBRARY}")
  else()
    _collcheck_part(IBVERBS ON "${COLLCHECK_IBVERBS_LIBRARY}")
  endif()
endfunction()

function(_collcheck_detect_rapidcheck)
  find_package(rapidcheck CONFIG QUIET)
  if(NOT rapidcheck_FOUND OR NOT TARGET rapidcheck)
    _collcheck_install_hint(reason librapidcheck-dev)
    _collcheck_part(RAPIDCHECK OFF "${reason}")
    return()
  endif()
  _collcheck_part(RAPIDCHECK ON "${rapidcheck_DIR}")
endfunction()

function(_collcheck_detect_gtest)
  if(NOT BUILD_TESTING)
    _collcheck_part(GTEST OFF "turned off by BUILD_TESTING=OFF")
    return()
  endif()
  find_package(GTest QUIET)
  if(NOT GTest_FOUND OR NOT TARGET GTest::gtest_main)
    _collcheck_install_hint(reason libgtest-dev)
    _collcheck_part(GTEST OFF "${reason}")
    return()
  endif()
  _collcheck_part(GTEST ON "${GTest_VERSION}, ${GTest_DIR}")
endfunction()

function(_collcheck_detect_benchmark)
  find_package(benchmark QUIET)
  if(NOT benchmark_FOUND OR NOT TARGET benchmark::benchmark)
    _collcheck_install_hint(reason libbenchmark-dev)
    _collcheck_part(BENCHMARK OFF "${reason}")
    return()
  endif()
  _collcheck_part(BENCHMARK ON "${benchmark_VERSION}, ${benchmark_DIR}")
endfunction()

# nlohmann-json writes the JSON report (harness/report.cc); ordered_json needs 3.9.
function(_collcheck_require_nlohmann_json)
  find_package(nlohmann_json 3.9 CONFIG QUIET)
  if(NOT nlohmann_json_FOUND OR NOT TARGET nlohmann_json::nlohmann_json)
    message(FATAL_ERROR "collcheck needs nlohmann-json 3.9 or later: install nlohmann-json3-dev "
      "(ci/install-deps), or set nlohmann_json_DIR")
  endif()
  set(COLLCHECK_NLOHMANN_JSON_REASON "${nlohmann_json_VERSION}, ${nlohmann_json_DIR}" PARENT_SCOPE)
endfunction()

# pugixml reads MSCCL's XML algorithm files (impls/schedule/msccl_xml.cc).
function(_collcheck_require_pugixml)
  find_package(pugixml CONFIG QUIET)
  if(NOT pugixml_FOUND OR NOT TARGET pugixml::pugixml)
    message(FATAL_ERROR "collcheck needs pugixml: install libpugixml-dev (ci/install-deps), or set pugixml_DIR")
  endif()
  set(COLLCHECK_PUGIXML_REASON "${pugixml_VERSION}, ${pugixml_DIR}" PARENT_SCOPE)
endfunction()

# The name a person reads for each part, in the summary and in `collcheck version`.
set(COLLCHECK_CUDA_TITLE "CUDA")
set(COLLCHECK_CUDA_HEADERS_TITLE "CUDA headers")
set(COLLCHECK_NCCL_TITLE "NCCL")
set(COLLCHECK_MPI_TITLE "MPI")
set(COLLCHECK_GLOO_TITLE "Gloo")
set(COLLCHECK_IBVERBS_TITLE "libibverbs")
set(COLLCHECK_RAPIDCHECK_TITLE "RapidCheck")
set(COLLCHECK_GTEST_TITLE "GoogleTest")
set(COLLCHECK_BENCHMARK_TITLE "Google Benchmark")

function(_collcheck_print_summary)
  message(STATUS "collcheck required parts:")
  message(STATUS "  nlohmann-json     required  ${COLLCHECK_NLOHMANN_JSON_REASON}")
  message(STATUS "  pugixml           required  ${COLLCHECK_PUGIXML_REASON}")
  message(STATUS "collcheck optional parts:")
  foreach(part IN LISTS COLLCHECK_PARTS)
    set(title "${COLLCHECK_${part}_TITLE}")
    string(LENGTH "${title}" length)
    math(EXPR padding "18 - ${length}")
    string(REPEAT " " ${padding} spaces)
    if(COLLCHECK_HAVE_${part})
      set(state "enabled ")
    else()
      set(state "disabled")
    endif()
    message(STATUS "  ${title}${spaces}${state}  ${COLLCHECK_${part}_REASON}")
  endforeach()
endfunction()

# Order matters: CUDA_HEADERS uses CUDA's toolkit paths, NCCL needs CUDA's result.
_collcheck_detect_cuda()
_collcheck_detect_cuda_headers()
_collcheck_detect_nccl()
_collcheck_detect_mpi()
_collcheck_detect_gloo()
_collcheck_detect_ibverbs()
_collcheck_detect_rapidcheck()
_collcheck_detect_gtest()
_collcheck_detect_benchmark()
_collcheck_require_nlohmann_json()
_collcheck_require_pugixml()
_collcheck_print_summary()
