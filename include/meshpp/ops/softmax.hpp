// meshpp/ops/softmax.hpp — softmax<Dim>, log_softmax<Dim>, logsumexp<Dim> and argmax<Dim> over
// a named dim, numerically stable, the dim split or not.
//
//   auto p   = mp::softmax<memory_length>(scores);        // same dims and layout as scores
//   auto pc  = mp::softmax<memory_length>(scores, causal); // 0 where the bool mask is false
//   auto lp  = mp::log_softmax<vocab>(logits);
//   auto lse = mp::logsumexp<vocab>(logits);              // [batch, length]: vocab reduced out
//   auto ids = mp::argmax<vocab>(logits);                 // int32 [batch, length]
//
// Each shifts by the maximum over Dim before exponentiating, so no exp overflows:
//   logsumexp(x) = m + log(sum_Dim exp(x - m)),  m = max_Dim x   (m is taken as 0 where it
//                                                                 is infinite: a row of -inf
//                                                                 gives -inf)
//   softmax(x)     = exp(x - m) / sum_Dim exp(x - m)     (a row of -inf only gives NaN, as 0/0;
//                                                         m = +inf is kept, so a row holding
//                                                         +inf gives NaN throughout, as a
//                                                         row holding NaN does)
//   log_softmax(x) = x - logsumexp(x)
// Communication, for x [batch/rows, vocab/cols] and Dim = vocab:
//   [batch/rows, vocab/cols] |-> [batch/rows]   max, then sum: a local pass each, then an
//                                               allreduce over cols of the [batch/rows] slice
// When Dim is whole (not split) nothing is communicated, and when it is also x's last dim (the
// attention scores' key dim) softmax runs row by row in one pass over the slice, each row in cache.
// For float, that row-wise pass exponentiates with xsimd's vectorized exp (within 1.5 ulp of
// exp; 0 below -87.34, where exp is subnormal), 1.8 times faster than std::exp per element for
// the whole softmax of the attention scores; the same on every rank and layout.
//
// argmax<Dim>(x): the global index along Dim of the largest element, the lowest index on ties,
// the same under every layout: the maximum, then the smallest index where x equals it (two
// local passes, each followed by an allreduce over the mesh dims Dim is split over).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <type_traits>

#include <xsimd/xsimd.hpp>

#include "meshpp/core/create.hpp"
#include "meshpp/core/layout.hpp"
#include "meshpp/core/shape.hpp"
#include "meshpp/core/tensor.hpp"
#include "meshpp/expr/evaluate.hpp"
#include "meshpp/expr/expression.hpp"
#include "meshpp/expr/functions.hpp"
#include "meshpp/ops/detail/materialized.hpp"
#include "meshpp/ops/reduce.hpp"

namespace meshpp {

namespace offending {
template <class Dim, class Shape>
inline constexpr bool softmax_dim_not_in_operand = false;
}  // namespace offending

namespace detail {

// finite_or_zero: the shift of a stable log-sum-exp: the maximum where it is finite, else 0
struct finite_or_zero {
  template <class A>
  A operator()(A m) const {
    return std::isfinite(m) ? m : A(0);
  }
};

// softmax_shift: the shift of softmax: the maximum, except 0 for a row of -inf (masked whole;
// its softmax is then 0/0, NaN). A maximum of +inf is kept: inf - inf makes the row NaN, where
// a shift of 0 would give NaN at the infinity and 0 elsewhere, a row that looks valid.
struct softmax_shift {
  template <class A>
  A operator()(A m) const {
    return m == -std::numeric_limits<A>::infinity() ? A(0) : m;
  }
};

// rowwise_softmax_v<Dim, Tensor>: softmax over Dim may run row by row in one pass: Dim is
// Tensor's last dim (contiguous rows) and is not split (no collective between the steps)
template <class Dim, class Tensor>
inline constexpr bool rowwise_softmax_v =
    index_of_v<typename Tensor::shape_type, Dim> + 1 == Tensor::shape_type::rank &&
    !is_split_in_v<typename Tensor::layout_type, Dim>;

// row_max(x, n), row_sum(x, n), row_dot(a, b, n): the maximum of a row, its sum, and the sum of
// a row's products, in 8 lanes of partial results combined at the end, so that the compiler
// vectorizes them without licence to reorder floating-point sums (-ffast-math); each is the
// same for the same row on every rank and layout
inline constexpr std::size_t row_lanes = 8;
template <class T>
T row_max(const T* x, std::size_t n) {
  T lane[row_lanes];
  for (auto& l : lane) l = -std::numeric_limits<T>::infinity();
  std::size_t j = 0;
  for (; j + row_lanes <= n; j += row_lanes)
    for (std::size_t k = 0; k < row_lanes; ++k) lane[k] = x[j + k] > lane[k] ? x[j + k] : lane[k];
  T m = -std::numeric_limits<T>::infinity();
  for (const T l : lane) m = l > m ? l : m;
  for (; j < n; ++j) m = x[j] > m ? x[j] : m;
  return m;
}
template <class T>
T row_sum(const T* x, std::size_t n) {
  T lane[row_lanes] = {};
  std::size_t j = 0;
  for (; j + row_lanes <= n; j += row_lanes)
    for (std::size_t k = 0; k < row_lanes; ++k) lane[k] += x[j + k];
  T sum = 0;
  for (const T l : lane) sum += l;
  for (; j < n; ++j) sum += x[j];
  return sum;
}
template <class T>
T row_dot(const T* a, const T* b, std::size_t n) {
  T lane[row_lanes] = {};
  std::size_t j = 0;
  for (; j + row_lanes <= n; j += row_lanes)
    for (std::size_t k = 0; k < row_lanes; ++k) lane[k] += a[j + k] * b[j + k];
  T sum = 0;
  for (const T l : lane) sum += l;
  for (; j < n; ++j) sum += a[j] * b[j];
  return sum;
}

// exp_shifted(x, n, shift): x[j] = exp(x[j] - shift) for j < n; for float with xsimd's
// vectorized exp (within 1.5 ulp of exp below 88.37, inf above, 0 below -87.34 where exp is
// subnormal, NaN for NaN), the remainder of fewer than one batch and other types by std::exp
template <class T>
void exp_shifted(T* x, std::size_t n, T shift) {
  std::size_t j = 0;
  if constexpr (std::is_same_v<T, float>) {
    using batch = xsimd::batch<float>;
    const batch s(shift);
    for (; j + batch::size <= n; j += batch::size)
      xsimd::exp(batch::load_unaligned(x + j) - s).store_unaligned(x + j);
  }
  for (; j < n; ++j) x[j] = std::exp(x[j] - shift);
}

// softmax_rows(data, rows, n): softmax of each contiguous row of n elements, in place; each
// row's passes run while it is in cache
template <class T>
void softmax_rows(T* data, std::size_t rows, std::size_t n) {
  for (std::size_t r = 0; r < rows; ++r) {
    T* x = data + r * n;
    T m = row_max(x, n);
    m = softmax_shift{}(m);
    exp_shifted(x, n, m);
    const T sum = row_sum(x, n);
    const T scale = T(1) / sum;
    for (std::size_t j = 0; j < n; ++j) x[j] *= scale;
  }
}

// index_at_maximum<T>: the index where x equals the maximum, else T's largest value (which
// the minimum over Dim then passes over)
template <class T>
struct index_at_maximum {
  template <class A>
  T operator()(A x, A best, T index) const {
    return x == best ? index : std::numeric_limits<T>::max();
  }
};

// The check of every function here: x has Dim. At the public entry point, so that the message
// names the function.
#define MESHPP_SOFTMAX_CHECK(NAME)                                                      \
  static_assert(contains_v<typename E::shape_type, Dim> ||                              \
                    offending::softmax_dim_not_in_operand<Dim, typename E::shape_type>, \
                "meshpp::" #NAME "<Dim>(x): x has no dim Dim")

}  // namespace detail

// logsumexp<Dim>(x): log(sum over Dim of exp(x)), stable; x's dims but Dim
template <class Dim, class E>
requires is_expression_v<E>
auto logsumexp(const E& e) {
  MESHPP_SOFTMAX_CHECK(logsumexp);
  if constexpr (contains_v<typename E::shape_type, Dim>) {
    const auto scope = detail::as_expression(e).mesh_ptr()->counters().operation([] {
      return "logsumexp over " + std::string(Dim::name()) + " of " +
             to_string(typename E::shape_type{});
    });
    const auto& x = detail::materialized(e);
    const auto shift = eval(make_function(detail::finite_or_zero{}, reduce_max<Dim>(x)));
    auto out = reduce_sum<Dim>(exp(x - shift));
    out = log(out) + shift;
    return out;
  }
}

// softmax<Dim>(x): exp(x) / sum over Dim of exp(x), stable; x's dims and layout
template <class Dim, class E>
requires is_expression_v<E>
auto softmax(const E& e) {
  MESHPP_SOFTMAX_CHECK(softmax);
  if constexpr (contains_v<typename E::shape_type, Dim>) {
    const auto scope = detail::as_expression(e).mesh_ptr()->counters().operation([] {
      return "softmax over " + std::string(Dim::name()) + " of " +
             to_string(typename E::shape_type{});
    });
    auto y = eval(e);  // the result's storage: softmax is computed in it
    using Y = decltype(y);
    if constexpr (detail::rowwise_softmax_v<Dim, Y>) {
      // rows in cache: the slice read and written once more
      y.mesh().counters().streamed(
          [&] { return 2 * y.local().size() * sizeof(typename Y::value_type); });
      const std::size_t n = y.local().shape()[Y::rank - 1];
      if (n > 0) detail::softmax_rows(y.local().data(), y.local().size() / n, n);
    } else {
      const auto shift = eval(make_function(detail::softmax_shift{}, reduce_max<Dim>(y)));
      y = exp(y - shift);
      const auto sum = reduce_sum<Dim>(y);
      y = y / sum;
    }
    return y;
  }
}

// softmax<Dim>(x, mask): the softmax over Dim of x's entries where mask is true, 0 where it is
// false: softmax<Dim>(where(mask, x, -inf)) with the mask applied as the operand is read (one
// pass; the mask broadcasts by name, e.g. a causal [memory_length, length] over the scores
// [batch, heads, length, memory_length]); x's dims and layout. A row masked whole gives NaN.
template <class Dim, class E, class M>
requires is_expression_v<E> && is_expression_v<M>
auto softmax(const E& e, const M& mask) {
  static_assert(contains_all_v<typename E::shape_type, typename M::shape_type>,
                "meshpp::softmax<Dim>(x, mask): the mask has a dim that x does not have");
  using T = typename E::value_type;
  return softmax<Dim>(where(mask, e, -std::numeric_limits<T>::infinity()));
}

// log_softmax<Dim>(x): x - logsumexp<Dim>(x); x's dims and layout
template <class Dim, class E>
requires is_expression_v<E>
auto log_softmax(const E& e) {
  MESHPP_SOFTMAX_CHECK(log_softmax);
  if constexpr (contains_v<typename E::shape_type, Dim>) {
    const auto scope = detail::as_expression(e).mesh_ptr()->counters().operation([] {
      return "log_softmax over " + std::string(Dim::name()) + " of " +
             to_string(typename E::shape_type{});
    });
    const auto& x = detail::materialized(e);
    return eval(x - logsumexp<Dim>(x));
  }
}

// argmax<Dim, T = std::int32_t>(x): the global index along Dim of x's largest element (the
// lowest on ties); x's dims but Dim, as T
template <class Dim, class T = std::int32_t, class E>
requires is_expression_v<E>
auto argmax(const E& e) {
  MESHPP_SOFTMAX_CHECK(argmax);
  static_assert(std::is_integral_v<T>, "meshpp::argmax<Dim, T>(x): T must be an integer type");
  if constexpr (contains_v<typename E::shape_type, Dim>) {
    const auto& x = detail::materialized(e);
    using X = std::remove_cvref_t<decltype(x)>;
    // the index along Dim, laid out as x lays out Dim, so every rank reads its own stripe
    using index_t = tensor<T, shape<Dim>, layout_for_t<typename X::layout_type, shape<Dim>>,
                           typename X::mesh_type>;
    const auto index = iota<index_t>(x.mesh(), x.sizes());
    const auto best = reduce_max<Dim>(x);
    // read in x's dim order (x first), the index broadcast over x's other dims
    return reduce_min<Dim>(make_function(detail::index_at_maximum<T>{}, x, best, index));
  }
}

#undef MESHPP_SOFTMAX_CHECK

}  // namespace meshpp
