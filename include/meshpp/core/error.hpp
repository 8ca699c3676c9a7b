// meshpp/core/error.hpp — the one exception type meshpp throws for bad input, and the one
// out-of-line function that builds and throws its messages.
#pragma once

#include <concepts>
#include <cstdint>
#include <initializer_list>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>

namespace meshpp {

/// @brief Thrown for bad input that only run-time values can reveal (sizes, rank counts,
/// array shapes). meshpp raises it only from checks that depend on values every rank has,
/// before any communication, so every rank of a correct SPMD program throws the same error
/// ("fail together") and no rank is left waiting in a collective.
class error : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

namespace detail {
// whole_number<I>: an integer type that is not bool or a character type (those print as
// themselves, not as numbers)
template <class I>
concept whole_number =
    std::integral<I> && !std::same_as<I, bool> && !std::same_as<I, char> &&
    !std::same_as<I, signed char> && !std::same_as<I, unsigned char> && !std::same_as<I, wchar_t> &&
    !std::same_as<I, char8_t> && !std::same_as<I, char16_t> && !std::same_as<I, char32_t>;

// message_part: one piece of an error message, text or a whole number, held without copying
// (so only for the call that joins them: fail below)
struct message_part {
  // implicit: parts are written as a braced list of plain values, {"dim '", D::name(), "': ", n}
  message_part(std::string_view t) : text(t) {}
  message_part(const char* t) : text(t) {}
  message_part(const std::string& t) : text(t) {}
  template <whole_number I>
  message_part(I n)
      : number(static_cast<std::uint64_t>(n)),
        as(std::is_signed_v<I> ? kind::signed_number : kind::unsigned_number) {}
  std::string_view text;
  enum class kind { text, signed_number, unsigned_number };
  std::uint64_t number = 0;
  kind as = kind::text;
};

// fail({parts...}): throws meshpp::error with the parts joined. Checks inside templates call
// this instead of building the message in place: one copy of the string-building code for the
// whole program, where `throw error(std::string(...) + ...)` emitted it (with its exception
// cleanups) into every instantiation, and made most of the code of the checks themselves.
[[noreturn, gnu::cold, gnu::noinline]] inline void fail(std::initializer_list<message_part> parts) {
  std::string message;
  for (const message_part& p : parts) {
    if (p.as == message_part::kind::signed_number)
      message += std::to_string(static_cast<std::int64_t>(p.number));
    else if (p.as == message_part::kind::unsigned_number)
      message += std::to_string(p.number);
    else
      message += p.text;
  }
  throw error(message);
}
}  // namespace detail

}  // namespace meshpp
