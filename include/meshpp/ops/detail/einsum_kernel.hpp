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
  m.counters().streamed([&] { return e.bytes_read() + count * sizeof(T); });  // read, written
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
