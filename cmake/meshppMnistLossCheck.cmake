# Run by CTest: cmake -DREFERENCE=<command;...> -DCOMMAND=<command;...> -P meshppMnistLossCheck.cmake
#
# Runs examples/mnist --json twice, the reference (one rank) and the command under test (a
# layout at some number of ranks), with the same data order and initial values, and checks
# that every logged loss agrees to 1e-4 relative: layouts change performance, never results.
include(${CMAKE_CURRENT_LIST_DIR}/meshppExampleOutput.cmake)

meshpp_run(REFERENCE mnist)
meshpp_run(COMMAND mnist)
meshpp_losses_of(want "${REFERENCE_output}")
meshpp_losses_of(got "${COMMAND_output}")
meshpp_losses_agree("${want}" "${got}")
message(STATUS "${losses_count} losses agree with the reference; largest difference ${losses_worst}e-9")
