// meshpp/core/dim.hpp — dimension names as types.
//
//   MESHPP_DIM(batch);            // declares the tag type `batch`, printable as "batch"
//   auto e = batch{} = 128;       // dim_extent<batch>{128}: a size attached to a name
//
// Tensor dims and mesh dims are both declared this way. A name is a plain struct, so
// compilers print it as itself in diagnostics (`batch`), on g++ and clang alike.
#pragma once

#include <concepts>
#include <cstddef>
#include <string>
#include <string_view>
#include <type_traits>

#include "meshpp/core/error.hpp"

namespace meshpp {

/// @brief A run-time size attached to the dim name `Dim`; made by `Dim{} = n`.
template <class Dim>
struct dim_extent {
  using dim_type = Dim;
  std::size_t size;
};

/// @brief CRTP base of every dim name. Gives the name its `= size` spelling.
/// @tparam Name the derived tag type (declare it with MESHPP_DIM).
template <class Name>
struct dim {
  // Dim{} = n -> dim_extent<Dim>{n}
  template <std::integral I>
  constexpr dim_extent<Name> operator=(I n) const {
    if (n < I{0}) {
      throw error("meshpp: dim '" + std::string(Name::name()) + "' was given the negative size " +
                  std::to_string(n));
    }
    return {static_cast<std::size_t>(n)};
  }
};

// is_dim_v<D>: D was declared with MESHPP_DIM (derives from dim<D> and names itself).
template <class D>
inline constexpr bool is_dim_v = std::is_base_of_v<dim<D>, D>&& requires {
  { D::name() } -> std::convertible_to<std::string_view>;
};

/// @brief A dim name type: declared with MESHPP_DIM.
template <class D>
concept dim_name = is_dim_v<D>;

// dim_name_v<D>: the printable name of D.
template <dim_name D>
inline constexpr std::string_view dim_name_v = D::name();

}  // namespace meshpp

/// Declares the dim name NAME: an empty struct printable as "NAME". Works at namespace
/// scope and inside functions (local classes may be template arguments).
#define MESHPP_DIM(NAME)                                                  \
  struct NAME : ::meshpp::dim<NAME> {                                     \
    using ::meshpp::dim<NAME>::operator=;                                 \
    static constexpr ::std::string_view name() noexcept { return #NAME; } \
  }
