# Run by CTest: the fixture's setup and its checks of an example's --checkpoint / --resume
# (examples/mnist, examples/transformer).
#
#   cmake -DMODE=full -DSAVE=<command;...> -DCOMMAND=<command;...> -DOUTPUT=<file>
#         -P meshppResumeCheck.cmake
#     runs SAVE (training that ends with saving the checkpoint) and COMMAND, the uninterrupted
#     training to the end, and keeps COMMAND's output in OUTPUT; SAVE's losses must be the
#     first of COMMAND's
#   cmake -DMODE=resume -DCHECKPOINT=<file> -DCOPY=<file> -DCOMMAND=<command;...>
#         -DOUTPUT=<file> -DCOUNT=<n> -P meshppResumeCheck.cmake
#     copies CHECKPOINT to COPY (the command resumes from COPY and saves there, so the
#     checks do not change each other's start), resumes, and checks that its losses are the
#     last COUNT of the uninterrupted run's, to 1e-4 relative
include(${CMAKE_CURRENT_LIST_DIR}/meshppExampleOutput.cmake)

if(MODE STREQUAL "full")
  meshpp_run(SAVE example)
  meshpp_run(COMMAND example)
  file(WRITE ${OUTPUT} "${COMMAND_output}")
  meshpp_losses_of(saved "${SAVE_output}")
  meshpp_losses_of(all "${COMMAND_output}")
  list(LENGTH saved n)
  list(SUBLIST all 0 ${n} first)
  if(NOT saved STREQUAL first)
    message(FATAL_ERROR "the run that saved and the uninterrupted run differ before the save")
  endif()
  return()
endif()

file(COPY_FILE ${CHECKPOINT} ${COPY})
meshpp_run(COMMAND example)
file(READ ${OUTPUT} full)
meshpp_losses_of(all "${full}")
meshpp_losses_of(got "${COMMAND_output}")
list(LENGTH all n)
list(LENGTH got m)
if(NOT m EQUAL COUNT OR n LESS COUNT)
  message(FATAL_ERROR "expected ${COUNT} losses after resuming, and at least as many in the "
    "uninterrupted run; got ${m} and ${n}:\n${COMMAND_output}")
endif()
math(EXPR first "${n} - ${COUNT}")
list(SUBLIST all ${first} ${COUNT} want)
meshpp_losses_agree("${want}" "${got}")
message(STATUS "the ${losses_count} losses after resuming equal the uninterrupted run's; largest difference ${losses_worst}e-9")
