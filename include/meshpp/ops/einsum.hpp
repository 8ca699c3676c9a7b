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
// it), or, with batch dims, whose two groups of matrix dims (M and K for the first operand, K
// and N for the second) each stand together in the plan's order, one of them last, and the
// batch dims anywhere else: matrices whose rows lie a leading dimension apart, each batch dim
// with its own stride (attention's q[b, s, h, d]: [s, d] matrices for each (b, h), rows h * d
// apart). Either way the operand must be split as the product runs. Otherwise it is copied
// once, in one fused pass, into [batch..., M..., K...] (an expression operand is evaluated
// straight into it). The output is written in place when it is [batch, M, N] or [batch, N, M]
// (computed as B^T A^T) or strided so (M and N each together, one of them last), else through
// one transposing copy.
// Then one allreduce runs over the mesh dims that the summed dims are split over.
//
// Here: the public einsum and its dispatch. The compile-time plan is in
// ops/detail/einsum_plan.hpp, the local product (gemm) in ops/einsum_kernel.hpp, the
// ring that fuses the product with its sum across ranks in ops/detail/einsum_ring.hpp, the
// reduce_scatter of a finished partial product in ops/reduce_scatter_sums.hpp.
#pragma once

#include <array>
#include <cstddef>
#include <span>
#include <string>
#include <type_traits>
#include <utility>

#include "meshpp/comm/collectives.hpp"
#include "meshpp/comm/reduce_scatter_ring.hpp"
#include "meshpp/core/layout.hpp"
#include "meshpp/core/shape.hpp"
#include "meshpp/core/tensor.hpp"
#include "meshpp/expr/evaluate.hpp"
#include "meshpp/expr/expression.hpp"
#include "meshpp/ops/detail/complete_sums.hpp"
#include "meshpp/ops/detail/einsum_plan.hpp"
#include "meshpp/ops/detail/einsum_ring.hpp"
#include "meshpp/ops/einsum_kernel.hpp"
#include "meshpp/ops/operands.hpp"
#include "meshpp/ops/reduce.hpp"
#include "meshpp/ops/reduce_scatter_sums.hpp"
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

// sized{e}: extents e where an expression's size<D>() is expected (local_frame)
template <class E>
struct sized {
  const E& sizes;
  template <class D>
  std::size_t size() const {
    return sizes.template get<D>();
  }
};
template <class E>
sized(const E&) -> sized<E>;  // (aggregate deduction: g++ 12 has it, clang 14 does not)

// summed_out<Drop>(x): expression x with its dims Drop summed out locally (partial sums where
// they are split: the final allreduce completes them), as a tensor; x itself when Drop is
// empty, a leaf's tensor rather than the leaf, so that prepare can take it as it lies
template <class Drop, class X>
decltype(auto) summed_out(const X& x) {
  if constexpr (Drop::rank != 0)
    return reduce_local<op::sum, shape_difference_t<typename X::shape_type, Drop>>(x);
  else if constexpr (requires { x.get(); })
    return x.get();
  else
    return (x);
}

// --- einsum's strategies ------------------------------------------------------------------
// Each run of an einsum takes one einsum_strategy (core/counters.hpp), the first of these that
// applies, and records it in its operation's row:
//   ring_reduce_scatter  einsum<Out, OutRules> whose one scattered output dim leads M or N and
//                        splits evenly: one gemm per block, summed around the ring
//   ring_allreduce       einsum<Out> with summed mesh dims, no batch dims, the output in gemm
//                        order and its outer dim divided by the group: the same ring, then an
//                        allgather (not when the caller defers the sum)
//   in_place, transposed, strided, strided_transposed, copied: the output's form, fixed by the
//                        types (output_form_v): gemm writes it as it lies, as C^T = B^T A^T,
//                        with rows ld apart (or so transposed), or into a buffer then copied
// then the sums across ranks the layouts imply: an allreduce (or, with OutRules, a
// reduce_scatter or allreduce and slice) over the summed mesh dims.

// output_form_v<Plan, Out>: how gemm writes einsum<Out>'s output when no ring applies
template <class Plan, class Out>
inline constexpr einsum_strategy output_form_v = [] {
  using batch = typename Plan::batch;
  if constexpr (std::is_same_v<Out, typename Plan::c_order>)
    return einsum_strategy::in_place;
  else if constexpr (std::is_same_v<Out, typename Plan::c_order_t>)
    return einsum_strategy::transposed;
  else if constexpr (strided_fit_v<Out, batch, typename Plan::m, typename Plan::n>)
    return einsum_strategy::strided;
  else if constexpr (strided_fit_v<Out, batch, typename Plan::n, typename Plan::m>)
    return einsum_strategy::strided_transposed;
  else
    return einsum_strategy::copied;
}();

// ring_allreduce_fits_v<Plan, Out, OutRules, Mesh>: the product may fuse with its allreduce
template <class Plan, class Out, class OutRules, class Mesh>
inline constexpr bool ring_allreduce_fits_v =
    std::is_void_v<OutRules>&& Plan::batch::rank == 0 &&
    (output_form_v<Plan, Out> == einsum_strategy::in_place ||
     output_form_v<Plan, Out> == einsum_strategy::transposed) &&
    mesh_mask_v<Mesh, typename Plan::summed_mesh_dims> != 0;

// choose_strategy<Plan, Out, OutRules>(mesh, out_sizes, sz, deferred): the strategy of this
// run, the same on every rank (from global sizes and group sizes only)
template <class Plan, class Out, class OutRules, class Mesh, class Sizes>
einsum_strategy choose_strategy(const Mesh& mesh, const Sizes& out_sizes, const einsum_sizes& sz,
                                bool deferred) {
  if constexpr (fused_with_reduce_scatter<Plan, Out, OutRules>()) {
    using sp = scatter_plan<Out, typename Plan::out_layout, layout_for_t<OutRules, Out>,
                            typename Plan::summed_mesh_dims>;
    using ring = ring_plan<Plan, sp, Out>;
    if (out_sizes.template get<typename ring::dim>() %
            static_cast<std::size_t>(mesh.template size<typename ring::mesh_dim>()) ==
        0)
      return einsum_strategy::ring_reduce_scatter;
  }
  if constexpr (ring_allreduce_fits_v<Plan, Out, OutRules, Mesh>) {
    constexpr unsigned summed = mesh_mask_v<Mesh, typename Plan::summed_mesh_dims>;
    const auto p = static_cast<std::size_t>(mesh.group_size(summed));
    const bool transposed = output_form_v<Plan, Out> == einsum_strategy::transposed;
    if (!deferred && (transposed ? sz.n : sz.m) % p == 0) return einsum_strategy::ring_allreduce;
  }
  return output_form_v<Plan, Out>;
}

// product_ring_reduce_scatter<Plan, Out, OutRules, T>(...): the product fused with its
// reduce_scatter, laid out as OutRules asks
template <class Plan, class Out, class OutRules, class T, class Mesh, class Sizes>
auto product_ring_reduce_scatter(const Mesh& mesh, const Sizes& out_sizes,
                                 const batched_operand<T>& ga, const batched_operand<T>& gb,
                                 const einsum_sizes& sz) {
  using requested = layout_for_t<OutRules, Out>;
  using sp =
      scatter_plan<Out, typename Plan::out_layout, requested, typename Plan::summed_mesh_dims>;
  using ring = ring_plan<Plan, sp, Out>;
  using Y = tensor<T, Out,
                   layout_for_t<layout_merge_t<typename Plan::out_layout, typename sp::rules>, Out>,
                   Mesh>;
  Y y(mesh, out_sizes, Y::uninitialized);
  ring_product<T>(mesh, Mesh::template mask_v<typename ring::mesh_dim>, true, ring::along_m,
                  ring::out_is_ct, ga, gb, sz.m, sz.n, sz.k,
                  std::span<T>(y.local().data(), y.local().size()));
  return laid_out<requested>(std::move(y));
}

// product_ring_allreduce<Plan, Out>(...): the product fused with its allreduce into out
template <class Plan, class Out, class T, class Mesh>
void product_ring_allreduce(const Mesh& mesh, const batched_operand<T>& ga,
                            const batched_operand<T>& gb, const einsum_sizes& sz,
                            std::span<T> out) {
  constexpr bool transposed = output_form_v<Plan, Out> == einsum_strategy::transposed;
  ring_product<T>(mesh, mesh_mask_v<Mesh, typename Plan::summed_mesh_dims>, false, !transposed,
                  transposed, ga, gb, sz.m, sz.n, sz.k, out);
}

// product_into<Plan, Out, Form>(...): the gemms, writing out in the form Form (in place,
// transposed, strided, strided_transposed) or, copied, into a buffer in [batch, M, N], then one
// transposing copy into out
template <class Plan, class Out, einsum_strategy Form, class T, class Mesh, class Frame,
          class Result>
void product_into(const Mesh& mesh, const batched_operand<T>& ga, const batched_operand<T>& gb,
                  const einsum_sizes& sz, const Frame& fr_c, Result& out) {
  using batch = typename Plan::batch;
  using m = typename Plan::m;
  using n = typename Plan::n;
  batched_operand<T> gc;
  T* c = out.local().data();
  if constexpr (Form == einsum_strategy::copied) {
    static_assert(Out::rank <= max_copy_rank,
                  "meshpp::einsum<Out>(a, b): an output of more than 32 dims that is not in "
                  "the product's order (a copy of it would take more)");
    scratch<T> c_buffer;  // overwritten whole by gemm
    c_buffer.resize(sz.nb * sz.m * sz.n);
    matrix_strides<typename Plan::c_order, batch, m, n>(gc, fr_c.extent);
    einsum_gemms<T>(mesh, sz, ga, gb, c_buffer.data(), gc, false);
    mesh.counters().streamed([&] { return 2 * sz.nb * sz.m * sz.n * sizeof(T); });  // r + w
    if (!mesh.planning())
      copy_permuted<T>(c_buffer.data(), fr_c.extent, permutation_v<typename Plan::c_order, Out>, c);
  } else if constexpr (Form == einsum_strategy::transposed ||
                       Form == einsum_strategy::strided_transposed) {
    matrix_strides<Out, batch, n, m>(gc, out.local_shape());
    einsum_gemms<T>(mesh, sz, ga, gb, c, gc, true);
  } else {
    matrix_strides<Out, batch, m, n>(gc, out.local_shape());
    einsum_gemms<T>(mesh, sz, ga, gb, c, gc, false);
  }
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
  check_operands<typename plan::shared>("meshpp::einsum", "the inputs", a, b);
  const auto scope = mesh.counters().operation([] {
    return listed_operation(operation_kind::einsum, "einsum",
                            {dim_names_v<SA>, dim_names_v<SB>, dim_names_v<Out>});
  });

  using result_t = tensor<T, Out, typename plan::out_layout, Mesh>;
  using L = typename plan::full_layout;
  const auto out_sizes = sizes_from<Out>(a, b);
  // Local group sizes, from the frame of the output order [batch, M, N] and of K.
  const auto fr_c = local_frame<typename plan::c_order, layout_for_t<L, typename plan::c_order>>(
      mesh, sized{out_sizes});
  // Dims in one input only, not in the output: summed out locally first (partial sums when
  // split; the final allreduce completes them).
  const auto& ra = summed_out<typename plan::a_only>(a);
  const auto& rb = summed_out<typename plan::b_only>(b);
  using batch = typename plan::batch;
  auto ga = prepare_batched<batch, typename plan::m, typename plan::contract, L, T>(ra, mesh);
  auto gb = prepare_batched<batch, typename plan::contract, typename plan::n, L, T>(rb, mesh);

  einsum_sizes sz;
  sz.nb = product_of(fr_c, 0, batch::rank);
  sz.m = product_of(fr_c, batch::rank, plan::m::rank);
  sz.n = product_of(fr_c, batch::rank + plan::m::rank, plan::n::rank);
  sz.batch_rank = batch::rank;
  for (std::size_t j = 0; j < batch::rank; ++j) sz.batch_extent[j] = fr_c.extent[j];
  {
    const auto fr_k =
        local_frame<typename plan::contract, layout_for_t<L, typename plan::contract>>(mesh, a);
    for (std::size_t v : fr_k.extent) sz.k *= v;
  }
  constexpr unsigned summed_mask = mesh_mask_v<Mesh, typename plan::summed_mesh_dims>;

  const einsum_strategy strategy =
      choose_strategy<plan, Out, OutRules>(mesh, out_sizes, sz, deferred != nullptr);
  mesh.counters().strategy(strategy);
  if constexpr (fused_with_reduce_scatter<plan, Out, OutRules>()) {
    if (strategy == einsum_strategy::ring_reduce_scatter)
      return product_ring_reduce_scatter<plan, Out, OutRules, T>(mesh, out_sizes, ga, gb, sz);
  }
  result_t out(mesh, out_sizes, result_t::uninitialized);
  const std::span<T> out_span(out.local().data(), out.local().size());
  if constexpr (ring_allreduce_fits_v<plan, Out, OutRules, Mesh>) {
    if (strategy == einsum_strategy::ring_allreduce) {
      product_ring_allreduce<plan, Out, T>(mesh, ga, gb, sz, out_span);
      return out;
    }
  }
  product_into<plan, Out, output_form_v<plan, Out>, T>(mesh, ga, gb, sz, fr_c, out);
  // the sums across ranks
  if constexpr (std::is_void_v<OutRules>) {
    if (deferred) {
      *deferred = summed_mask;
      return out;
    }
    allreduce_sum(mesh, summed_mask, out_span);
    return out;
  } else {
    return sums_laid_out<layout_for_t<OutRules, Out>, typename plan::summed_mesh_dims>(
        std::move(out));
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
    using gather = detail::operand_gather_plan<Out, OutRules, A, B>;
    if constexpr (gather::applies) {
      // the inputs' sizes are checked before the operands move
      detail::check_operands<typename gather::plan::shared>(
          "meshpp::einsum", "the inputs", detail::as_expression(a), detail::as_expression(b));
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

// einsum<Out>(a): a transposed to Out, with a's other dims summed out (reduce_sum_to<Out>)
template <class Out, class A>
requires is_shape_v<Out> && is_expression_v<A>
auto einsum(const A& a) {
  using missing_output_dim =
      typename detail::first_output_dim_in_no_input<Out, typename A::shape_type, shape<>>::type;
  static_assert(offending::output_dim_appears_in_no_input<missing_output_dim>,
                "meshpp::einsum<Out>(a): an output dim is not a dim of a");
  if constexpr (std::is_same_v<missing_output_dim, detail::no_dim>) return reduce_sum_to<Out>(a);
}

}  // namespace meshpp
