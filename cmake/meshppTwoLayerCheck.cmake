# Run by CTest: cmake -DCOMMAND=<mpiexec line;...> -P meshppTwoLayerCheck.cmake
#
# Runs examples/two_layer --json and checks every line against docs/table1.md,
# computing the formulas here, independently of the C++ code:
#   []                          0                                      forward 0
#   [batch:all]                 2·d_io·d_h + d_h                        forward 0
#   [hidden:all]                2·b·d_io                                forward b·d_io
#   [batch:rows, hidden:cols]   2·b·d_io/r + 2·d_io·d_h/c + d_h/c       forward b·d_io/r
#   + io:planes                 2·b·d_h/(r·c) + 2·b·d_io/(r·p) + 2·d_io·d_h/(c·p) + d_h/c
#                               forward b·d_h/(r·c) + b·d_io/(r·p)
# each term counted only where its sum runs over a group of more than one rank (a group of one
# rank moves and counts nothing: core/counters.hpp), and that every result agrees with the
# single-rank reference (max_abs_diff <= 1e-3).
# quoted arguments are strings, not variable names (CMP0054): "all" names a mesh dim here
cmake_minimum_required(VERSION 3.20)
execute_process(COMMAND ${COMMAND} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "two_layer failed (${rc}):\n${out}\n${err}")
endif()
# Layout and mesh texts hold ';', CMake's list separator: carry them as '|' until parsed.
string(REPLACE ";" "|" out "${out}")
string(REGEX MATCHALL "{[^\n]*}" lines "${out}")
list(LENGTH lines count)
if(NOT count EQUAL 5)
  message(FATAL_ERROR "expected 5 JSON lines (one per layout), got ${count}:\n${out}")
endif()

foreach(line IN LISTS lines)
  foreach(field layout mesh b d_io d_h values_allreduced values_allreduced_forward max_abs_diff)
    string(JSON ${field} GET "${line}" ${field})
  endforeach()
  # mesh sizes by name, e.g. "rows:2;cols:2"
  set(r 1)
  set(c 1)
  set(p 1)
  set(all 1)
  string(REPLACE "|" ";" mesh "${mesh}")
  foreach(axis IN LISTS mesh)  # "rows:2;cols:2" is a CMake list
    string(REGEX MATCH "^([a-z]+):([0-9]+)$" _ "${axis}")
    set(name ${CMAKE_MATCH_1})
    set(size ${CMAKE_MATCH_2})
    if(name STREQUAL "rows")
      set(r ${size})
    elseif(name STREQUAL "cols")
      set(c ${size})
    elseif(name STREQUAL "planes")
      set(p ${size})
    elseif(name STREQUAL "all")
      set(all ${size})
    endif()
  endforeach()
  # over(n): 1 if a sum over a mesh dim of size n counts (n > 1), else 0
  foreach(d all r c p)
    set(on_${d} 0)
    if(${${d}} GREATER 1)
      set(on_${d} 1)
    endif()
  endforeach()
  if(layout STREQUAL "")
    set(expect 0)
    set(expect_forward 0)
  elseif(layout STREQUAL "batch:all")
    math(EXPR expect "${on_all} * (2 * ${d_io} * ${d_h} + ${d_h})")
    set(expect_forward 0)
  elseif(layout STREQUAL "hidden:all")
    math(EXPR expect "${on_all} * 2 * ${b} * ${d_io}")
    math(EXPR expect_forward "${on_all} * ${b} * ${d_io}")
  elseif(layout STREQUAL "batch:rows|hidden:cols")
    # y, dx sum over hidden (cols); dv, dw, dbias over batch (rows)
    math(EXPR expect "${on_c} * 2 * ${b} * ${d_io} / ${r} + ${on_r} * (2 * ${d_io} * ${d_h} / ${c} + ${d_h} / ${c})")
    math(EXPR expect_forward "${on_c} * ${b} * ${d_io} / ${r}")
  elseif(layout STREQUAL "batch:rows|hidden:cols|io:planes")
    # pre, dh sum over io (planes); y, dx over hidden (cols); dv, dw, dbias over batch (rows)
    math(EXPR expect "${on_p} * 2 * ${b} * ${d_h} / (${r} * ${c}) + ${on_c} * 2 * ${b} * ${d_io} / (${r} * ${p}) + ${on_r} * (2 * ${d_io} * ${d_h} / (${c} * ${p}) + ${d_h} / ${c})")
    math(EXPR expect_forward "${on_p} * ${b} * ${d_h} / (${r} * ${c}) + ${on_c} * ${b} * ${d_io} / (${r} * ${p})")
  else()
    message(FATAL_ERROR "unexpected layout '${layout}'")
  endif()
  if(NOT values_allreduced EQUAL expect OR NOT values_allreduced_forward EQUAL expect_forward)
    message(FATAL_ERROR "layout '${layout}' on mesh ${mesh}: values allreduced "
      "${values_allreduced} (forward ${values_allreduced_forward}), table1.md says ${expect} "
      "(forward ${expect_forward})")
  endif()
  if(max_abs_diff GREATER 0.001)
    message(FATAL_ERROR "layout '${layout}' on mesh ${mesh}: max_abs_diff ${max_abs_diff} > 1e-3")
  endif()
  message(STATUS "${layout} on ${mesh}: ${values_allreduced} (forward ${values_allreduced_forward}) = table1.md; max_abs_diff ${max_abs_diff}")
endforeach()
