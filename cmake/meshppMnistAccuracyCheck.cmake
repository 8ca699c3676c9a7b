# Run by CTest: cmake -DCOMMAND=<command;...> -DMINIMUM=<accuracy in 1e-4 units> -P meshppMnistAccuracyCheck.cmake
#
# Trains examples/mnist (--json) and checks the final test accuracy it reports against a
# floor (the issue asks for 0.875 on Fashion-MNIST; a published MLP baseline is 0.883).
include(${CMAKE_CURRENT_LIST_DIR}/meshppExampleOutput.cmake)
execute_process(COMMAND ${COMMAND} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "mnist failed (${rc}):\n${out}\n${err}")
endif()
string(REGEX MATCH "\"test_accuracy\": 0\\.([0-9][0-9][0-9][0-9])" _ "${out}")
if(NOT CMAKE_MATCH_1)
  message(FATAL_ERROR "no test_accuracy in the output:\n${out}")
endif()
set(digits ${CMAKE_MATCH_1})
meshpp_fixed(accuracy 0 "${digits}" 4)
string(REGEX MATCH "\"seconds\": ([0-9.]+)" _ "${out}")
message(STATUS "test accuracy 0.${digits} after ${CMAKE_MATCH_1} s of training")
if(accuracy LESS MINIMUM)
  message(FATAL_ERROR "test accuracy 0.${digits} is below 0.${MINIMUM}")
endif()
