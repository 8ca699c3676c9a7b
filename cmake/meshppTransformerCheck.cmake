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
# The losses are printed with 9 decimals; CMake has only integer arithmetic, so each becomes
# an integer count of 1e-9.
function(run_transformer which)
  execute_process(COMMAND ${${which}} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "transformer failed (${rc}): ${${which}}\n${out}\n${err}")
  endif()
  set(${which}_output "${out}" PARENT_SCOPE)
endfunction()

# losses_of(<var> <output>): the logged losses, in 1e-9 units
function(losses_of var output)
  string(REGEX MATCHALL "\"loss\": [0-9]+\\.[0-9]+" found "${output}")
  set(losses "")
  foreach(item IN LISTS found)
    string(REGEX MATCH "([0-9]+)\\.([0-9]+)" _ "${item}")
    set(whole ${CMAKE_MATCH_1})
    string(REGEX REPLACE "^0+([0-9])" "\\1" frac "${CMAKE_MATCH_2}")
    math(EXPR nano "${whole} * 1000000000 + ${frac}")
    list(APPEND losses ${nano})
  endforeach()
  set(${var} "${losses}" PARENT_SCOPE)
endfunction()

# sample_of(<var> <output>): the "sample" string of the final JSON line
function(sample_of var output)
  string(REGEX MATCH "\"sample\": \"([^\"]*)\"" _ "${output}")
  set(${var} "${CMAKE_MATCH_1}" PARENT_SCOPE)
endfunction()

if(DEFINED MAXIMUM_BPC)
  run_transformer(COMMAND)
  string(REGEX MATCH "\"val_bpc\": ([0-9]+)\\.([0-9][0-9][0-9])" _ "${COMMAND_output}")
  if(NOT CMAKE_MATCH_0)
    message(FATAL_ERROR "no val_bpc in the output:\n${COMMAND_output}")
  endif()
  # keep the whole part before the REGEX REPLACE below overwrites CMAKE_MATCH_1
  set(whole "${CMAKE_MATCH_1}")
  string(REGEX REPLACE "^0+([0-9])" "\\1" frac "${CMAKE_MATCH_2}")
  math(EXPR milli "${whole} * 1000 + ${frac}")
  if(milli GREATER MAXIMUM_BPC)
    message(FATAL_ERROR "validation ${milli} milli-bits per character, more than ${MAXIMUM_BPC}")
  endif()
  message(STATUS "validation ${milli} milli-bits per character (at most ${MAXIMUM_BPC})")
  return()
endif()

run_transformer(REFERENCE)
run_transformer(COMMAND)
losses_of(want_losses "${REFERENCE_output}")
losses_of(got_losses "${COMMAND_output}")
list(LENGTH want_losses n)
list(LENGTH got_losses m)
if(n LESS 50 OR NOT n EQUAL m)
  message(FATAL_ERROR "expected the same number (at least 50) of losses, got ${n} and ${m}")
endif()
math(EXPR last "${n} - 1")
set(worst 0)
foreach(i RANGE ${last})
  list(GET want_losses ${i} want)
  list(GET got_losses ${i} got)
  math(EXPR diff "${got} - ${want}")
  if(diff LESS 0)
    math(EXPR diff "-${diff}")
  endif()
  math(EXPR scaled "${diff} * 10000")  # |got - want| <= 1e-4 |want|
  if(scaled GREATER want)
    math(EXPR step "${i} + 1")
    message(FATAL_ERROR "loss ${step} differs by more than 1e-4 relative: ${got} vs ${want} (1e-9 units)")
  endif()
  if(diff GREATER worst)
    set(worst ${diff})
  endif()
endforeach()
sample_of(want_sample "${REFERENCE_output}")
sample_of(got_sample "${COMMAND_output}")
if(want_sample STREQUAL "")
  message(FATAL_ERROR "no sample in the reference's output:\n${REFERENCE_output}")
endif()
if(NOT got_sample STREQUAL want_sample)
  message(FATAL_ERROR "the samples differ:\n  reference: ${want_sample}\n  this run:  ${got_sample}")
endif()
message(STATUS "${n} losses agree with the reference (largest difference ${worst}e-9); the samples are the same: ${got_sample}")
