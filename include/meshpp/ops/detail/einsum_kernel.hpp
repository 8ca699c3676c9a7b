// meshpp/ops/detail/einsum_kernel.hpp — einsum's local product on one rank: the operands
// made ready for gemm (as they lie, or copied once into gemm order), gemm itself over any
// CBLAS (a plain loop for other element types), and the transposing copy of a result.
//
//   C[batch, M, N] = A[batch, M, K] B[batch, K, N]   one gemm per batch index
#pragma once

#include <cblas.h>

#include <algorithm>
#include <array>
#include <cstddef>
#include <type_traits>
#include <utility>

#include "meshpp/core/blocks.hpp"
#include "meshpp/core/layout.hpp"
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

/// An operand (or the output) as a batch of matrices: gemm_operand's data and orientation, the
/// distance between the rows of each matrix (ld) and each batch dim's stride, in elements.
template <class T, std::size_t NB>
struct batched_operand : gemm_operand<T> {
  std::size_t ld = 0;
  std::array<std::size_t, NB> batch_stride{};
};

// matrix_strides<Sh, Batch, Outer, Inner>(op, extent): op's ld (rows indexed by Outer) and
// batch strides, for row-major data of dims Sh with the given extents (an empty Outer: one row)
template <class Sh, class Batch, class Outer, class Inner, class T, std::size_t NB, class E>
void matrix_strides(batched_operand<T, NB>& op, const E& extent) {
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
batched_operand<T, Batch::rank> prepare_batched(const X& x, const Mesh& m) {
  using Order = shape_concat_t<shape_concat_t<Batch, Rows>, Cols>;
  using OrderT = shape_concat_t<shape_concat_t<Batch, Cols>, Rows>;
  batched_operand<T, Batch::rank> op;
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

// batch_offset(i, extent, stride): the offset of batch index i (row-major over extent)
template <std::size_t NB>
std::size_t batch_offset(std::size_t i, const std::array<std::size_t, NB>& extent,
                         const std::array<std::size_t, NB>& stride) {
  std::size_t offset = 0;
  for (std::size_t j = NB; j-- > 0;) {
    offset += (i % extent[j]) * stride[j];
    i /= extent[j];
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

}  // namespace meshpp::detail
