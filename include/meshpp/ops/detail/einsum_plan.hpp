// meshpp/ops/detail/einsum_plan.hpp — what einsum decides at compile time, from the shapes
// and layouts of its inputs and output: the dim groups (batch, M, N, K, summed out), the layout
// the product runs under, the mesh dims its partial sums are split over, and which way the
// sums across ranks go (allreduce, reduce_scatter, fused into the ring, or moved operands).
#pragma once

#include <cstddef>
#include <type_traits>

#include "meshpp/core/layout.hpp"
#include "meshpp/core/shape.hpp"
#include "meshpp/core/tensor.hpp"
#include "meshpp/expr/expression.hpp"

namespace meshpp::detail {

/// The compile-time plan of einsum<Out>(a, b).
template <class Out, class SA, class SB, class LA, class LB>
struct einsum_plan {
  using shared = shape_intersection_t<SA, SB>;
  using batch = shape_intersection_t<shared, Out>;
  using contract = shape_difference_t<shared, Out>;
  using m = shape_difference_t<shape_intersection_t<SA, Out>, SB>;
  using n = shape_difference_t<shape_intersection_t<SB, Out>, SA>;
  using a_only = shape_difference_t<shape_difference_t<SA, SB>, Out>;
  using b_only = shape_difference_t<shape_difference_t<SB, SA>, Out>;

  using merge = layout_merge<LA, LB>;
  using all_dims = shape_union_t<SA, SB>;
  // Every dim of the computation under one layout: a dim split in one input and whole in the
  // other is read at this rank's stripe from the other (free slicing).
  using full_layout = layout_for_t<typename merge::type, all_dims>;
  using out_layout = layout_for_t<typename merge::type, Out>;
  using summed = shape_concat_t<shape_concat_t<contract, a_only>, b_only>;
  using summed_mesh_dims = split_mesh_dims_t<full_layout, summed>;

  using a_order = shape_concat_t<shape_concat_t<batch, m>, contract>;
  using a_order_t = shape_concat_t<shape_concat_t<batch, contract>, m>;
  using b_order = shape_concat_t<shape_concat_t<batch, contract>, n>;
  using b_order_t = shape_concat_t<shape_concat_t<batch, n>, contract>;
  using c_order = shape_concat_t<shape_concat_t<batch, m>, n>;
  using c_order_t = shape_concat_t<shape_concat_t<batch, n>, m>;
};

template <class Out, class SA, class SB>
struct first_output_dim_in_no_input;
template <class... Out, class SA, class SB>
struct first_output_dim_in_no_input<shape<Out...>, SA, SB> {
  using type =
      first_found_t<std::conditional_t<contains_v<SA, Out> || contains_v<SB, Out>, no_dim, Out>...>;
};

/// What einsum<Out>(a, b) checks at compile time; each member names the offender, or no_dim.
template <class Out, class A, class B>
struct einsum_check {
  using SA = typename A::shape_type;
  using SB = typename B::shape_type;
  using plan = einsum_plan<Out, SA, SB, typename A::layout_type, typename B::layout_type>;
  using missing_output_dim = typename first_output_dim_in_no_input<Out, SA, SB>::type;
  using conflict = typename plan::merge::conflict;  // b's rule
  using conflict_with = rule_in_t<typename A::layout_type, conflict>;
  using clash = mesh_dim_clash<typename plan::full_layout>;
  static constexpr bool ok = std::is_same_v<missing_output_dim, no_dim> &&
                             std::is_same_v<conflict, no_dim> &&
                             std::is_same_v<typename clash::first, no_dim> &&
                             std::is_same_v<typename A::mesh_type, typename B::mesh_type>;
};

// scatter_plan: for einsum<Out, OutRules>, the output dims that are whole in the natural
// result but requested split over a mesh dim the summed dims are split over: those get a
// reduce_scatter over that mesh dim instead of an allreduce and a slice.
template <class Out, class Natural, class Requested, class Summed>
struct scatter_plan {
  template <class D>
  static constexpr bool scattered = [] {
    if constexpr (is_split_in_v<Natural, D> || !is_split_in_v<Requested, D>)
      return false;
    else
      return contains_v<Summed, mesh_dim_of_t<Requested, D>>;
  }();
  template <class D>
  using rule =
      std::conditional_t<scattered<D>, layout<split<D, mesh_dim_of_t<Requested, D>>>, layout<>>;
  // a function, not a lambda in decltype: clang 14 crashes reading such a lambda back from a
  // precompiled header (the tests' PCH)
  template <class... Dims>
  static auto rules_of(shape<Dims...>*) {
    return (layout<>{} + ... + rule<Dims>{});
  }
  using rules = decltype(rules_of(static_cast<Out*>(nullptr)));
  using allreduced = shape_difference_t<Summed, split_mesh_dims_t<rules, Out>>;
};

// ring_plan<Plan, Scatter, Out>: whether einsum<Out, OutRules> fuses its product with the
// reduce_scatter (reduce_scatter_ring): exactly one output dim d is scattered, over mesh dim md,
// and nothing else is allreduced; no batch dims; the output in gemm order ([M, N] or [N, M]),
// and d the first of the M or of the N dims, so that block j of the output (d's stripe j) is
// one gemm on a stripe of a's M rows or b's N columns, written as one run of memory.
struct no_rule {
  using tensor_dim = no_dim;
  using mesh_dim = no_dim;
};
template <class L>
struct single_rule {
  static constexpr bool value = false;
  using type = no_rule;
};
template <class R>
struct single_rule<layout<R>> {
  static constexpr bool value = true;
  using type = R;
};
template <class S, class D>
inline constexpr bool leads_v = [] {
  if constexpr (S::rank == 0)
    return false;
  else
    return std::is_same_v<dim_at_t<S, 0>, D>;
}();
template <class Plan, class Scatter, class Out>
struct ring_plan {
  using rule = typename single_rule<typename Scatter::rules>::type;
  using dim = typename rule::tensor_dim;
  using mesh_dim = typename rule::mesh_dim;
  static constexpr bool along_m = leads_v<typename Plan::m, dim>;
  static constexpr bool out_is_ct = std::is_same_v<Out, typename Plan::c_order_t>;
  static constexpr bool applies = single_rule<typename Scatter::rules>::value &&
                                  Scatter::allreduced::rank == 0 && Plan::batch::rank == 0 &&
                                  (std::is_same_v<Out, typename Plan::c_order> || out_is_ct) &&
                                  (along_m || leads_v<typename Plan::n, dim>);
};

// fused_with_reduce_scatter<Plan, Out, OutRules>(): einsum<Out, OutRules> takes ring_product
template <class Plan, class Out, class OutRules>
constexpr bool fused_with_reduce_scatter() {
  if constexpr (std::is_void_v<OutRules>) {
    return false;
  } else {
    using requested = layout_for_t<OutRules, Out>;
    using sp =
        scatter_plan<Out, typename Plan::out_layout, requested, typename Plan::summed_mesh_dims>;
    return ring_plan<Plan, sp, Out>::applies;
  }
}

// einsum_fuses_reduce_scatter_v<Out, OutRules, A, B>: einsum<Out, OutRules>(a, b) makes its
// product block by block around the ring (ring_product), as the tests check
template <class Out, class OutRules, class A, class B>
inline constexpr bool einsum_fuses_reduce_scatter_v =
    fused_with_reduce_scatter<einsum_plan<Out, typename A::shape_type, typename B::shape_type,
                                          typename A::layout_type, typename B::layout_type>,
                              Out, OutRules>();

// without_mesh_dim_t<M, L>: L without its rule onto mesh dim M, if any
template <class M, class L>
struct without_mesh_dim;
template <class M, class... R>
struct without_mesh_dim<M, layout<R...>> {
  using type = decltype((
      layout<>{} + ... +
      std::conditional_t<std::is_same_v<typename R::mesh_dim, M>, layout<>, layout<R>>{}));
};
template <class M, class L>
using without_mesh_dim_t = typename without_mesh_dim<M, L>::type;

// operand_gather_plan<Out, OutRules, A, B>: the alternative to ring_product for the same einsum
// when both inputs are tensors and nothing but contracted dims is summed: move the operands instead
// of the partial sums. The contracted dim leaves mesh dim md and the scattered output dim d takes
// it, in whichever input has d; the other input is gathered whole along md:
//   [d, k/md] x [k/md, n] |-> [d/md, k] x [k, n]   alltoall of a, allgather of b over md
// then a local product with no sum across ranks. Values sent per rank: (p-1)/p |a_local| +
// (p-1) |b_local| (d in a; swap a and b when d is in b) against the ring's (p-1)/p |C_local|,
// C the whole local partial product: moving the operands is chosen when it sends fewer
// (a small contracted dim, e.g. a rank-k update).
template <class Out, class OutRules, class A, class B>
struct operand_gather_plan {
  using plan = einsum_plan<Out, typename A::shape_type, typename B::shape_type,
                           typename A::layout_type, typename B::layout_type>;
  using scatter = scatter_plan<Out, typename plan::out_layout, layout_for_t<OutRules, Out>,
                               typename plan::summed_mesh_dims>;
  using ring = ring_plan<plan, scatter, Out>;
  static constexpr bool applies = is_tensor_v<A> && is_tensor_v<B> && ring::applies &&
                                  plan::a_only::rank == 0 && plan::b_only::rank == 0;
  using md = typename ring::mesh_dim;
  // moved_layout<X>: X's layout once moved (an alias template: formed only where applies)
  template <class X>
  using moved_layout = layout_for_t<
      layout_merge_t<without_mesh_dim_t<md, typename X::layout_type>, layout<typename ring::rule>>,
      typename X::shape_type>;
  // counted(x, p): x's local size, with its dim split over md counted at its longest stripe
  // (the members of md's group hold stripes of different sizes where the split is uneven, and
  // must all make the same choice; they agree on every other dim)
  template <class X>
  static std::size_t counted(const X& x, std::size_t p) {
    std::size_t n = 1;
    for_each_index<X::rank>([&](auto i) {
      using dim = dim_at_t<typename X::shape_type, i.value>;
      if constexpr (std::is_same_v<mesh_dim_of_t<typename X::layout_type, dim>, md>)
        n *= (x.template extent<dim>() + p - 1) / p;
      else
        n *= x.local_shape()[i];
    });
    return n;
  }
  // gathers_less(a, b, p): moving the operands sends fewer values than the ring (the same
  // answer on every member of md's group)
  static bool gathers_less(const A& a, const B& b, std::size_t p) {
    const std::size_t moved =
        ring::along_m ? counted(a, p) + p * counted(b, p) : counted(b, p) + p * counted(a, p);
    std::size_t product = 1;  // the whole local partial product: p times the result's block
    for_each_index<Out::rank>([&](auto i) {
      using dim = dim_at_t<Out, i.value>;
      if constexpr (contains_v<typename A::shape_type, dim>)
        product *= a.local_shape()[index_of_v<typename A::shape_type, dim>];
      else
        product *= b.local_shape()[index_of_v<typename B::shape_type, dim>];
    });
    return moved < product;
  }
};

}  // namespace meshpp::detail
