# meshppLintTests.cmake — the repo's rules as ctests, label lint (included by the top
# CMakeLists.txt with the tests):
#   lint/mpi_calls  every MPI call in include/ checked, no int casts, no Boost.MPI collectives
#   lint/layers     no header includes one from a layer above its own
#   lint/format     every C++ file formatted as .clang-format says   (needs clang-format)
#   lint/diary      no lab notebook in README.md, the guides in docs/ (docs/benchmarks.md aside)
#                   and the comments of include/: no dates, commit hashes, load averages, CPU
#                   family/model numbers or benchmark run letters (history lives in git)
#   lint/version    include/meshpp/version.hpp's version is project(meshpp VERSION ...)'s
#   lint/tidy       clang-tidy's checks of .clang-tidy over two examples that between them
#                   use every layer (MNIST: idx files, dense layers, Adam; the Transformer:
#                   attention, layer norm, dropout, text, checkpoints), include/meshpp's
#                   warnings as errors (needs clang-tidy; about 80 s in .ci/run)
set(lint_root ${PROJECT_SOURCE_DIR})

add_test(NAME lint/mpi_calls
  COMMAND ${CMAKE_COMMAND} -DROOT=${lint_root} -P ${lint_root}/cmake/meshppLintMpi.cmake)
add_test(NAME lint/layers
  COMMAND ${CMAKE_COMMAND} -DROOT=${lint_root} -P ${lint_root}/cmake/meshppLintLayers.cmake)
add_test(NAME lint/diary
  COMMAND ${CMAKE_COMMAND} -DROOT=${lint_root} -P ${lint_root}/cmake/meshppLintDiary.cmake)
add_test(NAME lint/version
  COMMAND ${CMAKE_COMMAND} -DROOT=${lint_root} -P ${lint_root}/cmake/meshppLintVersion.cmake)
set_tests_properties(lint/mpi_calls lint/layers lint/diary lint/version PROPERTIES LABELS lint)

find_program(MESHPP_CLANG_FORMAT NAMES clang-format-14 clang-format)
find_program(MESHPP_CLANG_TIDY NAMES clang-tidy-14 clang-tidy)
foreach(tool MESHPP_CLANG_FORMAT MESHPP_CLANG_TIDY)
  if(NOT ${tool})
    message(WARNING "meshpp: ${tool} not found: its lint test fails (.ci/deps installs it)")
  endif()
endforeach()

add_test(NAME lint/format
  COMMAND ${CMAKE_COMMAND} -DROOT=${lint_root} -DCLANG_FORMAT=${MESHPP_CLANG_FORMAT}
          -P ${lint_root}/cmake/meshppLintFormat.cmake)
set_tests_properties(lint/format PROPERTIES LABELS lint)

if(MESHPP_BUILD_EXAMPLES)
  # the compile commands of the examples, as the build uses them (g++'s flags: clang-tidy
  # reads them with clang's front end)
  set(CMAKE_EXPORT_COMPILE_COMMANDS ON)
  add_test(NAME lint/tidy
    COMMAND ${MESHPP_CLANG_TIDY} --quiet -p ${PROJECT_BINARY_DIR}
            ${lint_root}/examples/mnist/mnist.cpp
            ${lint_root}/examples/transformer/transformer_layouts.cpp)
  set_tests_properties(lint/tidy PROPERTIES LABELS lint COST 80)  # 78 s: started first
endif()
