// meshpp/ops/detail/einsum_ring.hpp — einsum's sums across ranks other than one plain
// allreduce: the product made block by block around a ring (fused with its reduce_scatter or
// allreduce), and the reduce_scatter of a finished partial product.
//
//   [.., k/md] x [k/md, ..] |-> [d/md, ..]   a reduce_scatter over md fused with the gemms
//   [d, ...] partial over m  |-> [d/m, ...]   reduce_scatter over m after the product
#pragma once

#include <array>
#include <cstddef>
#include <span>
#include <type_traits>
#include <utility>
#include <vector>

#include "meshpp/comm/collectives.hpp"
#include "meshpp/core/blocks.hpp"
#include "meshpp/core/detail/divides.hpp"
#include "meshpp/core/layout.hpp"
#include "meshpp/core/shape.hpp"
#include "meshpp/core/tensor.hpp"
#include "meshpp/ops/detail/einsum_kernel.hpp"

namespace meshpp::detail {

// reduce_scatter_along<Rule>(x): [d, ...] partial sums over m |-> [d/m, ...] complete sums,
// Rule = split<d, m>: one reduce_scatter over m, block j of d (stripe j, of its own size when
// d is split unevenly) to member j.
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
  const std::size_t count = x.local().size();
  // block j: stripe j of d (whole in x), every other dim as x holds it
  std::vector<std::size_t> counts(p);
  auto block = [&](std::size_t j) {
    auto b = ext;
    b[ax] = stripe_size(ext[ax], p, j);
    return b;
  };
  for (std::size_t j = 0; j < p; ++j) counts[j] = element_count(block(j));
  scratch<T> packed;
  const T* in = x.local().data();
  bool contiguous = true;
  for (std::size_t i = 0; i < ax; ++i) contiguous = contiguous && ext[i] == 1;
  if (!contiguous && !x.mesh().planning()) {  // blocks of d are strided: pack them in order
    packed.resize(count);
    std::array<std::size_t, S::rank> zero{}, at{};
    for (std::size_t j = 0, pos = 0; j < p; pos += counts[j], ++j) {
      at[ax] = stripe_begin(ext[ax], p, j);
      copy_box(x.local().data(), ext, at, packed.data() + pos, block(j), zero, block(j));
    }
    in = packed.data();
  }
  const std::span<const T> from(in, count);
  const std::span<T> to(y.local().data(), y.local().size());
  reduce_scatter<over<m>, op::sum>::run_blocks(x.mesh(), from, to,
                                               std::span<const std::size_t>(counts));
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
  if constexpr (OutIsCT)
    mesh.counters().record_einsum(2ull * m * n * k, {nb, mb, k, !gb.transposed, !ga.transposed}, p);
  else
    mesh.counters().record_einsum(2ull * m * n * k, {mb, nb, k, ga.transposed, gb.transposed}, p);
}

}  // namespace meshpp::detail
