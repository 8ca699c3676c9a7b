# meshppLintDiary.cmake — no lab notebook in the documents or the code's comments, run as the
# ctest `lint/diary` (cmake -DROOT=<repo> -P cmake/meshppLintDiary.cmake).
#
# README.md, the guides in docs/ and the comments of include/**/*.hpp say what a user can
# expect and why, not what was measured when: history lives in git, and dated measurements in
# docs/benchmarks.md, the one file this rule leaves alone. A line fails when it holds
#
#   a date          2026-12-07, Dec 7, 7 December, 08:40 UTC, "at 14:27"
#   a commit hash   a standalone token of 7 to 40 lowercase hex digits with at least one digit
#                   and one letter (not 0x1f2e3d4: a hex constant; not "deadbeef": a word)
#   a load average  "load average", "load avg"
#   a machine       "family 6", "model 207", "family-26" (CPU family and model numbers)
#   a run letter    "run C", "runs A and B" (benchmark runs are named in docs/benchmarks.md)
#
# In the headers only comments are read: a line that starts with //, or the part of a line
# after its first //. Each failure prints file:line, what it found and the line.
cmake_minimum_required(VERSION 3.25)
if(NOT ROOT)
  message(FATAL_ERROR "meshppLintDiary: pass -DROOT=<the repo>")
endif()

set(months "(Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Sept|Oct|Nov|Dec)")
set(month_names "(January|February|March|April|June|July|August|September|October|November|December)")

# meshpp_diary_check(<text> <out var>): what `text` holds that the rule forbids, or ""
function(meshpp_diary_check text out)
  set(found "")
  if(text MATCHES "(^|[^0-9])(19|20)[0-9][0-9]-[01][0-9]-[0-3][0-9]([^0-9]|$)")
    list(APPEND found "a date")
  elseif(text MATCHES "(^|[^A-Za-z])${months}\\.? [0-3]?[0-9]([^0-9:]|$)"
         OR text MATCHES "(^|[^A-Za-z])${month_names} [0-3]?[0-9]([^0-9:]|$)"
         OR text MATCHES "(^|[^0-9.])[0-3]?[0-9] (${months}|${month_names})([^A-Za-z]|$)")
    list(APPEND found "a date")
  elseif(text MATCHES "[0-2]?[0-9]:[0-5][0-9] ?(UTC|GMT)" OR text MATCHES "(^|[^A-Za-z])at [0-2]?[0-9]:[0-5][0-9]([^0-9]|$)")
    list(APPEND found "a time of day")
  endif()
  string(TOLOWER "${text}" lower)
  if(lower MATCHES "load av(erage|g)")
    list(APPEND found "a load average")
  endif()
  if(text MATCHES "(^|[^A-Za-z_])(family|model)[ -][0-9]+")
    list(APPEND found "a CPU family or model number")
  endif()
  if(text MATCHES "(^|[^A-Za-z])[Rr]uns? [A-Z]([^A-Za-z0-9]|$)")
    list(APPEND found "a run letter")
  endif()
  # a commit hash: every standalone token of 7-40 lowercase hex digits, with a digit and a letter
  string(REGEX REPLACE "[^0-9A-Za-z_]+" ";" tokens "${text}")
  foreach(token IN LISTS tokens)
    string(LENGTH "${token}" length)
    if(length GREATER_EQUAL 7 AND length LESS_EQUAL 40 AND token MATCHES "^[0-9a-f]+$"
       AND token MATCHES "[0-9]" AND token MATCHES "[a-f]")
      list(APPEND found "a commit hash (${token})")
      break()
    endif()
  endforeach()
  list(JOIN found ", " found)
  set(${out} "${found}" PARENT_SCOPE)
endfunction()

# The files: README.md, docs/*.md but the benchmarks, every header (comments only)
file(GLOB documents RELATIVE "${ROOT}" "${ROOT}/docs/*.md")
list(REMOVE_ITEM documents "docs/benchmarks.md")
list(PREPEND documents "README.md")
file(GLOB_RECURSE headers RELATIVE "${ROOT}" "${ROOT}/include/*.hpp")
list(SORT headers)

set(problems "")
set(count 0)
set(lines_read 0)
foreach(file IN LISTS documents headers)
  if(NOT EXISTS "${ROOT}/${file}")
    continue()
  endif()
  set(header FALSE)
  if(file MATCHES "\\.hpp$")
    set(header TRUE)
  endif()
  file(READ "${ROOT}/${file}" content)
  # One list element per line: the characters CMake's lists treat specially (; \ [ ]) are
  # stood in for first, and put back when a line is printed
  string(REPLACE "\\" "<meshpp-bs>" content "${content}")
  string(REPLACE ";" "<meshpp-sc>" content "${content}")
  string(REPLACE "[" "<meshpp-lb>" content "${content}")
  string(REPLACE "]" "<meshpp-rb>" content "${content}")
  string(REPLACE "\n" ";" lines "${content}")
  set(number 0)
  foreach(line IN LISTS lines)
    math(EXPR number "${number} + 1")
    set(text "${line}")
    if(header)
      string(FIND "${line}" "//" at)
      if(at EQUAL -1)
        continue()
      endif()
      string(SUBSTRING "${line}" ${at} -1 text)
    endif()
    string(REPLACE "<meshpp-lb>" "[" text "${text}")
    string(REPLACE "<meshpp-rb>" "]" text "${text}")
    meshpp_diary_check("${text}" found)
    if(found)
      string(REPLACE "<meshpp-bs>" "\\" shown "${line}")
      string(REPLACE "<meshpp-sc>" ";" shown "${shown}")
      string(REPLACE "<meshpp-lb>" "[" shown "${shown}")
      string(REPLACE "<meshpp-rb>" "]" shown "${shown}")
      string(STRIP "${shown}" shown)
      string(APPEND problems "  ${file}:${number}: ${found}: ${shown}\n")
      math(EXPR count "${count} + 1")
    endif()
  endforeach()
  math(EXPR lines_read "${lines_read} + ${number}")
endforeach()

list(LENGTH documents document_count)
list(LENGTH headers header_count)
if(problems)
  message(FATAL_ERROR "meshpp diary: ${count} line(s) hold a date, a commit hash, a load "
                      "average, a CPU model or a run letter (history lives in git; dated "
                      "measurements in docs/benchmarks.md; a guide gives a range and the "
                      "command that measures it):\n${problems}")
endif()
message(STATUS "meshpp diary: ${document_count} documents and the comments of ${header_count} "
               "headers (${lines_read} lines): no dates, commit hashes, load averages, CPU "
               "models or run letters")
