cmake_minimum_required(VERSION 3.25)
# The examples' command-line convention (examples/cli.hpp, docs/training.md), checked for one
# example run under mpiexec: cmake -DCOMMAND=<mpiexec line> -DPROGRAM=<name> -P this file.
# The command line ends with the program; this script appends the arguments.
#  1. --help exits 0, prints the usage once, and each flag's line in it gives a default;
#     --key=value is read as --key value (the first flag with a value, given its default back).
#  2. an unknown flag exits 2 with exactly one line on stderr (rank 0's), naming the program
#     and the flag, and nothing on stdout.
# Open MPI's mpiexec adds its own note on a non-zero exit status; the test's environment sets
# OMPI_MCA_orte_execute_quiet=1 (mpiexec -q) to leave only the program's line.
foreach(var COMMAND PROGRAM)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "meshppExampleCli.cmake needs -D${var}=...")
  endif()
endforeach()

execute_process(COMMAND ${COMMAND} --help RESULT_VARIABLE rc OUTPUT_VARIABLE out
  ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${PROGRAM} --help exited ${rc}, not 0\n${out}\n${err}")
endif()
string(REGEX MATCHALL "usage: " usages "${out}")
list(LENGTH usages n)
if(NOT n EQUAL 1)
  message(FATAL_ERROR "${PROGRAM} --help printed the usage ${n} times, not once\n${out}")
endif()
if(NOT out MATCHES "usage: ${PROGRAM} ")
  message(FATAL_ERROR "${PROGRAM} --help does not name the program\n${out}")
endif()
string(REPLACE "\n" ";" lines "${out}")
set(flags 0)
set(valued "")
foreach(line IN LISTS lines)
  if(line MATCHES "^  --?[a-z]")
    if(line MATCHES "^  -h, --help ")
      continue()
    endif()
    math(EXPR flags "${flags} + 1")
    if(NOT line MATCHES "\\(default: [^)]*\\)$")
      message(FATAL_ERROR "${PROGRAM} --help: a flag without its default:\n${line}")
    endif()
    # the first flag that takes a value and whose default is a plain word
    if(valued STREQUAL "" AND line MATCHES "^  (--[a-z0-9-]+) [^ ]+ .*\\(default: ([^ ()]+)\\)$")
      set(valued "${CMAKE_MATCH_1}=${CMAKE_MATCH_2}")
    endif()
  endif()
endforeach()
if(NOT out MATCHES "\n  -h, --help ")
  message(FATAL_ERROR "${PROGRAM} --help does not list --help\n${out}")
endif()
message(STATUS "${PROGRAM} --help: ${flags} flags, each with its default")

if(NOT valued STREQUAL "" AND NOT valued MATCHES "=none$")
  # --key=default --help: the value is read (a bad one would exit 2 before --help)
  execute_process(COMMAND ${COMMAND} ${valued} --help RESULT_VARIABLE rc OUTPUT_VARIABLE out
    ERROR_VARIABLE err)
  if(NOT rc EQUAL 0 OR NOT out MATCHES "usage: ${PROGRAM} ")
    message(FATAL_ERROR "${PROGRAM} ${valued} --help exited ${rc}\n${out}\n${err}")
  endif()
  message(STATUS "${PROGRAM} ${valued} --help: read")
endif()

execute_process(COMMAND ${COMMAND} --no-such-flag RESULT_VARIABLE rc OUTPUT_VARIABLE out
  ERROR_VARIABLE err)
if(NOT rc EQUAL 2)
  message(FATAL_ERROR "${PROGRAM} --no-such-flag exited ${rc}, not 2\n${out}\n${err}")
endif()
if(NOT out STREQUAL "")
  message(FATAL_ERROR "${PROGRAM} --no-such-flag printed on stdout:\n${out}")
endif()
if(NOT err MATCHES "^${PROGRAM}: [^\n]*--no-such-flag[^\n]*\n$")
  message(FATAL_ERROR
    "${PROGRAM} --no-such-flag: expected one line on stderr naming the program and the flag, "
    "got:\n${err}")
endif()
message(STATUS "${PROGRAM} --no-such-flag: exit 2, one line: ${err}")
