# Run by CTest: cmake -DKILL=<command;...> -DSURVIVED=<command;...> -P meshppCheckpointKill.cmake
#
# KILL saves a good checkpoint, then starts another save during which one rank kills itself
# with SIGKILL (tests/mpi/io/checkpoint_run.cpp, mode kill): the job must die, after the rank said
# so. SURVIVED must then find the killed save's temporary file and load the good checkpoint
# with its values (mode survived).
execute_process(COMMAND ${KILL} RESULT_VARIABLE killed OUTPUT_VARIABLE out ERROR_VARIABLE err
  TIMEOUT 120)
message(STATUS "the killed job (exit ${killed}):\n${out}")
if(killed EQUAL 0 OR out MATCHES "should have been killed finished")
  message(FATAL_ERROR "the job was not killed during its save:\n${out}\n${err}")
endif()
if(NOT out MATCHES "killing itself after writing")
  message(FATAL_ERROR "the job failed before its second save:\n${out}\n${err}")
endif()
execute_process(COMMAND ${SURVIVED} RESULT_VARIABLE result OUTPUT_VARIABLE out ERROR_VARIABLE err
  TIMEOUT 120)
message(STATUS "${out}")
if(NOT result EQUAL 0)
  message(FATAL_ERROR "the last good checkpoint did not survive:\n${out}\n${err}")
endif()
