# Run by CTest: cmake -DREFERENCE=<command;...> -DCOMMAND=<command;...> -P meshppMnistLossCheck.cmake
#
# Runs examples/mnist --json twice, the reference (one rank) and the command under test (a
# layout at some number of ranks), with the same data order and initial values, and checks
# that every logged loss agrees to 1e-4 relative: layouts change performance, never results.
# The losses are printed with 9 decimals; CMake has only integer arithmetic, so each becomes
# an integer count of 1e-9.
foreach(which REFERENCE COMMAND)
  execute_process(COMMAND ${${which}} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "mnist failed (${rc}): ${${which}}\n${out}\n${err}")
  endif()
  string(REGEX MATCHALL "\"loss\": [0-9]+\\.[0-9]+" found "${out}")
  set(${which}_losses "")
  foreach(item IN LISTS found)
    string(REGEX MATCH "([0-9]+)\\.([0-9]+)" _ "${item}")
    set(whole ${CMAKE_MATCH_1})
    string(REGEX REPLACE "^0+([0-9])" "\\1" frac "${CMAKE_MATCH_2}")
    math(EXPR nano "${whole} * 1000000000 + ${frac}")
    list(APPEND ${which}_losses ${nano})
  endforeach()
endforeach()

list(LENGTH REFERENCE_losses n)
list(LENGTH COMMAND_losses m)
if(n LESS 50 OR NOT n EQUAL m)
  message(FATAL_ERROR "expected the same number (at least 50) of losses, got ${n} and ${m}")
endif()
math(EXPR last "${n} - 1")
set(worst 0)
foreach(i RANGE ${last})
  list(GET REFERENCE_losses ${i} want)
  list(GET COMMAND_losses ${i} got)
  math(EXPR diff "${got} - ${want}")
  if(diff LESS 0)
    math(EXPR diff "-${diff}")
  endif()
  # |got - want| <= 1e-4 |want|
  math(EXPR scaled "${diff} * 10000")
  if(scaled GREATER want)
    math(EXPR step "${i} + 1")
    message(FATAL_ERROR "loss ${step} differs by more than 1e-4 relative: ${got} vs ${want} (1e-9 units)")
  endif()
  if(diff GREATER worst)
    set(worst ${diff})
  endif()
endforeach()
message(STATUS "${n} losses agree with the reference; largest difference ${worst}e-9")
