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

#include <boost/mp11/algorithm.hpp>

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

template <class T>
using is_split_t = mp11::mp_bool<is_split_v<T>>;

// first_split_twice_t<Splits...>: the first tensor dim that has a later rule too, or no_dim.
template <class... Splits>
using first_split_twice_t = first_duplicate_t<typename Splits::tensor_dim...>;

// first_non_split_t<Ts...>: the first type that is not a split<...> rule, or no_dim.
template <class... Ts>
using first_non_split_t = first_or_no_dim_t<mp11::mp_remove_if<mp11::mp_list<Ts...>, is_split_t>>;

// rule_mesh_dim<S>: the mesh dim of rule S (no_dim for no_dim)
template <class S>
struct rule_mesh_dim_impl {
  using type = typename S::mesh_dim;
};
template <>
struct rule_mesh_dim_impl<no_dim> {
  using type = no_dim;
};
template <class S>
using rule_mesh_dim = typename rule_mesh_dim_impl<S>::type;

// on_mesh_dim<M>::fn<S>: rule S splits over mesh dim M
template <class M>
struct on_mesh_dim {
  template <class S>
  using fn = std::is_same<rule_mesh_dim<S>, M>;
};
// shares_mesh_dim_in<L>::fn<S>: another rule of L splits over S's mesh dim too
template <class L>
struct shares_mesh_dim_in {
  template <class S>
  using fn = mp11::mp_bool<(mp11::mp_count_if_q<L, on_mesh_dim<rule_mesh_dim<S>>>::value > 1)>;
};
// mesh_dim_clash<L>: the first two rules of layout L that share a mesh dim (first, second),
// or no_dim for both.
template <class L>
struct mesh_dim_clash {
  using first = first_or_no_dim_t<mp11::mp_copy_if_q<L, shares_mesh_dim_in<L>>>;
  using second = first_or_no_dim_t<
      mp11::mp_remove<mp11::mp_copy_if_q<L, on_mesh_dim<rule_mesh_dim<first>>>, first>>;
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
/// A tensor dim may have one rule at most (the rules are a partial map from tensor dims to
/// mesh dims). Rules may share a mesh dim; a tensor's own layout may not (is_injective_v):
/// the paper's layouts are injective partial maps.
template <class... Splits>
struct layout {
  static_assert(offending::not_a_split_rule<detail::first_non_split_t<Splits...>>,
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
// for_tensor_dim<D>::fn<S>: rule S splits tensor dim D
template <class D>
struct for_tensor_dim {
  template <class S>
  using fn = std::is_same<typename S::tensor_dim, D>;
};
template <class Rules>
using first_rule_mesh_dim = typename mp11::mp_front<Rules>::mesh_dim;
// layout_mesh_dim_t<L, D>: see mesh_dim_of_t
template <class L, class D, class Rules = mp11::mp_copy_if_q<L, for_tensor_dim<D>>>
using layout_mesh_dim_t =
    mp11::mp_eval_if<mp11::mp_empty<Rules>, no_mesh_dim, first_rule_mesh_dim, Rules>;

// layout<A...>{} + layout<B...>{}: the rules of both (only for a fold inside decltype)
template <class... A, class... B>
layout<A..., B...> operator+(layout<A...>, layout<B...>);

// restrict_layout_t<Rules, Shape>: see layout_for_t
template <class Rules>
struct rules_of {
  template <class D>
  using fn = mp11::mp_copy_if_q<Rules, for_tensor_dim<D>>;  // layout<> or layout<split<D, M>>
};
template <class Rules, class Shape>
using restrict_layout_t = mp11::mp_apply<
    mp11::mp_append,
    mp11::mp_push_front<
        mp11::mp_transform_q<rules_of<Rules>, mp11::mp_rename<Shape, mp11::mp_list>>, layout<>>>;
}  // namespace detail

// mesh_dim_of_t<L, D>: the mesh dim that layout L splits tensor dim D over, or
// detail::no_mesh_dim if D is not split.
template <class L, class D>
requires is_layout_v<L>
using mesh_dim_of_t = detail::layout_mesh_dim_t<L, D>;

// is_split_in_v<L, D>: layout L splits tensor dim D.
template <class L, class D>
inline constexpr bool is_split_in_v = !std::is_same_v<mesh_dim_of_t<L, D>, detail::no_mesh_dim>;

// layout_for_t<Rules, Shape>: Rules restricted to Shape's dims, in Shape's order.
template <class Rules, class Shape>
requires is_layout_v<Rules> && is_shape_v<Shape>
using layout_for_t = detail::restrict_layout_t<Rules, Shape>;

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
  using a_has = mp11::mp_bool<is_split_in_v<layout<As...>, typename R::tensor_dim>>;
  using type = mp11::mp_append<layout<As...>, mp11::mp_remove_if<layout<Bs...>, a_has>>;
  using conflict = first_found_t<std::conditional_t<disagrees_v<Bs, layout<As...>>, Bs, no_dim>...>;
};
}  // namespace detail

// layout_merge_t<A, B>: the rules of A and B together (dims split by both must agree).
template <class A, class B>
using layout_merge_t = typename detail::layout_merge<A, B>::type;

namespace detail {
template <class L>
struct split_in {
  template <class D>
  using fn = mp11::mp_bool<is_split_in_v<L, D>>;
};
template <class L>
struct mesh_dim_in {
  template <class D>
  using fn = mesh_dim_of_t<L, D>;
};
}  // namespace detail

// split_mesh_dims_t<Layout, S>: the mesh dims Layout splits S's dims over, as a shape
template <class L, class S>
using split_mesh_dims_t =
    boost::mp11::mp_transform_q<detail::mesh_dim_in<L>,
                                boost::mp11::mp_copy_if_q<S, detail::split_in<L>>>;

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
