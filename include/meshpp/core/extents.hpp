// meshpp/core/extents.hpp — run-time sizes attached to dim names.
//
//   auto sizes = extents{batch{} = 256, io{} = 512, hidden{} = 2048};
//   sizes.get<io>()      -> 512
//   sizes[hidden{}]      -> 2048
//
// One extents object usually holds the sizes of every dim of a program; each tensor takes
// the sizes of its own dims from it.
#pragma once

#include <array>
#include <cstddef>
#include <string>

#include "meshpp/core/dim.hpp"
#include "meshpp/core/shape.hpp"

namespace meshpp {

namespace offending {
template <class Dim, class Extents>
inline constexpr bool no_size_given_for_dim = false;
}  // namespace offending

/// @brief Sizes of a set of named dims.
/// @tparam Dims distinct dim names (a duplicate is a compile error, as for shape).
template <class... Dims>
class extents {
 public:
  using shape_type = shape<Dims...>;
  static constexpr std::size_t rank = sizeof...(Dims);

  // extents{a{} = 1, b{} = 2}
  constexpr extents(dim_extent<Dims>... sizes) : sizes_{sizes.size...} {
    static_assert(sizeof(shape_type) > 0);  // instantiates shape's checks (duplicates)
  }

  // has<D>: a size is given for D
  template <class D>
  static constexpr bool has = contains_v<shape_type, D>;

  // get<D>(): the size of D
  template <class D>
  constexpr std::size_t get() const {
    static_assert(has<D> || offending::no_size_given_for_dim<D, extents>,
                  "meshpp::extents::get<Dim>(): these extents give no size for Dim");
    if constexpr (has<D>)
      return sizes_[index_of_v<shape_type, D>];
    else
      return 0;  // unreachable: the static_assert above has already failed
  }

  // sizes[D{}]
  template <class D>
  constexpr std::size_t operator[](D) const {
    return get<D>();
  }

  // sizes_of<S>(): the sizes of S's dims, in S's order
  template <class S>
  constexpr auto sizes_of() const {
    return sizes_of_impl(static_cast<S*>(nullptr));
  }

  const std::array<std::size_t, rank>& sizes() const { return sizes_; }

 private:
  template <class... S>
  constexpr std::array<std::size_t, sizeof...(S)> sizes_of_impl(shape<S...>*) const {
    return {get<S>()...};
  }

  std::array<std::size_t, rank> sizes_;
};

template <class... Dims>
extents(dim_extent<Dims>...) -> extents<Dims...>;

// to_string(e) -> "[batch:256, hidden:1024]"
template <class... Dims>
std::string to_string(const extents<Dims...>& e) {
  std::string out = "[";
  ((out += (out.size() > 1 ? ", " : ""), out += Dims::name(), out += ':',
    out += std::to_string(e.template get<Dims>())),
   ...);
  return out + "]";
}

// is_extents_v<E>
template <class E>
inline constexpr bool is_extents_v = false;
template <class... Dims>
inline constexpr bool is_extents_v<extents<Dims...>> = true;

}  // namespace meshpp
