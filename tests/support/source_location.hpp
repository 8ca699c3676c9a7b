// meshpp_test::source_location: std::source_location, or a stand-in where the standard library
// cannot provide it. libstdc++ builds std::source_location on __builtin_source_location, which
// clang gained in version 15: with clang 14 and libstdc++ 12 <source_location> declares nothing
// (and leaves __cpp_lib_source_location undefined). The stand-in records what the tests print,
// the file and the line of the call, through the builtins both compilers have had for years.
#pragma once

#include <version>

#if defined(__cpp_lib_source_location)
#include <source_location>
#endif

namespace meshpp_test {

#if defined(__cpp_lib_source_location)
using source_location = std::source_location;
#else
struct source_location {
  // current(): the place of the call whose default argument this is
  static constexpr source_location current(const char* at_file = __builtin_FILE(),
                                           unsigned at_line = __builtin_LINE()) noexcept {
    return {at_file, at_line};
  }
  constexpr const char* file_name() const noexcept { return file; }
  constexpr unsigned line() const noexcept { return line_number; }

  const char* file = "";
  unsigned line_number = 0;
};
#endif

}  // namespace meshpp_test
