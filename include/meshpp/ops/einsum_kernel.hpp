// meshpp/ops/einsum_kernel.hpp — einsum's local product on one rank: the operands
// made ready for gemm (as they lie, or copied once into gemm order), gemm itself over any
// CBLAS (a plain loop for other element types), and the transposing copy of a result.
//
//   C[batch, M, N] = A[batch, M, K] B[batch, K, N]   one gemm per batch index
#pragma once

#include <cblas.h>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <type_traits>
#include <utility>

#include "meshpp/core/blocks.hpp"
#include "meshpp/core/config.hpp"
#include "meshpp/core/error.hpp"
#include "meshpp/core/layout.hpp"
#include "meshpp/core/mesh.hpp"
#include "meshpp/core/shape.hpp"
#include "meshpp/core/tensor.hpp"
#include "meshpp/expr/evaluate.hpp"
#include "meshpp/expr/expression.hpp"

namespace meshpp::detail {

template <class Fr>
std::size_t product_of(const Fr& fr, std::size_t first, std::size_t count) {
  std::size_t p = 1;
  for (std::size_t i = first; i < first + count; ++i) p *= fr.extent[i];
  return p;
}

/// An operand made ready for gemm: a pointer to its data and whether each matrix lies as
/// [Y, X] (transposed) rather than [X, Y]. Owns a buffer when it had to be copied. Without batch
/// dims (the rings of einsum_ring.hpp, which compute their own leading dimensions) it is packed,
/// [X, Y] or [Y, X]: strided_fit_v admits no operand without batch dims.
template <class T>
struct gemm_operand {
  const T* data = nullptr;
  bool transposed = false;
  scratch<T> buffer;  // overwritten whole: not zeroed first
};

// strided_fit_v<S, Batch, Outer, Inner>: a row-major slice of dims S (exactly Batch, Outer and
// Inner, all non-empty) reads in place as one matrix [Outer, Inner] per index of the Batch dims:
// Inner's dims stand last in S, in Inner's order (their merged index has unit stride), Outer's
// stand together in Outer's order (rows one stride apart: the leading dimension), and the Batch
// dims anywhere else, each with its own stride. Attention's q[b, s, h, d] is [s, d] matrices
// for batch dims (b, h), rows h*d apart.
template <class S, class Group, std::size_t... I>
constexpr bool stands_together(std::size_t first, std::index_sequence<I...>) {
  return ((index_of_v<S, dim_at_t<Group, I>> == first + I) && ...);
}
template <class S, class Batch, class Outer, class Inner>
inline constexpr bool strided_fit_v = [] {
  if constexpr (Batch::rank == 0 || Outer::rank == 0 || Inner::rank == 0 ||
                S::rank != Batch::rank + Outer::rank + Inner::rank ||
                !(contains_all_v<S, Batch> && contains_all_v<S, Outer> &&
                  contains_all_v<S, Inner>)) {
    return false;
  } else {
    return stands_together<S, Inner>(S::rank - Inner::rank,
                                     std::make_index_sequence<Inner::rank>{}) &&
           stands_together<S, Outer>(index_of_v<S, dim_at_t<Outer, 0>>,
                                     std::make_index_sequence<Outer::rank>{});
  }
}();

// the most batch dims an einsum takes (dims in both inputs and the output)
inline constexpr std::size_t max_batch_dims = 16;

/// An operand (or the output) as a batch of matrices: gemm_operand's data and orientation, the
/// distance between the rows of each matrix (ld) and each batch dim's stride, in elements. One
/// type for every number of batch dims, so that the kernels below are compiled once per
/// element type.
template <class T>
struct batched_operand : gemm_operand<T> {
  std::size_t ld = 0;
  std::array<std::size_t, max_batch_dims> batch_stride{};
};

/// What einsum's local product runs on, whatever the shapes and layouts it came from: the
/// number of products and their sizes (C[nb][m, n] = A[nb][m, k] B[nb][k, n]) and the extents
/// of the batch dims, whose strides each operand gives.
struct einsum_sizes {
  std::size_t nb = 1, m = 1, n = 1, k = 1;
  std::size_t batch_rank = 0;
  std::array<std::size_t, max_batch_dims> batch_extent{};
};

// matrix_strides<Sh, Batch, Outer, Inner>(op, extent): op's ld (rows indexed by Outer) and
// batch strides, for row-major data of dims Sh with the given extents (an empty Outer: one row)
template <class Sh, class Batch, class Outer, class Inner, class T, class E>
void matrix_strides(batched_operand<T>& op, const E& extent) {
  static_assert(Batch::rank <= max_batch_dims, "meshpp::einsum: at most 16 batch dims");
  const auto st = row_major_strides<Sh::rank>(extent);
  if constexpr (Outer::rank > 0) {
    op.ld = static_cast<std::size_t>(st[index_of_v<Sh, dim_at_t<Outer, Outer::rank - 1>>]);
  } else {
    op.ld = 1;
    for_each_index<Inner::rank>(
        [&](auto i) { op.ld *= extent[index_of_v<Sh, dim_at_t<Inner, i.value>>]; });
  }
  op.ld = std::max<std::size_t>(op.ld, 1);  // BLAS wants at least 1, even for empty matrices
  for_each_index<Batch::rank>([&](auto i) {
    op.batch_stride[i] = static_cast<std::size_t>(st[index_of_v<Sh, dim_at_t<Batch, i.value>>]);
  });
}

// prepare_batched<Batch, Rows, Cols, Layout, T>(x, mesh): x as a batch of [Rows, Cols] matrices
// for gemm (transposed: [Cols, Rows]): in place where x is a tensor split exactly as Layout
// says and lying as [Batch, Rows, Cols], [Batch, Cols, Rows] or, with batch dims, strided so
// (strided_fit_v); else x's local data over the frame Layout gives it copied once, in one
// fused pass, into [Batch, Rows, Cols].
template <class Batch, class Rows, class Cols, class Layout, class T, class X, class Mesh>
batched_operand<T> prepare_batched(const X& x, const Mesh& m) {
  using Order = shape_concat_t<shape_concat_t<Batch, Rows>, Cols>;
  using OrderT = shape_concat_t<shape_concat_t<Batch, Cols>, Rows>;
  batched_operand<T> op;
  if constexpr (is_tensor_v<X>) {
    using S = typename X::shape_type;
    constexpr bool in_place = std::is_same_v<typename X::layout_type, layout_for_t<Layout, S>> &&
                              std::is_same_v<typename X::value_type, T>;
    if constexpr (in_place && (std::is_same_v<S, Order> || strided_fit_v<S, Batch, Rows, Cols>)) {
      op.data = x.local().data();
      matrix_strides<S, Batch, Rows, Cols>(op, x.local_shape());
      return op;
    } else if constexpr (in_place &&
                         (std::is_same_v<S, OrderT> || strided_fit_v<S, Batch, Cols, Rows>)) {
      op.data = x.local().data();
      op.transposed = true;
      matrix_strides<S, Batch, Cols, Rows>(op, x.local_shape());
      return op;
    }
  }
  const auto& e = as_expression(x);
  const frame<Order> fr = local_frame<Order, layout_for_t<Layout, Order>>(m, e);
  std::size_t count = 1;
  for (std::size_t v : fr.extent) count *= v;
  op.buffer.resize(count);
  m.counters().streamed([&] { return e.bytes_read() + count * sizeof(T); });  // read, written
  evaluate_into(e, fr, op.buffer.data());
  op.data = op.buffer.data();
  matrix_strides<Order, Batch, Rows, Cols>(op, fr.extent);
  return op;
}

// batch_offset(i, s, stride): the offset of batch index i (row-major over s's batch extents)
inline std::size_t batch_offset(std::size_t i, const einsum_sizes& s,
                                const std::array<std::size_t, max_batch_dims>& stride) {
  std::size_t offset = 0;
  for (std::size_t j = s.batch_rank; j-- > 0;) {
    offset += (i % s.batch_extent[j]) * stride[j];
    i /= s.batch_extent[j];
  }
  return offset;
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
  // int, as the standard cblas.h declares the sizes (OpenBLAS's blasint is int too, unless
  // built with 64-bit ints, where an int argument widens): any CBLAS will do
  const auto im = static_cast<int>(m), in = static_cast<int>(n), ik = static_cast<int>(k);
  const auto ilda = static_cast<int>(lda), ildb = static_cast<int>(ldb),
             ildc = static_cast<int>(ldc);
  if constexpr (std::is_same_v<T, float>) {
    cblas_sgemm(CblasRowMajor, ta, tb, im, in, ik, 1.0f, a, ilda, b, ildb, accumulate ? 1.0f : 0.0f,
                c, ildc);
  } else if constexpr (std::is_same_v<T, double>) {
    cblas_dgemm(CblasRowMajor, ta, tb, im, in, ik, 1.0, a, ilda, b, ildb, accumulate ? 1.0 : 0.0, c,
                ildc);
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

// copy_permuted(src, from_extent, from_of, dst): dst (row-major, its dim i being src's dim
// from_of[i]) = src (row-major over from_extent): a transposing copy of any rank up to
// max_copy_rank (the dims padded in front with ones), compiled once per element type
inline constexpr std::size_t max_copy_rank = 32;
template <class T>
MESHPP_KERNEL void copy_permuted(const T* src, std::span<const std::size_t> from_extent,
                                 std::span<const std::size_t> from_of, T* dst) {
  constexpr std::size_t n = max_copy_rank;
  if (from_of.size() > n) {
    throw error("meshpp: internal error: a transposing copy of " + std::to_string(from_of.size()) +
                " dims (at most " + std::to_string(n) + ")");
  }
  const std::size_t r = from_of.size(), pad = n - r;
  std::array<std::ptrdiff_t, n> from_strides{};
  std::ptrdiff_t at = 1;
  for (std::size_t i = r; i-- > 0;) {
    from_strides[i] = at;
    at *= static_cast<std::ptrdiff_t>(from_extent[i]);
  }
  std::array<std::size_t, n> extent;
  extent.fill(1);
  strided_cursor<const T*, n> source{src, {}};
  for (std::size_t i = 0; i < r; ++i) {
    extent[pad + i] = from_extent[from_of[i]];
    source.stride[pad + i] = from_strides[from_of[i]];
  }
  strided_cursor<T*, n> dest{dst, row_major_strides<n>(extent)};
  auto cursors = group(dest, source);
  for_each_row<n>(extent, cursors, [&](std::size_t len) {
    const std::ptrdiff_t step = source.stride[n - 1];
    if (step == 1) {
      std::copy_n(source.ptr, len, dest.ptr);
    } else {
      for (std::size_t j = 0; j < len; ++j)
        dest.ptr[j] = source.ptr[static_cast<std::ptrdiff_t>(j) * step];
    }
  });
}
#ifdef MESHPP_KERNEL_INSTANCE
MESHPP_KERNEL_INSTANCE void copy_permuted<float>(const float*, std::span<const std::size_t>,
                                                 std::span<const std::size_t>, float*);
MESHPP_KERNEL_INSTANCE void copy_permuted<double>(const double*, std::span<const std::size_t>,
                                                  std::span<const std::size_t>, double*);
#endif

// einsum_gemms(mesh, s, ga, gb, c, gc, transposed): the local product's gemms, one per batch
// index, into c (ld and batch strides gc's); transposed: c holds C^T, computed as B^T A^T.
// Counted as one einsum of s.nb products (on a planned mesh: counted only).
template <class T>
MESHPP_KERNEL void einsum_gemms(const mesh_base& mesh, const einsum_sizes& s,
                                const batched_operand<T>& ga, const batched_operand<T>& gb, T* c,
                                const batched_operand<T>& gc, bool transposed) {
  for (std::size_t i = 0; i < (mesh.planning() ? 0 : s.nb); ++i) {  // (a plan: no products)
    const T* ai = ga.data + batch_offset(i, s, ga.batch_stride);
    const T* bi = gb.data + batch_offset(i, s, gb.batch_stride);
    T* ci = c + batch_offset(i, s, gc.batch_stride);
    if (transposed) {  // C^T = B^T A^T
      gemm<T>(!gb.transposed, !ga.transposed, s.n, s.m, s.k, bi, gb.ld, ai, ga.ld, ci, gc.ld);
    } else {
      gemm<T>(ga.transposed, gb.transposed, s.m, s.n, s.k, ai, ga.ld, bi, gb.ld, ci, gc.ld);
    }
  }
  const std::uint64_t flops = 2ull * s.nb * s.m * s.n * s.k;
  if (transposed)
    mesh.counters().record_einsum(flops, {s.n, s.m, s.k, !gb.transposed, !ga.transposed}, s.nb);
  else
    mesh.counters().record_einsum(flops, {s.m, s.n, s.k, ga.transposed, gb.transposed}, s.nb);
}
#ifdef MESHPP_KERNEL_INSTANCE
MESHPP_KERNEL_INSTANCE void einsum_gemms<float>(const mesh_base&, const einsum_sizes&,
                                                const batched_operand<float>&,
                                                const batched_operand<float>&, float*,
                                                const batched_operand<float>&, bool);
MESHPP_KERNEL_INSTANCE void einsum_gemms<double>(const mesh_base&, const einsum_sizes&,
                                                 const batched_operand<double>&,
                                                 const batched_operand<double>&, double*,
                                                 const batched_operand<double>&, bool);
#endif

}  // namespace meshpp::detail
