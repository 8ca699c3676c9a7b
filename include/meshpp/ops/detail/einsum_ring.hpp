// meshpp/ops/detail/einsum_ring.hpp — einsum's product made block by block around a ring,
// fused with its reduce_scatter or allreduce (the reduce_scatter of a finished partial product
// is ops/detail/reduce_scatter.hpp).
//
//   [.., k/md] x [k/md, ..] |-> [d/md, ..]   a reduce_scatter over md fused with the gemms
#pragma once

#include <cstddef>
#include <span>

#include "meshpp/comm/collectives.hpp"
#include "meshpp/ops/detail/einsum_kernel.hpp"

namespace meshpp::detail {

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
