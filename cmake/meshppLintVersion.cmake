# meshppLintVersion.cmake — meshpp/version.hpp says the version CMakeLists.txt's
# project(meshpp VERSION ...) says, run as the ctest `lint/version`
# (cmake -DROOT=<repo> -P cmake/meshppLintVersion.cmake).
#
# The header is checked in, not generated, so that it is the same from the source tree, from
# add_subdirectory and installed; this check keeps it in step: its MESHPP_VERSION_MAJOR, _MINOR
# and _PATCH must be the project's three numbers (minor and patch below 100, for
# MESHPP_VERSION's major * 10000 + minor * 100 + patch) and MESHPP_VERSION_STRING their text.
# The package version file and meshpp.pc take the project's version, so they agree too.
cmake_minimum_required(VERSION 3.25)
if(NOT ROOT)
  message(FATAL_ERROR "meshppLintVersion: pass -DROOT=<the repo>")
endif()

file(READ "${ROOT}/CMakeLists.txt" lists)
if(NOT lists MATCHES "project\\(meshpp[ \t\r\n]+VERSION[ \t\r\n]+([0-9]+)\\.([0-9]+)\\.([0-9]+)[ \t\r\n)]")
  message(FATAL_ERROR "meshpp version: no project(meshpp VERSION <major>.<minor>.<patch> ...) "
                      "in ${ROOT}/CMakeLists.txt")
endif()
set(project_major ${CMAKE_MATCH_1})
set(project_minor ${CMAKE_MATCH_2})
set(project_patch ${CMAKE_MATCH_3})
set(project_version "${project_major}.${project_minor}.${project_patch}")

set(header "include/meshpp/version.hpp")
file(READ "${ROOT}/${header}" text)
set(problems "")
foreach(part MAJOR MINOR PATCH)
  string(TOLOWER ${part} lower)
  if(NOT text MATCHES "\n#define MESHPP_VERSION_${part} ([0-9]+)\n")
    string(APPEND problems "  ${header} defines no MESHPP_VERSION_${part} <number>\n")
  elseif(NOT CMAKE_MATCH_1 EQUAL project_${lower})
    string(APPEND problems "  ${header}: MESHPP_VERSION_${part} is ${CMAKE_MATCH_1}, "
                           "the project's ${lower} version ${project_${lower}}\n")
  endif()
endforeach()
if(NOT text MATCHES "\n#define MESHPP_VERSION_STRING \"([^\"]*)\"\n")
  string(APPEND problems "  ${header} defines no MESHPP_VERSION_STRING \"<version>\"\n")
elseif(NOT CMAKE_MATCH_1 STREQUAL project_version)
  string(APPEND problems "  ${header}: MESHPP_VERSION_STRING is \"${CMAKE_MATCH_1}\", the "
                         "project's version ${project_version}\n")
endif()
if(NOT text MATCHES "\n#define MESHPP_VERSION ")
  string(APPEND problems "  ${header} defines no MESHPP_VERSION\n")
endif()
foreach(part minor patch)
  if(project_${part} GREATER 99)
    string(APPEND problems "  the ${part} version ${project_${part}} does not fit "
                           "MESHPP_VERSION's two digits\n")
  endif()
endforeach()

if(problems)
  message(FATAL_ERROR "meshpp version: ${header} and project(meshpp VERSION "
                      "${project_version}) in CMakeLists.txt disagree:\n${problems}")
endif()
message(STATUS "meshpp version: ${header} and CMakeLists.txt both say ${project_version}")
