# meshppLintLayers.cmake — the layers of include/meshpp, run as the ctest `lint/layers`
# (cmake -DROOT=<repo> -P cmake/meshppLintLayers.cmake).
#
# Each folder of include/meshpp is one layer; a header may include headers of its own layer
# and of the layers below it, never one above. Lowest first:
#
#   core      dims, shapes, layouts, the mesh, tensors, the checked MPI path, counters
#   comm      collectives as policy templates over a mesh's sub-communicators
#   expr      component-wise expressions and the one fused traversal that evaluates them
#   ops       reductions, einsum, relayout, reshape, slicing, softmax, embedding
#   autodiff  traced tensors, the tape and the gradients of the ops
#   nn optim  layers and optimizers (side by side: neither includes the other)
#   io        data sets, text corpora, checkpoints and layout drawings
#   plan      plans, cost models and layout search: what a model will cost before it runs
#
# A folder's detail/ subfolder belongs to its layer: internal helpers, not public names. A header
# includes only its own layer's detail/ headers, never another layer's: a helper that layers
# above use is no detail of its layer, and lives in a header outside detail/ (its names may
# stay in namespace meshpp::detail), so that what a layer offers the others is in its folder.
# meshpp.hpp, the umbrella, stands above all of them; no header includes it. version.hpp, the
# version's macros, includes nothing and stands below them all: any header may include it.
cmake_minimum_required(VERSION 3.20)
if(NOT ROOT)
  message(FATAL_ERROR "meshppLintLayers: pass -DROOT=<the repo>")
endif()

set(rank_core 0)
set(rank_comm 1)
set(rank_expr 2)
set(rank_ops 3)
set(rank_autodiff 4)
set(rank_nn 5)
set(rank_optim 5)
set(rank_io 6)
set(rank_plan 7)

file(GLOB_RECURSE headers RELATIVE "${ROOT}/include/meshpp" "${ROOT}/include/meshpp/*.hpp")
set(problems "")
set(edges 0)
foreach(header IN LISTS headers)
  if(NOT header MATCHES "/")
    continue()  # meshpp.hpp, version.hpp
  endif()
  string(REGEX MATCH "^[^/]+" layer "${header}")
  if(NOT DEFINED rank_${layer})
    string(APPEND problems "  include/meshpp/${header}: folder '${layer}' is in no layer "
                           "(add it to cmake/meshppLintLayers.cmake)\n")
    continue()
  endif()
  file(STRINGS "${ROOT}/include/meshpp/${header}" includes REGEX "^#include [\"<]meshpp/")
  foreach(line IN LISTS includes)
    string(REGEX REPLACE "^#include [\"<]meshpp/([^\">]+)[\">].*" "\\1" target "${line}")
    math(EXPR edges "${edges} + 1")
    if(target STREQUAL "version.hpp")
      continue()
    endif()
    if(NOT target MATCHES "/")
      string(APPEND problems "  include/meshpp/${header} includes the umbrella ${target}\n")
      continue()
    endif()
    string(REGEX MATCH "^[^/]+" target_layer "${target}")
    if(target_layer STREQUAL layer)
      continue()
    endif()
    if(target MATCHES "^[^/]+/detail/")
      string(APPEND problems "  include/meshpp/${header} (${layer}) includes ${target}, a detail/"
                             " header of another layer (${target_layer})\n")
      continue()
    endif()
    if(NOT DEFINED rank_${target_layer})
      string(APPEND problems "  include/meshpp/${header} includes ${target}: no such layer\n")
    elseif(NOT rank_${target_layer} LESS rank_${layer})
      string(APPEND problems "  include/meshpp/${header} (${layer}) includes ${target}"
                             " (${target_layer}), a layer not below it\n")
    endif()
  endforeach()
endforeach()

list(LENGTH headers count)
if(problems)
  message(FATAL_ERROR "meshpp layering: headers that include a higher layer or another "
                      "layer's detail/:\n${problems}")
endif()
message(STATUS "meshpp layering: ${count} headers, ${edges} includes of meshpp headers, "
               "none upward, none into another layer's detail/")
