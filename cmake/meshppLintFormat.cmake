# meshppLintFormat.cmake — every C++ file of the repo is formatted as .clang-format says, run
# as the ctest lint/format (cmake -DROOT=<repo> -DCLANG_FORMAT=<program> -P this file).
# To format a file in place: clang-format -i <file>
cmake_minimum_required(VERSION 3.20)
if(NOT ROOT OR NOT CLANG_FORMAT)
  message(FATAL_ERROR "meshppLintFormat: pass -DROOT=<the repo> -DCLANG_FORMAT=<clang-format>")
endif()
set(files "")
foreach(folder include src tests examples bench)
  file(GLOB_RECURSE found "${ROOT}/${folder}/*.hpp" "${ROOT}/${folder}/*.cpp")
  list(APPEND files ${found})
endforeach()
list(LENGTH files count)
execute_process(COMMAND "${CLANG_FORMAT}" --dry-run --Werror ${files}
                RESULT_VARIABLE rc ERROR_VARIABLE out)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "meshpp: files not formatted as .clang-format says "
                      "(clang-format -i <file> fixes them):\n${out}")
endif()
message(STATUS "meshpp: ${count} files formatted as .clang-format says")
