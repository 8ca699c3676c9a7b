// meshpp/core/text.hpp — detail: building descriptions and messages piece by piece.
// append(out, "a", name, ':', 42) appends each piece in turn. (It also sidesteps GCC 12's
// false -Wrestrict warning on chains like `("" + std::string(x)) + ...` at -O3, PR105329.)
#pragma once

#include <concepts>
#include <string>
#include <string_view>

namespace meshpp::detail {

inline void append_piece(std::string& out, std::string_view s) { out.append(s); }
inline void append_piece(std::string& out, char c) { out.push_back(c); }
// a count or an index: an integer type that is not a character or bool
template <class I>
concept counting_integer = std::integral<I> && !std::same_as<I, char> && !std::same_as<I, bool>;
template <counting_integer I>
void append_piece(std::string& out, I v) {
  out += std::to_string(v);
}

// append(out, pieces...)
template <class... P>
void append(std::string& out, const P&... pieces) {
  (append_piece(out, pieces), ...);
}

}  // namespace meshpp::detail
