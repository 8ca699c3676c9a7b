# Shared by the examples' checks (meshppMnistLossCheck.cmake, meshppMnistAccuracyCheck.cmake,
# meshppTransformerCheck.cmake), run with cmake -P: run an example, read the numbers its
# --json lines print, and check two runs' losses agree to 1e-4 relative. CMake has only
# integer arithmetic, so a decimal becomes an integer count of its last place (meshpp_fixed).

# meshpp_fixed(<var> <whole> <fraction> <places>): whole.fraction as an integer count of
# 10^-places, the fraction's digits cut or padded with zeros to `places`: (3, "090401173", 9)
# gives 3090401173. (Not by stripping the fraction's leading zeros with REGEX REPLACE "^0+":
# CMake applies that again wherever the last match ended, so "090401173" became "941173".)
function(meshpp_fixed var whole fraction places)
  string(REPEAT "0" ${places} zeros)
  string(SUBSTRING "${fraction}${zeros}" 0 ${places} digits)
  math(EXPR value "${whole} * 1${zeros} + 1${digits} - 1${zeros}")
  set(${var} ${value} PARENT_SCOPE)
endfunction()

# meshpp_run(<which> <program name>): runs the command list in the variable <which>; its
# standard output in <which>_output (the caller's scope); any failure is fatal
function(meshpp_run which program)
  execute_process(COMMAND ${${which}} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${program} failed (${rc}): ${${which}}\n${out}\n${err}")
  endif()
  set(${which}_output "${out}" PARENT_SCOPE)
endfunction()

# meshpp_losses_of(<var> <output>): the logged losses ("loss": x.xxxxxxxxx), in 1e-9 units
function(meshpp_losses_of var output)
  string(REGEX MATCHALL "\"loss\": [0-9]+\\.[0-9]+" found "${output}")
  set(losses "")
  foreach(item IN LISTS found)
    string(REGEX MATCH "([0-9]+)\\.([0-9]+)" _ "${item}")
    meshpp_fixed(nano "${CMAKE_MATCH_1}" "${CMAKE_MATCH_2}" 9)
    list(APPEND losses ${nano})
  endforeach()
  set(${var} "${losses}" PARENT_SCOPE)
endfunction()

# meshpp_losses_agree(<want> <got>): the two lists (1e-9 units) have the same length, at least
# 50, and agree element by element to 1e-4 relative, else a fatal error naming the first step
# that differs; sets losses_count and losses_worst (the largest difference) in the caller
function(meshpp_losses_agree want got)
  list(LENGTH want n)
  list(LENGTH got m)
  if(n LESS 50 OR NOT n EQUAL m)
    message(FATAL_ERROR "expected the same number (at least 50) of losses, got ${n} and ${m}")
  endif()
  math(EXPR last "${n} - 1")
  set(worst 0)
  foreach(i RANGE ${last})
    list(GET want ${i} w)
    list(GET got ${i} g)
    math(EXPR diff "${g} - ${w}")
    if(diff LESS 0)
      math(EXPR diff "-${diff}")
    endif()
    math(EXPR scaled "${diff} * 10000")  # |got - want| <= 1e-4 |want|
    if(scaled GREATER w)
      math(EXPR step "${i} + 1")
      message(FATAL_ERROR "loss ${step} differs by more than 1e-4 relative: ${g} vs ${w} (1e-9 units)")
    endif()
    if(diff GREATER worst)
      set(worst ${diff})
    endif()
  endforeach()
  set(losses_count ${n} PARENT_SCOPE)
  set(losses_worst ${worst} PARENT_SCOPE)
endfunction()
