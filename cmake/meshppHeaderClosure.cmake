# meshppHeaderClosure.cmake — what a meshpp header includes, followed through meshpp's own
# headers (included by tests/CMakeLists.txt for the headers_compile_alone test).
#
#   meshpp_header_closure(<out-var> <header> <include-dir>)
#
# <out-var>: every header that <header> (a path under <include-dir>, such as
# meshpp/ops/einsum.hpp) includes unconditionally, itself or through the meshpp headers it
# includes, as written in the #include lines (meshpp/core/tensor.hpp, xtensor/xtensor.hpp,
# mpi.h). An #include between #if/#ifdef and its #endif is not followed: it may not be seen.
# Read from the #include lines alone, without the compiler, so it costs nothing at build time;
# every header read is a configure dependency, so editing one configures again (about 8 s).
# What makes the precompiled order safe below: meshpp's headers include no one another in a
# cycle and put their #include lines before their code (a header that used a name before
# including it would be caught by its own alone-compile, whose closure is a subset).
#
# Why: each header's alone-compile spends most of its time parsing xtensor and Boost.MPI.
# Where a header's closure includes both anyway, precompiling them first changes only the
# order in which the same headers are read, not whether the header includes what it uses; a
# header whose closure lacks one of them is compiled from scratch, so a missing include is
# still an error.
include_guard(GLOBAL)

# meshpp_header_direct_includes(<out-var> <file>): its unconditional #include lines' targets
function(meshpp_header_direct_includes out file)
  # an edit of the file configures again: its includes may have changed, and so its group
  set_property(DIRECTORY ${CMAKE_SOURCE_DIR} APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${file})
  file(STRINGS ${file} lines REGEX "^[ \t]*#[ \t]*(if|endif|include)")
  set(depth 0)
  set(found "")
  foreach(line IN LISTS lines)
    if(line MATCHES "^[ \t]*#[ \t]*if")
      math(EXPR depth "${depth} + 1")
    elseif(line MATCHES "^[ \t]*#[ \t]*endif")
      math(EXPR depth "${depth} - 1")
    elseif(depth EQUAL 0 AND line MATCHES "^[ \t]*#[ \t]*include[ \t]*[<\"]([^>\"]+)[>\"]")
      list(APPEND found ${CMAKE_MATCH_1})
    endif()
  endforeach()
  set(${out} ${found} PARENT_SCOPE)
endfunction()

function(meshpp_header_closure out header root)
  string(MAKE_C_IDENTIFIER ${header} id)
  get_property(known GLOBAL PROPERTY meshpp_closure_known_${id} SET)
  if(known)
    get_property(closure GLOBAL PROPERTY meshpp_closure_${id})
    set(${out} ${closure} PARENT_SCOPE)
    return()
  endif()
  set_property(GLOBAL PROPERTY meshpp_closure_known_${id} TRUE)  # a cycle ends here
  set(closure "")
  meshpp_header_direct_includes(direct ${root}/${header})
  foreach(included IN LISTS direct)
    list(APPEND closure ${included})
    if(included MATCHES "^meshpp/" AND EXISTS ${root}/${included})
      meshpp_header_closure(more ${included} ${root})
      list(APPEND closure ${more})
    endif()
  endforeach()
  list(REMOVE_DUPLICATES closure)
  set_property(GLOBAL PROPERTY meshpp_closure_${id} ${closure})
  set(${out} ${closure} PARENT_SCOPE)
endfunction()
