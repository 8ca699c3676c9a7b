# meshppLintMpi.cmake — the repo's rules for MPI calls in include/, run as the ctest
# `lint/mpi_calls` (cmake -DROOT=<repo> -P cmake/meshppLintMpi.cmake). Comments are ignored;
# the rules look at whole statements (up to the next ';'), so a call spread over lines counts.
#
#   1. No int narrowing on a call: no statement that calls MPI_<Name>( holds static_cast<int>,
#      (int) or int(. Counts go through detail::as_count, other ints through detail::as_int
#      (core/detail/large_counts.hpp), which check the range.
#   2. One checked path: outside the headers of the checked path itself (`checked_path` below:
#      core/checked.hpp and the three it includes), every statement that calls an MPI routine
#      that communicates or can fail on bad arguments (the list in `communicating` below)
#      is a checked(...) call.
#   3. No Boost.MPI collective or point-to-point call in include/ (boost::mpi::all_reduce,
#      broadcast, all_gather, all_to_all, gather, scatter, reduce, scan; a communicator's
#      barrier, send, recv, isend, irecv, split): their errors are Boost exceptions without the
#      mesh's names, their counts are int, and the debug mode cannot see them.
#
# To see every MPI call the rules cover:  grep -rnE 'MPI_[A-Z][a-z_]+\(' include/
cmake_minimum_required(VERSION 3.20)
if(NOT ROOT)
  message(FATAL_ERROR "meshppLintMpi: pass -DROOT=<the repo>")
endif()

set(communicating
  "Allreduce|Iallreduce|Allgather|Allgatherv|Iallgather|Alltoall|Alltoallv|Alltoallw|Ialltoall"
  "|Reduce_scatter_block|Reduce_scatter|Reduce|Ireduce|Bcast|Ibcast|Gather|Gatherv|Scatter"
  "|Scatterv|Sendrecv|Send|Recv|Isend|Irecv|Barrier|Comm_split|Comm_dup|Comm_create"
  "|Comm_set_errhandler|Waitall|Wait|Test|Testall|Type_contiguous|Type_create_resized"
  "|Type_commit|Type_get_extent")
string(JOIN "" communicating ${communicating})
set(checked_path
  include/meshpp/core/checked.hpp include/meshpp/core/detail/checked_call.hpp
  include/meshpp/core/detail/large_counts.hpp include/meshpp/core/detail/collective_agreement.hpp)

file(GLOB_RECURSE headers "${ROOT}/include/*.hpp")
set(problems "")
set(calls 0)
foreach(header ${headers})
  file(RELATIVE_PATH name "${ROOT}" "${header}")
  file(READ "${header}" text)
  string(REGEX REPLACE "//[^\n]*" "" text "${text}")  # comments out
  # brackets would stop CMake splitting the list below; semicolons end statements
  string(REPLACE "[" "(" text "${text}")
  string(REPLACE "]" ")" text "${text}")
  foreach(statement IN LISTS text)  # a CMake list splits at ';': one C++ statement each
    if(statement MATCHES "boost::mpi::(all_reduce|broadcast|all_gather|all_to_all|gather|scatter|reduce|scan)[ (<]"
       OR statement MATCHES "\\.(barrier|send|recv|isend|irecv|split) *\\(")
      string(STRIP "${statement}" s)
      string(APPEND problems "\n  ${name}: a Boost.MPI call (rule 3): ${s}")
    endif()
    if(NOT statement MATCHES "MPI_[A-Z][a-z_]+ *\\(")
      continue()
    endif()
    string(REGEX REPLACE "[ \n]+" " " s "${statement}")
    string(STRIP "${s}" s)
    if(s MATCHES "static_cast<int>|\\(int\\)|[^a-z_]int\\(")
      string(APPEND problems "\n  ${name}: an int cast on an MPI call (rule 1): ${s}")
    endif()
    if(s MATCHES "MPI_(${communicating}) *\\(")
      math(EXPR calls "${calls} + 1")
      if(NOT name IN_LIST checked_path AND NOT s MATCHES "checked *\\(")
        string(APPEND problems "\n  ${name}: an MPI call outside checked() (rule 2): ${s}")
      endif()
    endif()
  endforeach()
endforeach()

if(problems)
  message(FATAL_ERROR "meshpp lint: MPI calls that break the rules in cmake/meshppLintMpi.cmake:${problems}")
endif()
message(STATUS "meshpp lint: ${calls} communicating MPI call sites in include/, all checked, none with an int cast")
