// meshpp/core/shape.hpp — shape<Dims...>: an ordered set of dim names, and its algebra. A shape
// is a type list: the algebra is Boost.Mp11's list algorithms on it.
//
//   using s = shape<batch, hidden>;
//   contains_v<s, batch>                       -> true
//   index_of_v<s, hidden>                      -> 1
//   shape_union_t<shape<a, b>, shape<c, a>>    -> shape<a, b, c>   (first's order, then new dims)
//   shape_difference_t<shape<a, b, c>, shape<b>> -> shape<a, c>
//   shape_intersection_t<shape<a, b, c>, shape<c, a>> -> shape<a, c>  (first's order)
//   same_dims_v<shape<a, b>, shape<b, a>>      -> true
//   permutation_v<shape<a, b, c>, shape<c, a, b>> -> {2, 0, 1}  (To[i] is From[p[i]])
#pragma once

#include <array>
#include <cstddef>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

#include <boost/mp11/algorithm.hpp>
#include <boost/mp11/list.hpp>
#include <boost/mp11/utility.hpp>

#include "meshpp/core/config.hpp"
#include "meshpp/core/dim.hpp"

namespace meshpp {

namespace detail {
namespace mp11 = boost::mp11;

/// Stands for "no offending dim": every check below is true exactly when it gets this.
struct no_dim {};

// first_or_no_dim_t<L>: the first type of the list L, or no_dim when L is empty.
template <class L>
using first_or_no_dim_t = mp11::mp_eval_if<mp11::mp_empty<L>, no_dim, mp11::mp_front, L>;

// first_found_t<Ts...>: the first of Ts that is not no_dim, or no_dim.
template <class... Ts>
using first_found_t = first_or_no_dim_t<mp11::mp_remove<mp11::mp_list<Ts...>, no_dim>>;

// first_duplicate_t<Dims...>: the first dim that appears again later, or no_dim.
template <class L>
struct appears_twice_in {
  template <class T>
  using fn = mp11::mp_bool<(mp11::mp_count<L, T>::value > 1)>;
};
template <class... Dims>
using first_duplicate_t = first_or_no_dim_t<
    mp11::mp_copy_if_q<mp11::mp_list<Dims...>, appears_twice_in<mp11::mp_list<Dims...>>>>;

// first_non_dim_t<Ts...>: the first type not declared with MESHPP_DIM, or no_dim.
template <class T>
using is_dim_t = mp11::mp_bool<is_dim_v<T>>;
template <class... Ts>
using first_non_dim_t = first_or_no_dim_t<mp11::mp_remove_if<mp11::mp_list<Ts...>, is_dim_t>>;
}  // namespace detail

/// Compile-time checks whose template arguments name the offender. When one fails, g++
/// prints "note: 'meshpp::offending::duplicate_dim<batch>' evaluates to false" and clang
/// prints the same expression in its error line: that names the dim the message is about.
namespace offending {
template <class Dim>
inline constexpr bool duplicate_dim = std::is_same_v<Dim, detail::no_dim>;
template <class T>
inline constexpr bool not_a_dim_name = std::is_same_v<T, detail::no_dim>;
template <class Dim, class Shape>
inline constexpr bool dim_not_in_shape = false;
}  // namespace offending

/// @brief An ordered set of dim names: the dims of a tensor, in storage order (row-major,
/// last dim contiguous).
/// @tparam Dims distinct dim names declared with MESHPP_DIM.
template <class... Dims>
struct shape {
  static_assert(offending::not_a_dim_name<detail::first_non_dim_t<Dims...>>,
                "meshpp::shape<Dims...>: every dim must be declared with MESHPP_DIM");
  static_assert(offending::duplicate_dim<detail::first_duplicate_t<Dims...>>,
                "meshpp::shape<Dims...>: a dim appears twice in one shape");

  static constexpr std::size_t rank = sizeof...(Dims);
};

// is_shape_v<S>
template <class S>
inline constexpr bool is_shape_v = false;
template <class... Dims>
inline constexpr bool is_shape_v<shape<Dims...>> = true;

// rank_v<S>
template <class S>
inline constexpr std::size_t rank_v = S::rank;

// contains_v<S, D>: D is one of S's dims.
template <class S, class D>
inline constexpr bool contains_v = false;
template <class... Dims, class D>
inline constexpr bool contains_v<shape<Dims...>, D> = (std::is_same_v<Dims, D> || ...);

// contains_all_v<S, Sub>: every dim of Sub is in S.
template <class S, class Sub>
inline constexpr bool contains_all_v = false;
template <class S, class... Dims>
inline constexpr bool contains_all_v<S, shape<Dims...>> = (contains_v<S, Dims> && ...);

// same_dims_v<A, B>: A and B hold the same set of dims (in any order).
template <class A, class B>
inline constexpr bool same_dims_v = rank_v<A> == rank_v<B>&& contains_all_v<A, B>;

namespace detail {
template <class S, class D>
struct index_of_impl {
  static_assert(offending::dim_not_in_shape<D, S> || contains_v<S, D>,
                "meshpp::index_of_v<Shape, Dim>: Dim is not a dim of Shape");
  static constexpr std::size_t value = mp11::mp_find<S, D>::value;
};
}  // namespace detail

// index_of_v<S, D>: position of D in S (a compile error if S has no D).
template <class S, class D>
inline constexpr std::size_t index_of_v = detail::index_of_impl<S, D>::value;

namespace detail {
// in_t<S>::fn<D>: D is a dim of S (a quoted predicate for the list algorithms)
template <class S>
struct in_t {
  template <class D>
  using fn = mp11::mp_bool<contains_v<S, D>>;
};
}  // namespace detail

// shape_concat_t<A, B>: A's dims then B's (they must not share a dim).
template <class A, class B>
using shape_concat_t = boost::mp11::mp_append<A, B>;

// shape_difference_t<A, B>: the dims of A that B lacks, in A's order.
template <class A, class B>
using shape_difference_t = boost::mp11::mp_remove_if_q<A, detail::in_t<B>>;

// shape_intersection_t<A, B>: the dims of A that B has too, in A's order.
template <class A, class B>
using shape_intersection_t = boost::mp11::mp_copy_if_q<A, detail::in_t<B>>;

// shape_union_t<A, B>: A's dims, then B's dims that A lacks (in B's order).
template <class A, class B>
using shape_union_t = shape_concat_t<A, shape_difference_t<B, A>>;

namespace detail {
template <class From, class To>
struct permutation;
template <class From, class... To>
struct permutation<From, shape<To...>> {
  static constexpr std::array<std::size_t, sizeof...(To)> value{index_of_v<From, To>...};
};
template <class S>
struct dim_names;
template <class... Dims>
struct dim_names<shape<Dims...>> {
  static constexpr std::array<std::string_view, sizeof...(Dims)> value{Dims::name()...};
};
}  // namespace detail

// permutation_v<From, To>: p with To's i-th dim at From's position p[i]; From and To must
// hold the same dims. Transposing an array laid out as From into To order: out axis i takes
// in axis p[i].
template <class From, class To>
requires same_dims_v<From, To>
inline constexpr auto permutation_v = detail::permutation<From, To>::value;

// dim_at_t<S, I>: the I-th dim of S
template <class S, std::size_t I>
using dim_at_t = boost::mp11::mp_at_c<S, I>;

namespace detail {
// for_each_index<N>(f): f(std::integral_constant<std::size_t, I>{}) for I in [0, N), in order:
// visits a shape's dims one by one (dim_at_t<S, I>) where each needs its own type
template <std::size_t N, class F>
constexpr void for_each_index(F&& f) {
  mp11::mp_for_each<mp11::mp_iota_c<N>>(f);
}
}  // namespace detail

// dim_names_v<S>: the printable names of S's dims, in order.
template <class S>
inline constexpr auto dim_names_v = detail::dim_names<S>::value;

namespace detail {
// bracketed(names): "[batch, hidden]"; one function for every shape
MESHPP_KERNEL inline std::string bracketed(std::span<const std::string_view> names) {
  std::string out = "[";
  for (std::size_t i = 0; i < names.size(); ++i) {
    if (i) out += ", ";
    out += names[i];
  }
  return out + "]";
}
}  // namespace detail

// to_string(S{}) -> "[batch, hidden]"
template <class... Dims>
std::string to_string(shape<Dims...>) {
  return detail::bracketed(dim_names_v<shape<Dims...>>);
}

}  // namespace meshpp
