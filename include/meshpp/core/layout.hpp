// meshpp/core/layout.hpp — layout rules: which tensor dims are split over which mesh dims.
//
//   using rules = layout<split<batch, rows>, split<hidden, cols>>;
//   layout_for_t<rules, shape<hidden, io>>   -> layout<split<hidden, cols>>
//
// A program declares one set of rules (Mesh-TensorFlow's "computation layout"); the layout
// of a tensor is the rules restricted to its dims, listed in the tensor's dim order. Several
// tensor dims may share a mesh dim in the rules, as in the paper's Transformer layout
// [vocab:all, d_ff:all, heads:all], as long as no single tensor has two of them (paper 8.5).
#pragma once

#include <cstddef>
#include <string>
#include <type_traits>

#include "meshpp/core/dim.hpp"
#include "meshpp/core/shape.hpp"

namespace meshpp {

/// @brief One layout rule: tensor dim `TensorDim` is split evenly over mesh dim `MeshDim`.
template <class TensorDim, class MeshDim>
struct split {
  static_assert(is_dim_v<TensorDim> && is_dim_v<MeshDim>,
                "meshpp::split<TensorDim, MeshDim>: both must be declared with MESHPP_DIM");
  using tensor_dim = TensorDim;
  using mesh_dim = MeshDim;
};

namespace detail {
template <class T>
inline constexpr bool is_split_v = false;
template <class D, class M>
inline constexpr bool is_split_v<split<D, M>> = true;

// first_split_twice_t<Splits...>: the first tensor dim that has a later rule too, or no_dim.
template <class... Splits>
struct first_split_twice {
  using type = no_dim;
};
template <class S, class... Rest>
struct first_split_twice<S, Rest...> {
  using type =
      std::conditional_t<(std::is_same_v<typename S::tensor_dim, typename Rest::tensor_dim> || ...),
                         typename S::tensor_dim, typename first_split_twice<Rest...>::type>;
};
template <class... Splits>
using first_split_twice_t = typename first_split_twice<Splits...>::type;

// first_non_split_t<Ts...>: the first type that is not a split<...> rule, or no_dim.
template <class... Ts>
struct first_non_split {
  using type = no_dim;
};
template <class T, class... Rest>
struct first_non_split<T, Rest...> {
  using type = std::conditional_t<is_split_v<T>, typename first_non_split<Rest...>::type, T>;
};

// first_mesh_dim_shared_t<Splits...>: a rule whose mesh dim a later rule also uses, or no_dim.
template <class... Splits>
struct first_mesh_dim_shared {
  using type = no_dim;
};
template <class S, class... Rest>
struct first_mesh_dim_shared<S, Rest...> {
  static constexpr bool here =
      (std::is_same_v<typename S::mesh_dim, typename Rest::mesh_dim> || ...);
  using type = std::conditional_t<here, S, typename first_mesh_dim_shared<Rest...>::type>;
};
// same_mesh_dim_v<A, B>: A and B are two different rules onto one mesh dim.
template <class A, class B>
inline constexpr bool same_mesh_dim_v = false;
template <class D1, class D2, class M>
inline constexpr bool same_mesh_dim_v<split<D1, M>, split<D2, M>> = !std::is_same_v<D1, D2>;

// later_on_same_mesh_dim<First, Splits...>::type: a rule of Splits other than First onto
// First's mesh dim, or no_dim.
template <class First, class... Splits>
struct later_on_same_mesh_dim {
  using type = no_dim;
};
template <class First, class S, class... Rest>
struct later_on_same_mesh_dim<First, S, Rest...> {
  using type = std::conditional_t<same_mesh_dim_v<First, S>, S,
                                  typename later_on_same_mesh_dim<First, Rest...>::type>;
};
}  // namespace detail

namespace offending {
template <class T>
inline constexpr bool not_a_split_rule = std::is_same_v<T, detail::no_dim>;
template <class TensorDim>
inline constexpr bool tensor_dim_given_two_rules = std::is_same_v<TensorDim, detail::no_dim>;
template <class Split, class OtherSplit>
inline constexpr bool two_tensor_dims_on_one_mesh_dim = std::is_same_v<Split, detail::no_dim>;
}  // namespace offending

/// @brief A set of layout rules (split<TensorDim, MeshDim>...).
/// A tensor dim may have one rule at most: the paper's layouts are injective partial maps.
template <class... Splits>
struct layout {
  static_assert(offending::not_a_split_rule<typename detail::first_non_split<Splits...>::type>,
                "meshpp::layout<Rules...>: every rule must be split<TensorDim, MeshDim>");
  static_assert(offending::tensor_dim_given_two_rules<detail::first_split_twice_t<Splits...>>,
                "meshpp::layout<Rules...>: a tensor dim is given two rules; a dim may be split "
                "over one mesh dim at most");

  static constexpr std::size_t size = sizeof...(Splits);
};

// is_layout_v<L>
template <class L>
inline constexpr bool is_layout_v = false;
template <class... Splits>
inline constexpr bool is_layout_v<layout<Splits...>> = true;

namespace detail {
struct no_mesh_dim {};
template <class D, class... Splits>
struct mesh_dim_of {
  using type = no_mesh_dim;
};
template <class D, class S, class... Rest>
struct mesh_dim_of<D, S, Rest...> {
  using type = std::conditional_t<std::is_same_v<D, typename S::tensor_dim>, typename S::mesh_dim,
                                  typename mesh_dim_of<D, Rest...>::type>;
};
template <class L, class D>
struct layout_mesh_dim;
template <class... Splits, class D>
struct layout_mesh_dim<layout<Splits...>, D> {
  using type = typename mesh_dim_of<D, Splits...>::type;
};

template <class... A, class... B>
layout<A..., B...> operator+(layout<A...>, layout<B...>);  // only for decltype below

template <class Rules, class Shape>
struct restrict_layout;
template <class Rules, class... Dims>
struct restrict_layout<Rules, shape<Dims...>> {
  template <class D>
  using rule_for =
      std::conditional_t<std::is_same_v<typename layout_mesh_dim<Rules, D>::type, no_mesh_dim>,
                         layout<>, layout<split<D, typename layout_mesh_dim<Rules, D>::type>>>;
  using type = decltype((layout<>{} + ... + rule_for<Dims>{}));
};
}  // namespace detail

// mesh_dim_of_t<L, D>: the mesh dim that layout L splits tensor dim D over, or
// detail::no_mesh_dim if D is not split.
template <class L, class D>
using mesh_dim_of_t = typename detail::layout_mesh_dim<L, D>::type;

// is_split_in_v<L, D>: layout L splits tensor dim D.
template <class L, class D>
inline constexpr bool is_split_in_v = !std::is_same_v<mesh_dim_of_t<L, D>, detail::no_mesh_dim>;

// layout_for_t<Rules, Shape>: Rules restricted to Shape's dims, in Shape's order.
template <class Rules, class Shape>
using layout_for_t = typename detail::restrict_layout<Rules, Shape>::type;

namespace detail {
// mesh_dim_clash<L>: the first two rules of L that share a mesh dim (first, second), or no_dim.
template <class L>
struct mesh_dim_clash;
template <class... Splits>
struct mesh_dim_clash<layout<Splits...>> {
  using first = typename first_mesh_dim_shared<Splits...>::type;
  using second = typename later_on_same_mesh_dim<first, Splits...>::type;
};
}  // namespace detail

// is_injective_v<L>: no two rules of L share a mesh dim; a tensor's layout must be.
template <class L>
inline constexpr bool is_injective_v =
    std::is_same_v<typename detail::mesh_dim_clash<L>::first, detail::no_dim>;

namespace detail {
// disagrees_v<R, L>: rule R splits a dim that layout L splits over another mesh dim.
template <class R, class L>
inline constexpr bool disagrees_v = false;
template <class R, class... As>
inline constexpr bool disagrees_v<R, layout<As...>> =
    ((std::is_same_v<typename R::tensor_dim, typename As::tensor_dim> &&
      !std::is_same_v<typename R::mesh_dim, typename As::mesh_dim>) ||
     ...);

// layout_merge<A, B>: A's rules, then B's rules for dims A has no rule for. `conflict` is the
// first rule of B that splits a dim over another mesh dim than A does, or no_dim.
template <class A, class B>
struct layout_merge;
template <class... As, class... Bs>
struct layout_merge<layout<As...>, layout<Bs...>> {
  template <class R>
  static constexpr bool a_has = (std::is_same_v<typename R::tensor_dim, typename As::tensor_dim> ||
                                 ...);
  using type =
      decltype((layout<As...>{} + ... + std::conditional_t<a_has<Bs>, layout<>, layout<Bs>>{}));
  using conflict = first_found_t<std::conditional_t<disagrees_v<Bs, layout<As...>>, Bs, no_dim>...>;
};
}  // namespace detail

// layout_merge_t<A, B>: the rules of A and B together (dims split by both must agree).
template <class A, class B>
using layout_merge_t = typename detail::layout_merge<A, B>::type;

// split_mesh_dims_t<Layout, S>: the mesh dims Layout splits S's dims over, as a shape
namespace detail {
// split_mesh_dims_t<Layout, S>: the mesh dims Layout splits S's dims over, as a shape
template <class L, class S>
struct split_mesh_dims;
template <class L>
struct split_mesh_dims<L, shape<>> {
  using type = shape<>;
};
template <class L, class D, class... Rest>
struct split_mesh_dims<L, shape<D, Rest...>> {
  using rest = typename split_mesh_dims<L, shape<Rest...>>::type;
  using type = std::conditional_t<is_split_in_v<L, D>,
                                  shape_concat_t<shape<mesh_dim_of_t<L, D>>, rest>, rest>;
};
}  // namespace detail

template <class L, class S>
using split_mesh_dims_t = typename detail::split_mesh_dims<L, S>::type;

// to_string(layout<...>{}) -> "batch:rows;hidden:cols" (the Mesh-TensorFlow spelling)
template <class... Splits>
std::string to_string(layout<Splits...>) {
  std::string out;
  ((out += (out.empty() ? "" : ";"), out += Splits::tensor_dim::name(), out += ':',
    out += Splits::mesh_dim::name()),
   ...);
  return out;
}

}  // namespace meshpp
