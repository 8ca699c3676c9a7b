# Run by CTest:
#   cmake -DREFERENCE=<command;...> -DCOMMAND=<command;...> -P meshppTransformerCheck.cmake
#   cmake -DCOMMAND=<command;...> -DMAXIMUM_BPC=<milli-bits> -P meshppTransformerCheck.cmake
#
# With REFERENCE: runs examples/transformer --json twice, the reference (one rank) and the
# command under test (a layout at some number of ranks), with the same windows and initial
# values, and checks that every logged loss agrees to 1e-4 relative and that the generated
# sample is the same text: layouts change performance, never results.
# With MAXIMUM_BPC: runs the command and checks that its validation bits per character
# ("val_bpc") is at most MAXIMUM_BPC / 1000.
include(${CMAKE_CURRENT_LIST_DIR}/meshppExampleOutput.cmake)

# sample_of(<var> <output>): the "sample" string of the final JSON line
function(sample_of var output)
  string(REGEX MATCH "\"sample\": \"([^\"]*)\"" _ "${output}")
  set(${var} "${CMAKE_MATCH_1}" PARENT_SCOPE)
endfunction()

if(DEFINED MAXIMUM_BPC)
  meshpp_run(COMMAND transformer)
  string(REGEX MATCH "\"val_bpc\": ([0-9]+)\\.([0-9][0-9][0-9])" _ "${COMMAND_output}")
  if(NOT CMAKE_MATCH_0)
    message(FATAL_ERROR "no val_bpc in the output:\n${COMMAND_output}")
  endif()
  meshpp_fixed(milli "${CMAKE_MATCH_1}" "${CMAKE_MATCH_2}" 3)
  if(milli GREATER MAXIMUM_BPC)
    message(FATAL_ERROR "validation ${milli} milli-bits per character, more than ${MAXIMUM_BPC}")
  endif()
  message(STATUS "validation ${milli} milli-bits per character (at most ${MAXIMUM_BPC})")
  return()
endif()

meshpp_run(REFERENCE transformer)
meshpp_run(COMMAND transformer)
meshpp_losses_of(want_losses "${REFERENCE_output}")
meshpp_losses_of(got_losses "${COMMAND_output}")
meshpp_losses_agree("${want_losses}" "${got_losses}")
sample_of(want_sample "${REFERENCE_output}")
sample_of(got_sample "${COMMAND_output}")
if(want_sample STREQUAL "")
  message(FATAL_ERROR "no sample in the reference's output:\n${REFERENCE_output}")
endif()
if(NOT got_sample STREQUAL want_sample)
  message(FATAL_ERROR "the samples differ:\n  reference: ${want_sample}\n  this run:  ${got_sample}")
endif()
message(STATUS "${losses_count} losses agree with the reference (largest difference ${losses_worst}e-9); the samples are the same: ${got_sample}")
