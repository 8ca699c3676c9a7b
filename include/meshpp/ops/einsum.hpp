// meshpp/ops/einsum.hpp — einsum over named dims: local BLAS contraction, then one allreduce.
//
//   einsum<shape<batch, hidden>>(x, w)     x[batch, io] w[io, hidden]: contracts io
//   einsum<shape<b, h, q, k>>(q, k)        batch dims (b, h) are in both inputs and the output
//   einsum<shape<hidden, batch>>(x)        one operand: transpose and sum out the rest
//
// [batch/rows, io/planes] x [io/planes, hidden/cols] |-> [batch/rows, hidden/cols]
//     local gemm of the slices, then allreduce over planes (io is contracted and split there)
//
// Dims of the inputs fall into four groups: batch (both inputs and the output), M (first
// input and output), N (second input and output), K (both inputs, not the output: contracted).
// A dim in one input only and not in the output is summed out of that input first. Locally
// this is a batched matrix product C[batch, M, N] = A[batch, M, K] B[batch, K, N], one
// cblas_sgemm/dgemm per batch index. An operand goes to gemm as it lies when it is a tensor
// whose dims are already [batch..., M..., K...] or [batch..., K..., M...] (gemm transposes
// it); otherwise it is copied once, in one fused pass, into that order (an expression operand
// is evaluated straight into it). The output is written in place when it is [batch, M, N] or
// [batch, N, M] (computed as B^T A^T), else through one transposing copy.
// Then one allreduce runs over the mesh dims that the summed dims are split over.
#pragma once

#include <cblas.h>

#include <algorithm>
#include <cstddef>
#include <span>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "meshpp/comm/collectives.hpp"
#include "meshpp/comm/reduce_scatter_ring.hpp"
#include "meshpp/core/blocks.hpp"
#include "meshpp/core/layout.hpp"
#include "meshpp/core/shape.hpp"
#include "meshpp/core/tensor.hpp"
#include "meshpp/expr/evaluate.hpp"
#include "meshpp/expr/expression.hpp"
#include "meshpp/ops/reduce.hpp"
#include "meshpp/ops/relayout.hpp"

namespace meshpp {

namespace offending {
template <class Dim>
inline constexpr bool output_dim_appears_in_no_input = std::is_same_v<Dim, detail::no_dim>;
template <class Rule, class OtherRule>
inline constexpr bool inputs_split_a_shared_dim_over_two_mesh_dims =
    std::is_same_v<Rule, detail::no_dim>;
template <class Rule, class OtherRule>
inline constexpr bool two_dims_of_the_einsum_on_one_mesh_dim = std::is_same_v<Rule, detail::no_dim>;
template <class Mesh, class OtherMesh>
inline constexpr bool inputs_on_meshes_of_different_types = std::is_same_v<Mesh, OtherMesh>;
}  // namespace offending

namespace detail {

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

template <class Fr>
std::size_t product_of(const Fr& fr, std::size_t first, std::size_t count) {
  std::size_t p = 1;
  for (std::size_t i = first; i < first + count; ++i) p *= fr.extent[i];
  return p;
}

/// An operand made ready for gemm: a pointer to [batch, X, Y] data and whether it lies as
/// [batch, Y, X] (transposed). Owns a buffer when it had to be copied.
template <class T>
struct gemm_operand {
  const T* data = nullptr;
  bool transposed = false;
  scratch<T> buffer;  // overwritten whole: not zeroed first
};

// prepare<Order, OrderT, Layout>(x, mesh): x's local data over the frame `Layout` gives it,
// as Order (or OrderT, transposed) without a copy where x is a tensor lying that way and
// split exactly so; else one fused copy into Order.
template <class Order, class OrderT, class Layout, class T, class X, class Mesh>
gemm_operand<T> prepare(const X& x, const Mesh& m) {
  gemm_operand<T> g;
  if constexpr (is_tensor_v<X>) {
    using S = typename X::shape_type;
    constexpr bool same_split = std::is_same_v<typename X::layout_type, layout_for_t<Layout, S>>;
    constexpr bool same_type = std::is_same_v<typename X::value_type, T>;
    if constexpr (same_split && same_type && std::is_same_v<S, Order>) {
      g.data = x.local().data();
      return g;
    } else if constexpr (same_split && same_type && std::is_same_v<S, OrderT>) {
      g.data = x.local().data();
      g.transposed = true;
      return g;
    }
  }
  const auto& e = as_expression(x);
  const frame<Order> fr = local_frame<Order, layout_for_t<Layout, Order>>(m, e);
  std::size_t count = 1;
  for (std::size_t v : fr.extent) count *= v;
  g.buffer.resize(count);
  evaluate_into(e, fr, g.buffer.data());
  g.data = g.buffer.data();
  return g;
}

// gemm<T>(...): c = a b (accumulate false) or c += a b (true), row-major, a and b optionally
// transposed
template <class T>
void gemm(bool trans_a, bool trans_b, std::size_t m, std::size_t n, std::size_t k, const T* a,
          std::size_t lda, const T* b, std::size_t ldb, T* c, std::size_t ldc,
          bool accumulate = false) {
  if (m == 0 || n == 0) return;
  if (k == 0) {  // an empty sum: zeros (BLAS would reject the leading dimension 0)
    if (!accumulate) {
      for (std::size_t i = 0; i < m; ++i) std::fill(c + i * ldc, c + i * ldc + n, T{});
    }
    return;
  }
  const auto ta = trans_a ? CblasTrans : CblasNoTrans;
  const auto tb = trans_b ? CblasTrans : CblasNoTrans;
  const auto im = static_cast<blasint>(m), in = static_cast<blasint>(n),
             ik = static_cast<blasint>(k);
  if constexpr (std::is_same_v<T, float>) {
    cblas_sgemm(CblasRowMajor, ta, tb, im, in, ik, 1.0f, a, static_cast<blasint>(lda), b,
                static_cast<blasint>(ldb), accumulate ? 1.0f : 0.0f, c, static_cast<blasint>(ldc));
  } else if constexpr (std::is_same_v<T, double>) {
    cblas_dgemm(CblasRowMajor, ta, tb, im, in, ik, 1.0, a, static_cast<blasint>(lda), b,
                static_cast<blasint>(ldb), accumulate ? 1.0 : 0.0, c, static_cast<blasint>(ldc));
  } else {  // no BLAS for this type: a plain triple loop
    for (std::size_t i = 0; i < m; ++i) {
      for (std::size_t j = 0; j < n; ++j) {
        T sum{};
        for (std::size_t p = 0; p < k; ++p) {
          sum += a[trans_a ? p * lda + i : i * lda + p] * b[trans_b ? j * ldb + p : p * ldb + j];
        }
        c[i * ldc + j] = accumulate ? T(c[i * ldc + j] + sum) : sum;
      }
    }
  }
}

// copy_permuted<From, To>(src, from_extent, dst): dst (row-major in To) = src (row-major in From)
template <class From, class To, class T>
void copy_permuted(const T* src, const std::array<std::size_t, From::rank>& from_extent, T* dst) {
  constexpr std::size_t n = To::rank;
  const auto from_strides = row_major_strides<From::rank>(from_extent);
  frame<To> fr{};
  leaf_cursor<T, n, access_of<From, To>()> source{src, {}};
  for_each_index<n>([&](auto i) {
    constexpr std::size_t j = index_of_v<From, dim_at_t<To, i.value>>;
    fr.extent[i] = from_extent[j];
    source.stride[i] = from_strides[j];
  });
  dest_cursor<T, n> dest{dst, row_major_strides<n>(fr.extent)};
  auto cursors = group(dest, source);
  for_each_row<n>(fr.extent, cursors, [&](std::size_t len) {
    for (std::size_t j = 0; j < len; ++j) dest.ptr[j] = source.at(j);
  });
}

// sized{e}: extents e where an expression's size<D>() is expected (local_frame)
template <class E>
struct sized {
  const E& sizes;
  template <class D>
  std::size_t size() const {
    return sizes.template get<D>();
  }
};

// einsum_sizes<Out>(a, b): the output's sizes, each from the input that has the dim
template <class Out, class XA, class XB>
auto einsum_sizes(const XA& a, const XB& b) {
  return [&]<class... Dims>(shape<Dims...>*) {
    [[maybe_unused]] auto size = [&]<class D>(D*) {  // unused when Out is shape<> (a dot product)
      if constexpr (contains_v<typename XA::shape_type, D>)
        return a.template size<D>();
      else
        return b.template size<D>();
    };
    return extents<Dims...>{dim_extent<Dims>{size(static_cast<Dims*>(nullptr))}...};
  }(static_cast<Out*>(nullptr));
}

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
  using rules = decltype([]<class... Dims>(shape<Dims...>*) {
    return (layout<>{} + ... + rule<Dims>{});
  }(static_cast<Out*>(nullptr)));
  using allreduced = shape_difference_t<Summed, split_mesh_dims_t<rules, Out>>;
};

// reduce_scatter_along<Rule>(x): [d, ...] partial sums over m |-> [d/m, ...] complete sums,
// Rule = split<d, m>: one reduce_scatter over m, block j of d to member j.
template <class Rule, class X>
auto reduce_scatter_along(const X& x) {
  using T = typename X::value_type;
  using S = typename X::shape_type;
  using d = typename Rule::tensor_dim;
  using m = typename Rule::mesh_dim;
  using Y = tensor<T, S, layout_for_t<layout_merge_t<typename X::layout_type, layout<Rule>>, S>,
                   typename X::mesh_type>;
  Y y(x.mesh(), x.sizes(), Y::uninitialized);
  const auto ext = x.local_shape();
  constexpr std::size_t ax = index_of_v<S, d>;
  const std::size_t p = static_cast<std::size_t>(x.mesh().template size<m>());
  auto chunk = ext;
  chunk[ax] /= p;
  const std::size_t count = x.local().size(), chunk_size = count / p;
  scratch<T> packed;
  const T* in = x.local().data();
  bool contiguous = true;
  for (std::size_t i = 0; i < ax; ++i) contiguous = contiguous && ext[i] == 1;
  if (!contiguous) {  // blocks of d are strided: pack them one after another
    packed.resize(count);
    std::array<std::size_t, S::rank> zero{}, at{};
    for (std::size_t j = 0; j < p; ++j) {
      at[ax] = j * chunk[ax];
      copy_box(x.local().data(), ext, at, packed.data() + j * chunk_size, chunk, zero, chunk);
    }
    in = packed.data();
  }
  reduce_scatter<over<m>, op::sum>::run(x.mesh(), std::span<const T>(in, count),
                                        std::span<T>(y.local().data(), chunk_size));
  return y;
}

template <class X>
auto reduce_scatter_all(X&& x, layout<>*) {
  return std::forward<X>(x);
}
template <class X, class R, class... Rest>
auto reduce_scatter_all(const X& x, layout<R, Rest...>*) {
  return reduce_scatter_all(reduce_scatter_along<R>(x), static_cast<layout<Rest...>*>(nullptr));
}

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

// ring_product<Ring, AlongM, OutIsCT>(mesh, ga, gb, m, n, k, out): the local product
// (m x n, k summed) made block by block by the ring policy Ring (reduce_scatter_ring or
// allreduce_ring), block j being stripe j of p of the flattened M (AlongM) or N: one gemm on a
// stripe of a's M rows or of b's N columns, written as one run of memory in the output order
// ([M, N], or [N, M] when OutIsCT). out: this member's block, or every block (allreduce_ring).
//   [.., k/md] x [k/md, ..] |-> [d/md, ..]   a reduce_scatter over md fused with the gemms
template <class Ring, bool AlongM, bool OutIsCT, class T, class Mesh>
void ring_product(const Mesh& mesh, const gemm_operand<T>& ga, const gemm_operand<T>& gb,
                  std::size_t m, std::size_t n, std::size_t k, std::span<T> out) {
  const std::size_t p = Ring::members(mesh);
  const std::size_t mb = AlongM ? m / p : m, nb = AlongM ? n : n / p;
  const std::size_t lda = ga.transposed ? m : k;
  const std::size_t ldb = gb.transposed ? k : n;
  auto make = [&](std::size_t j, T* dst, bool accumulate) {
    const T* aj = ga.data;
    const T* bj = gb.data;
    if constexpr (AlongM)
      aj += ga.transposed ? j * mb : j * mb * k;
    else
      bj += gb.transposed ? j * nb * k : j * nb;
    if constexpr (OutIsCT)  // C^T = B^T A^T
      gemm<T>(!gb.transposed, !ga.transposed, nb, mb, k, bj, ldb, aj, lda, dst, mb, accumulate);
    else
      gemm<T>(ga.transposed, gb.transposed, mb, nb, k, aj, lda, bj, ldb, dst, nb, accumulate);
  };
  Ring::template run<T>(mesh, out, make);
  mesh.counters().record_einsum(2ull * m * n * k);
}

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
  // gathers_less(a, b, p): moving the operands sends fewer values than the ring
  static bool gathers_less(const A& a, const B& b, std::size_t p) {
    const std::size_t moved = ring::along_m ? a.local().size() + p * b.local().size()
                                            : b.local().size() + p * a.local().size();
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

// laid_out<Rules>(x): x itself (moved, not copied) when Rules lay it out as it is, else
// relayout<Rules>(x)
template <class Rules, class X>
auto laid_out(X&& x) {
  using Xt = std::remove_cvref_t<X>;
  if constexpr (std::is_same_v<layout_for_t<Rules, typename Xt::shape_type>,
                               typename Xt::layout_type>)
    return Xt(std::forward<X>(x));
  else
    return relayout<Rules>(x);
}

// check_operands<Shared>(a, b): the inputs live on one mesh and agree on the sizes of the
// dims Shared they both have; else throws, on every rank alike, before any communication
template <class Shared, class XA, class XB>
void check_operands(const XA& a, const XB& b) {
  if (!(*a.mesh_ptr() == *b.mesh_ptr()))
    throw error("meshpp::einsum: the inputs live on different meshes");
  for_each_index<Shared::rank>([&](auto i) {
    using d = dim_at_t<Shared, i.value>;
    if (a.template size<d>() != b.template size<d>()) {
      throw error("meshpp::einsum: the inputs disagree on the size of dim '" +
                  std::string(d::name()) + "': " + std::to_string(a.template size<d>()) + " and " +
                  std::to_string(b.template size<d>()));
    }
  });
}

// einsum2<Out, OutRules>(a, b): the work of einsum<Out>(a, b) (OutRules void) or
// einsum<Out, OutRules>(a, b), once the checks there have passed. With `deferred` (OutRules
// void only), the final allreduce is left to the caller: the result holds partial sums over
// the mesh dims *deferred names.
template <class Out, class OutRules, class A, class B>
auto einsum2(const A& a_in, const B& b_in, unsigned* deferred = nullptr) {
  const auto& a = as_expression(a_in);
  const auto& b = as_expression(b_in);
  using XA = std::remove_cvref_t<decltype(a)>;
  using XB = std::remove_cvref_t<decltype(b)>;
  using SA = typename XA::shape_type;
  using SB = typename XB::shape_type;
  using plan = einsum_plan<Out, SA, SB, typename XA::layout_type, typename XB::layout_type>;
  using T = std::common_type_t<typename XA::value_type, typename XB::value_type>;
  using Mesh = typename XA::mesh_type;
  const Mesh& mesh = *a.mesh_ptr();
  check_operands<typename plan::shared>(a, b);

  using result_t = tensor<T, Out, typename plan::out_layout, Mesh>;
  using L = typename plan::full_layout;
  const auto out_sizes = einsum_sizes<Out>(a, b);
  // Local group sizes, from the frame of the output order [batch, M, N] and of K.
  const auto fr_c = local_frame<typename plan::c_order, layout_for_t<L, typename plan::c_order>>(
      mesh, sized{out_sizes});
  // Dims in one input only, not in the output: summed out locally first (partial sums when
  // split; the final allreduce completes them).
  auto reduced_a = [&]() -> decltype(auto) {
    if constexpr (plan::a_only::rank == 0)
      return (a);
    else
      return tensor_leaf<
          decltype(reduce_local<op::sum, shape_difference_t<SA, typename plan::a_only>>(a)), true>(
          reduce_local<op::sum, shape_difference_t<SA, typename plan::a_only>>(a));
  };
  auto reduced_b = [&]() -> decltype(auto) {
    if constexpr (plan::b_only::rank == 0)
      return (b);
    else
      return tensor_leaf<
          decltype(reduce_local<op::sum, shape_difference_t<SB, typename plan::b_only>>(b)), true>(
          reduce_local<op::sum, shape_difference_t<SB, typename plan::b_only>>(b));
  };
  const auto& ra = reduced_a();
  const auto& rb = reduced_b();

  auto ga = [&] {
    if constexpr (requires { ra.get(); })
      return prepare<typename plan::a_order, typename plan::a_order_t, L, T>(ra.get(), mesh);
    else
      return prepare<typename plan::a_order, typename plan::a_order_t, L, T>(ra, mesh);
  }();
  auto gb = [&] {
    if constexpr (requires { rb.get(); })
      return prepare<typename plan::b_order, typename plan::b_order_t, L, T>(rb.get(), mesh);
    else
      return prepare<typename plan::b_order, typename plan::b_order_t, L, T>(rb, mesh);
  }();

  const std::size_t nb = product_of(fr_c, 0, plan::batch::rank);
  const std::size_t m = product_of(fr_c, plan::batch::rank, plan::m::rank);
  const std::size_t n = product_of(fr_c, plan::batch::rank + plan::m::rank, plan::n::rank);
  std::size_t k = 1;
  {
    const auto fr_k =
        local_frame<typename plan::contract, layout_for_t<L, typename plan::contract>>(mesh, a);
    for (std::size_t v : fr_k.extent) k *= v;
  }

  if constexpr (fused_with_reduce_scatter<plan, Out, OutRules>()) {
    // the product fused with its reduce_scatter: one gemm per block, summed around the ring
    using requested = layout_for_t<OutRules, Out>;
    using sp =
        scatter_plan<Out, typename plan::out_layout, requested, typename plan::summed_mesh_dims>;
    using Y =
        tensor<T, Out,
               layout_for_t<layout_merge_t<typename plan::out_layout, typename sp::rules>, Out>,
               Mesh>;
    using ring = ring_plan<plan, sp, Out>;
    Y y(mesh, out_sizes, Y::uninitialized);
    ring_product<reduce_scatter_ring<over<typename ring::mesh_dim>>, ring::along_m,
                 ring::out_is_ct>(mesh, ga, gb, m, n, k,
                                  std::span<T>(y.local().data(), y.local().size()));
    return laid_out<requested>(std::move(y));
  } else {
    result_t out(mesh, out_sizes, result_t::uninitialized);
    constexpr bool out_is_c = std::is_same_v<Out, typename plan::c_order>;
    constexpr bool out_is_ct = !out_is_c && std::is_same_v<Out, typename plan::c_order_t>;
    if constexpr (std::is_void_v<OutRules> && plan::batch::rank == 0 && (out_is_c || out_is_ct) &&
                  plan::summed_mesh_dims::rank > 0) {
      // the product fused with its allreduce: blocks of the output's outer dim summed around
      // the ring, then allgathered, when they divide evenly (the same on every rank)
      using ring = allreduce_ring<over_t<typename plan::summed_mesh_dims>>;
      if (!deferred && (out_is_ct ? n : m) % ring::members(mesh) == 0) {
        ring_product<ring, !out_is_ct, out_is_ct>(
            mesh, ga, gb, m, n, k, std::span<T>(out.local().data(), out.local().size()));
        return out;
      }
    }
    scratch<T> c_buffer;  // overwritten whole by gemm
    T* c = out.local().data();
    if constexpr (!out_is_c && !out_is_ct) {
      c_buffer.resize(nb * m * n);
      c = c_buffer.data();
    }
    const std::size_t lda = ga.transposed ? m : k;
    const std::size_t ldb = gb.transposed ? k : n;
    for (std::size_t i = 0; i < nb; ++i) {
      const T* ai = ga.data + i * m * k;
      const T* bi = gb.data + i * k * n;
      T* ci = c + i * m * n;
      if constexpr (out_is_ct) {  // C^T = B^T A^T
        gemm<T>(!gb.transposed, !ga.transposed, n, m, k, bi, ldb, ai, lda, ci, m);
      } else {
        gemm<T>(ga.transposed, gb.transposed, m, n, k, ai, lda, bi, ldb, ci, n);
      }
    }
    if constexpr (!out_is_c && !out_is_ct) {
      copy_permuted<typename plan::c_order, Out>(c, fr_c.extent, out.local().data());
    }
    mesh.counters().record_einsum(2ull * nb * m * n * k);

    if constexpr (std::is_void_v<OutRules>) {
      if (deferred) {
        *deferred = mesh_mask_v<Mesh, typename plan::summed_mesh_dims>;
        return out;
      }
      allreduce<over_t<typename plan::summed_mesh_dims>, op::sum>::run(
          mesh, std::span(out.local().data(), out.local().size()));
      return out;
    } else {
      using requested = layout_for_t<OutRules, Out>;
      using sp =
          scatter_plan<Out, typename plan::out_layout, requested, typename plan::summed_mesh_dims>;
      allreduce<over_t<typename sp::allreduced>, op::sum>::run(
          mesh, std::span(out.local().data(), out.local().size()));
      return laid_out<requested>(
          reduce_scatter_all(std::move(out), static_cast<typename sp::rules*>(nullptr)));
    }
  }
}

// einsum_partial<Out>(a, b): einsum<Out>(a, b) before its final allreduce, and the mesh dims
// (a bit set) that allreduce would run over: for a caller that adds several such results and
// sums them across ranks once (gradients, autodiff/traced.hpp)
template <class Out, class A, class B>
auto einsum_partial(const A& a, const B& b) {
  static_assert(einsum_check<Out, A, B>::ok,
                "meshpp::einsum_partial<Out>(a, b): einsum<Out>(a, b) is not legal");
  unsigned mask = 0;
  auto out = einsum2<Out, void>(a, b, &mask);
  return std::pair{std::move(out), mask};
}

}  // namespace detail

// einsum<Out>(a, b): the sum over every dim not in Out of the products a * b, by name.
template <class Out, class A, class B>
requires is_shape_v<Out> && is_expression_v<A> && is_expression_v<B>
auto einsum(const A& a, const B& b) {
  using check = detail::einsum_check<Out, A, B>;
  static_assert(offending::output_dim_appears_in_no_input<typename check::missing_output_dim>,
                "meshpp::einsum<Out>(a, b): an output dim appears in no input");
  // If this fails, a dim of both inputs is split over one mesh dim in a and another in b:
  // no rank holds matching stripes of both. The condition names a's rule and b's rule.
  static_assert(
      offending::inputs_split_a_shared_dim_over_two_mesh_dims<typename check::conflict_with,
                                                              typename check::conflict>,
      "meshpp::einsum<Out>(a, b): a dim of both inputs is split over different mesh "
      "dims in each; relayout one of them first");
  // If this fails, each input's layout is legal but together they split two dims of the
  // computation (output, contracted or summed out) over one mesh dim (Mesh-TensorFlow paper
  // 8.5): the condition names the two rules.
  static_assert(offending::two_dims_of_the_einsum_on_one_mesh_dim<typename check::clash::first,
                                                                  typename check::clash::second>,
                "meshpp::einsum<Out>(a, b): the inputs' layouts put two dims of the computation "
                "(output or summed) on one mesh dim");
  static_assert(
      offending::inputs_on_meshes_of_different_types<typename A::mesh_type, typename B::mesh_type>,
      "meshpp::einsum<Out>(a, b): the inputs live on meshes of different types");
  if constexpr (check::ok) return detail::einsum2<Out, void>(a, b);  // else: only the errors above
}

// einsum<Out, OutRules>(a, b): the same, laid out by OutRules (restricted to Out). An output
// dim requested split over a mesh dim that the summed dims are split over gets one
// reduce_scatter over it (each rank receives only its stripe of the sums: half the bytes of
// an allreduce) instead of an allreduce and a local slice; any other difference from the
// natural layout is a relayout (relayout.hpp).
//   [b/rows, h] x [h, io/cols]... einsum<shape<b, io>, layout<split<b, rows>, split<io, cols>>>
template <class Out, class OutRules, class A, class B>
requires is_shape_v<Out> && is_layout_v<OutRules> && is_expression_v<A> && is_expression_v<B>
auto einsum(const A& a, const B& b) {
  using check = detail::einsum_check<Out, A, B>;
  using requested = layout_for_t<OutRules, Out>;
  static_assert(check::ok,
                "meshpp::einsum<Out, OutRules>(a, b): einsum<Out>(a, b) is not legal "
                "(compile einsum<Out>(a, b) for the reason)");
  static_assert(offending::result_has_two_dims_on_one_mesh_dim<
                    typename detail::mesh_dim_clash<requested>::first,
                    typename detail::mesh_dim_clash<requested>::second>,
                "meshpp::einsum<Out, OutRules>(a, b): the requested output layout puts two dims "
                "on one mesh dim");
  if constexpr (check::ok) {
    // The requested layout's sizes are checked first, on every rank, before any collective.
    using final_t = tensor<std::common_type_t<typename A::value_type, typename B::value_type>, Out,
                           requested, typename A::mesh_type>;
    (void)final_t(*detail::as_expression(a).mesh_ptr(),
                  detail::einsum_sizes<Out>(detail::as_expression(a), detail::as_expression(b)),
                  final_t::uninitialized);
    using gather = detail::operand_gather_plan<Out, OutRules, A, B>;
    if constexpr (gather::applies) {
      // the inputs' sizes are checked before the operands move
      detail::check_operands<typename gather::plan::shared>(detail::as_expression(a),
                                                            detail::as_expression(b));
      const auto p = static_cast<std::size_t>(a.mesh().template size<typename gather::md>());
      if (gather::gathers_less(a, b, p)) {  // sizes only: the same choice on every rank
        return detail::einsum2<Out, OutRules>(
            relayout<typename gather::template moved_layout<A>>(a),
            relayout<typename gather::template moved_layout<B>>(b));
      }
    }
    return detail::einsum2<Out, OutRules>(a, b);
  }
}

// einsum<Out>(a): a transposed to Out, with a's other dims summed out (reduce_sum<Out>)
template <class Out, class A>
requires is_shape_v<Out> && is_expression_v<A>
auto einsum(const A& a) {
  using missing_output_dim =
      typename detail::first_output_dim_in_no_input<Out, typename A::shape_type, shape<>>::type;
  static_assert(offending::output_dim_appears_in_no_input<missing_output_dim>,
                "meshpp::einsum<Out>(a): an output dim is not a dim of a");
  if constexpr (std::is_same_v<missing_output_dim, detail::no_dim>) return reduce_sum<Out>(a);
}

}  // namespace meshpp
