// meshpp/expr/evaluate.hpp — evaluating named expressions: one fused pass over local slices.
//
//   tensor_t t = expr;     // or t = expr;  or auto t = eval(expr);
//
// [a, b] expr |-> [a, b] tensor    local, no communication
//
// The pass walks the destination's local slice row by row (rows of its last dim: for_each_row,
// core/traverse.hpp). Each operand is read through a cursor whose access along the row
// is known from the types: contiguous (the operand's last dim is the row's dim), invariant (it
// lacks that dim: a broadcast), or strided (it has the dim elsewhere: a transpose); see
// expr/detail/cursors.hpp. Trailing dims that every operand holds contiguously are merged into
// one long row, so a chain over same-shaped tensors is a single flat loop the compiler
// vectorizes.
//
// Why not xtensor's own assignment: for relu(a * b + c) with c broadcast over a 512 x 2048
// slice, xtensor 0.24's assigner (with xsimd) measured 3.8-5.6x slower than a hand-written
// loop here; this pass is within a few percent of it (bench/fused_chain).
#pragma once

#include <array>
#include <cstddef>
#include <string>
#include <string_view>
#include <type_traits>

#include "meshpp/core/config.hpp"
#include "meshpp/core/divides.hpp"
#include "meshpp/core/error.hpp"
#include "meshpp/core/layout.hpp"
#include "meshpp/core/row_major.hpp"
#include "meshpp/core/shape.hpp"
#include "meshpp/core/tensor.hpp"
#include "meshpp/core/traverse.hpp"
#include "meshpp/expr/expression.hpp"

namespace meshpp {

namespace detail {

/// Writes rows of a destination laid out with `stride` (row-major: contiguous rows).
template <class T, std::size_t N>
using dest_cursor = strided_cursor<T*, N>;

// local_frame<Order, Layout>(mesh, e): the region of dims Order (global sizes from e.size<D>())
// that this rank holds under Layout: the stripe at its coordinate for split dims, all else.
template <class Order, class Layout, class Mesh, class E>
frame<Order> local_frame(const Mesh& m, const E& e) {
  frame<Order> fr{};
  [&]<class... D>(shape<D...>*) {
    const std::array<std::size_t, Order::rank> global{e.template size<D>()...};
    block_at(global, axes_of_dims_v<Order, Layout, Mesh>, m.sizes(), m.coordinates(), fr.offset,
             fr.extent);
  }(static_cast<Order*>(nullptr));
  return fr;
}

// A destination can take an expression without communication when every dim the expression
// splits, the destination splits over the same mesh dim. (A dim the destination splits and
// the expression holds whole is free: each rank reads its stripe. The reverse would need an
// allgather, which must be an explicit relayout.) `offending_rule` is the expression's rule
// for the first dim where this fails, or no_dim.
template <class DestLayout, class ExprLayout, class Shape>
struct assignable_layout;
template <class DestLayout, class ExprLayout, class... Dims>
struct assignable_layout<DestLayout, ExprLayout, shape<Dims...>> {
  template <class D>
  static constexpr bool ok_for =
      std::is_same_v<mesh_dim_of_t<DestLayout, D>, mesh_dim_of_t<ExprLayout, D>> ||
      !is_split_in_v<ExprLayout, D>;
  using offending_rule = first_found_t<
      std::conditional_t<ok_for<Dims>, no_dim, split<Dims, mesh_dim_of_t<ExprLayout, Dims>>>...>;
  static constexpr bool value = std::is_same_v<offending_rule, no_dim>;
};
}  // namespace detail

namespace detail {
// agree_assigned_sizes(dest, e, in_e, n, names): the n dims of a destination (sizes dest, names
// names) have the sizes of the same dims of the expression (sizes e, dim i at e[in_e[i]], the
// permutation from e's dim order to the destination's); one function for every assignment,
// not a template of its types
inline void agree_assigned_sizes(const std::size_t* dest, const std::size_t* e,
                                 const std::size_t* in_e, std::size_t n,
                                 const std::string_view* names) {
  for (std::size_t i = 0; i < n; ++i) {
    const std::size_t got = e[in_e[i]];
    if (dest[i] != got) {
      fail({"meshpp: assigning an expression whose dim '", names[i], "' has size ", got,
            " to a tensor where it has size ", dest[i]});
    }
  }
}

// evaluate_into(e, fr, out): writes e over the region fr, in fr's dim order, row-major and
// contiguous, to out. The one fused pass behind every evaluation.
//
// out may be one of e's operands: `t = t * 2 + b` evaluates into t's slice while reading it
// (softmax's `y = exp(y - shift)`; tests/mpi/expr/expressions.cpp, "assignment may read its own
// destination"). Not __restrict, then: that would promise the compiler that nothing else reads what
// `o` writes. The loop is still free of dependences between iterations, as MESHPP_IVDEP says: a
// tensor owns its slice (two tensors never share one), so an operand that reads out's memory is
// dest itself, of dest's type (the same dims in the same order, the same layout): its cursor over
// dest's frame has dest's strides and starts at dest's first element, so iteration j reads element
// j of the row, the one it writes, before writing it. (einsum's prepare_batched() evaluates into a
// fresh buffer, which nothing else reads.)
template <class E, class O, class T>
void evaluate_into(const E& e, const frame<O>& fr, T* out) {
  constexpr std::size_t n = O::rank;
  auto source = e.cursor(fr);
  dest_cursor<T, n> dest{out, row_major_strides<n>(fr.extent)};
  auto cursors = group(dest, source);
  for_each_row<n>(fr.extent, cursors, [&](std::size_t len) {
    T* o = dest.ptr;
    MESHPP_IVDEP
    for (std::size_t j = 0; j < len; ++j) o[j] = static_cast<T>(source.at(j));
  });
}
}  // namespace detail

namespace offending {
template <class DestMesh, class ExprMesh>
inline constexpr bool destination_on_another_mesh_type = false;
template <class DestShape, class ExprShape>
inline constexpr bool destination_has_another_dim_set = false;
template <class ExprRule, class DestLayout>
inline constexpr bool expression_rule_the_destination_lacks =
    std::is_same_v<ExprRule, detail::no_dim>;
}  // namespace offending

// assign_expression(dest, e): dest = e, element by element, in one pass; no communication.
// Transposes by name when dest lists the dims in another order. (tensor's converting
// constructor and operator= from an expression call this: its checks are theirs.)
template <class Dest, class E>
requires is_tensor_v<Dest> && is_expression_v<E>
void assign_expression(Dest& dest, const E& expression) {
  const auto& e = detail::as_expression(expression);
  using S = typename Dest::shape_type;
  using ES = typename E::shape_type;
  static_assert(same_dims_v<S, ES> || offending::destination_has_another_dim_set<S, ES>,
                "meshpp::assign_expression(dest, e) (dest = e): dest and e have different sets "
                "of dims");
  static_assert(std::is_same_v<typename Dest::mesh_type, typename E::mesh_type> ||
                    offending::destination_on_another_mesh_type<typename Dest::mesh_type,
                                                                typename E::mesh_type>,
                "meshpp::assign_expression(dest, e) (dest = e): dest and e live on meshes of "
                "different types");
  // If this fails, e splits a dim that dest holds whole or splits over another mesh dim:
  // filling dest needs communication. The condition names e's rule and dest's layout.
  static_assert(offending::expression_rule_the_destination_lacks<
                    typename detail::assignable_layout<typename Dest::layout_type,
                                                       typename E::layout_type, S>::offending_rule,
                    typename Dest::layout_type>,
                "meshpp::assign_expression(dest, e) (dest = e): e splits a dim that dest does not "
                "split the same way; that needs communication: relayout explicitly");
  if constexpr (same_dims_v<S, typename E::shape_type> &&
                std::is_same_v<typename Dest::mesh_type, typename E::mesh_type>) {
    if (!(dest.mesh() == *e.mesh_ptr())) {
      detail::fail({"meshpp::assign_expression(dest, e) (dest = e): dest and e live on different ",
                    "meshes"});
    }
    detail::agree_assigned_sizes(dest.global_shape().data(), e.global_sizes().data(),
                                 permutation_v<ES, S>.data(), S::rank, dim_names_v<S>.data());
    dest.mesh().counters().streamed([&] { return e.bytes_read(); });
    if (dest.mesh().planning()) return;  // a plan computes nothing
    const frame<S> fr{dest.local_shape(), dest.local_offsets()};
    detail::evaluate_into(e, fr, dest.local().data());
  }
}

// eval(e): a new tensor holding e, with e's dims (in e's order) and layout
template <class E>
requires std::is_base_of_v<expression_node, std::remove_cvref_t<E>>
auto eval(const E& e) {
  using result = tensor<typename E::value_type, typename E::shape_type, typename E::layout_type,
                        typename E::mesh_type>;
  result out(*e.mesh_ptr(), e.sizes(), result::uninitialized);
  assign_expression(out, e);
  return out;
}
// eval(t): a tensor is already evaluated; a copy
template <class T, class S, class L, class M>
tensor<T, S, L, M> eval(const tensor<T, S, L, M>& t) {
  return t;
}

namespace detail {
// What core/tensor.hpp's conversions between tensors call (see its declaration there).
template <class T>
struct include_meshpp_expr_evaluate_hpp {
  template <class Dest, class Source>
  static void assign(Dest& dest, const Source& source) {
    assign_expression(dest, source);
  }
};
}  // namespace detail

}  // namespace meshpp
