# consumer/pkg_config: project/main.cpp built with nothing but meshpp.pc, as a user without
# CMake would (c++ main.cpp $(pkg-config --cflags --libs meshpp)), against meshpp installed by
# consumer/install, and run on 2 ranks. Also checks that pkg-config's version of meshpp is the
# project's and the one the installed meshpp/version.hpp compiles in (main.cpp prints it).
#   cmake -DPKG_CONFIG=<pkg-config> -DPC_DIR=<prefix>/share/pkgconfig -DCXX=<c++ compiler>
#         -DSOURCE=<main.cpp> -DWORK=<build dir> -DVERSION=<project version>
#         -DMPIEXEC=<mpiexec> -DNUMPROC_FLAG=<-n> -P pkg_config.cmake
cmake_minimum_required(VERSION 3.25)
foreach(var PC_DIR CXX SOURCE WORK VERSION MPIEXEC NUMPROC_FLAG)
  if(NOT DEFINED ${var} OR "${${var}}" STREQUAL "")
    message(FATAL_ERROR "consumer/pkg_config: pass -D${var}=...")
  endif()
endforeach()
if(NOT PKG_CONFIG)
  message(FATAL_ERROR "consumer/pkg_config: pkg-config not found (.ci/deps installs pkgconf)")
endif()

# the installed meshpp.pc first, then whatever the environment names (the dependencies'
# modules are on pkg-config's default path)
if(DEFINED ENV{PKG_CONFIG_PATH} AND NOT "$ENV{PKG_CONFIG_PATH}" STREQUAL "")
  set(ENV{PKG_CONFIG_PATH} "${PC_DIR}:$ENV{PKG_CONFIG_PATH}")
else()
  set(ENV{PKG_CONFIG_PATH} "${PC_DIR}")
endif()

# run(<what> <out var> COMMAND ...): runs the command; stops the test with its output if it fails
function(run what out)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE stdout
                  ERROR_VARIABLE stderr OUTPUT_STRIP_TRAILING_WHITESPACE)
  list(JOIN ARGN " " line)
  message(STATUS "${line}")
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "consumer/pkg_config: ${what} failed (${rc}):\n${stdout}\n${stderr}")
  endif()
  set(${out} "${stdout}" PARENT_SCOPE)
endfunction()

run("pkg-config --modversion" version ${PKG_CONFIG} --modversion meshpp)
if(NOT version STREQUAL VERSION)
  message(FATAL_ERROR "consumer/pkg_config: meshpp.pc says version ${version}, the project "
                      "${VERSION}")
endif()

run("pkg-config --cflags --libs" flags ${PKG_CONFIG} --cflags --libs meshpp)
separate_arguments(flags UNIX_COMMAND "${flags}")
file(MAKE_DIRECTORY "${WORK}")
set(program "${WORK}/consumer")
file(REMOVE "${program}")
run("the compile" ignored ${CXX} ${SOURCE} -o ${program} ${flags})

run("the program on 2 ranks" output ${MPIEXEC} ${NUMPROC_FLAG} 2 ${program})
message(STATUS "${output}")
if(NOT output MATCHES "meshpp ${VERSION}(\n|$)" OR NOT output MATCHES "rank 1: ")
  message(FATAL_ERROR "consumer/pkg_config: expected \"meshpp ${VERSION}\" from rank 0 and a "
                      "line from rank 1, got:\n${output}")
endif()
message(STATUS "consumer/pkg_config: built with meshpp.pc ${version} alone, ran on 2 ranks")
