// meshpp/ops/detail/einsum_ring.hpp — einsum's product made block by block around a ring,
// fused with its reduce_scatter or allreduce (the reduce_scatter of a finished partial product
// is ops/reduce_scatter_sums.hpp).
//
//   [.., k/md] x [k/md, ..] |-> [d/md, ..]   a reduce_scatter over md fused with the gemms
#pragma once

#include <cstddef>
#include <span>

#include "meshpp/comm/collectives.hpp"
#include "meshpp/comm/reduce_scatter_ring.hpp"
#include "meshpp/core/config.hpp"
#include "meshpp/ops/einsum_kernel.hpp"

namespace meshpp::detail {

// ring_product(mesh, mask, scatter, along_m, out_is_ct, ga, gb, m, n, k, out): the local
// product (m x n, k summed) made block by block around the ring of the mesh dims in mask,
// fused with a reduce_scatter (scatter: reduce_scatter_ring) or an allreduce (allreduce_ring),
// block j being stripe j of p of the flattened M (along_m) or N: one gemm on a stripe of a's M
// rows or of b's N columns, written as one run of memory in the output order ([M, N], or
// [N, M] when out_is_ct). out: this member's block, or every block (the allreduce).
//   [.., k/md] x [k/md, ..] |-> [d/md, ..]   a reduce_scatter over md fused with the gemms
template <class T>
MESHPP_KERNEL void ring_product(const mesh_base& mesh, unsigned mask, bool scatter, bool along_m,
                                bool out_is_ct, const gemm_operand<T>& ga,
                                const gemm_operand<T>& gb, std::size_t m, std::size_t n,
                                std::size_t k, std::span<T> out) {
  const auto p = static_cast<std::size_t>(mesh.group_size(mask));
  const std::size_t mb = along_m ? m / p : m, nb = along_m ? n : n / p;
  const std::size_t lda = ga.transposed ? m : k;
  const std::size_t ldb = gb.transposed ? k : n;
  auto make = [&](std::size_t j, T* dst, bool accumulate) {
    const T* aj = ga.data;
    const T* bj = gb.data;
    if (along_m)
      aj += ga.transposed ? j * mb : j * mb * k;
    else
      bj += gb.transposed ? j * nb * k : j * nb;
    if (out_is_ct)  // C^T = B^T A^T
      gemm<T>(!gb.transposed, !ga.transposed, nb, mb, k, bj, ldb, aj, lda, dst, mb, accumulate);
    else
      gemm<T>(ga.transposed, gb.transposed, mb, nb, k, aj, lda, bj, ldb, dst, nb, accumulate);
  };
  if (scatter)
    reduce_scatter_ring_over<T>(mesh, mask, out, make);
  else
    allreduce_ring_over<T>(mesh, mask, out, make);
  if (out_is_ct)
    mesh.counters().record_einsum(2ull * m * n * k, {nb, mb, k, !gb.transposed, !ga.transposed}, p);
  else
    mesh.counters().record_einsum(2ull * m * n * k, {mb, nb, k, ga.transposed, gb.transposed}, p);
}
#ifdef MESHPP_KERNEL_INSTANCE
MESHPP_KERNEL_INSTANCE void ring_product<float>(const mesh_base&, unsigned, bool, bool, bool,
                                                const gemm_operand<float>&,
                                                const gemm_operand<float>&, std::size_t,
                                                std::size_t, std::size_t, std::span<float>);
MESHPP_KERNEL_INSTANCE void ring_product<double>(const mesh_base&, unsigned, bool, bool, bool,
                                                 const gemm_operand<double>&,
                                                 const gemm_operand<double>&, std::size_t,
                                                 std::size_t, std::size_t, std::span<double>);
#endif

}  // namespace meshpp::detail
