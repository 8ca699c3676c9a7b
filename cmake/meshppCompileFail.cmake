# Run by CTest as: cmake -DCOMPILE=<compiler;args...> -DSOURCE=... -DMODE=fail|pass -P meshppCompileFail.cmake
#
# MODE=fail: COMPILE (the compiler on SOURCE, syntax only) must fail, and every
#            `// expect-error: <regex>` line at the top of SOURCE must match the compiler's
#            output (a failure for another reason, such as a typo in the case, does not pass).
#            The regexes match g++ and clang alike: g++ prints `shape<batch> >` where clang
#            prints `shape<batch>>`, so a closing `> >` is written `> ?>`.
# MODE=pass: COMPILE (the same file with MESHPP_COMPILE_FAIL_TWIN defined) must succeed, so
#            a case cannot pass because the harness is broken. With -DTWINS=<a.cpp;b.cpp...>,
#            SOURCE is first written as one translation unit of those files' twins (below).
foreach(var COMPILE SOURCE MODE)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "meshppCompileFail.cmake: ${var} is not set")
  endif()
endforeach()

# TWINS=<a.cpp;b.cpp...> (MODE=pass): SOURCE is first written as one translation unit of those
# files, each in a namespace of its own (meshppUnitySource.cmake), and COMPILE compiles it
if(DEFINED TWINS)
  if(NOT MODE STREQUAL "pass")
    message(FATAL_ERROR "meshppCompileFail.cmake: TWINS needs MODE=pass")
  endif()
  set(OUTPUT ${SOURCE})
  set(FILES ${TWINS})
  include(${CMAKE_CURRENT_LIST_DIR}/meshppUnitySource.cmake)
endif()

execute_process(
  COMMAND ${COMPILE}
  RESULT_VARIABLE result OUTPUT_VARIABLE out ERROR_VARIABLE out)

if(MODE STREQUAL "pass")
  if(NOT result EQUAL 0)
    if(DEFINED TWINS)
      message(FATAL_ERROR "the twins of ${TWINS} must compile, but their build failed "
                          "(the messages name the case):\n${out}")
    endif()
    message(FATAL_ERROR "the twin of ${SOURCE} must compile, but its build failed:\n${out}")
  endif()
  message(STATUS "the twin compiles")
  return()
endif()

file(STRINGS ${SOURCE} lines REGEX "^// expect-error: ")
if(NOT lines)
  message(FATAL_ERROR "${SOURCE} has no '// expect-error: <regex>' line")
endif()
if(result EQUAL 0)
  message(FATAL_ERROR "${SOURCE} must not compile, but its build succeeded")
endif()
foreach(line IN LISTS lines)
  string(REGEX REPLACE "^// expect-error: " "" regex "${line}")
  if(NOT out MATCHES "${regex}")
    message(FATAL_ERROR "${SOURCE} failed to compile, but not with the expected message\n"
                        "  expected (regex): ${regex}\ncompiler output:\n${out}")
  endif()
  message(STATUS "matched: ${regex}")
endforeach()
