// meshpp/ops/softmax.hpp — softmax<Dim>, log_softmax<Dim>, logsumexp<Dim> and argmax<Dim> over
// a named dim, numerically stable, the dim split or not.
//
//   auto p   = mp::softmax<memory_length>(scores);        // same dims and layout as scores
//   auto pc  = mp::softmax<memory_length>(scores, causal); // 0 where the bool mask is false
//   auto pk  = mp::softmax<memory_length>(scores, mp::causal<length>{});  // memory <= length
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
#include <numeric>
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
#include "meshpp/ops/rows.hpp"

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

// softmax_row(x, n): softmax of one contiguous row of n elements, in place, while it is in
// cache; returns the row's scale, 1 / its sum (NaN or inf for a row that is NaN throughout);
// softmax_rows(data, rows, n): of each of rows such rows
template <class T>
T softmax_row(T* x, std::size_t n) {
  const T m = softmax_shift{}(row_max(x, n));
  exp_shifted(x, n, m);
  const T scale = T(1) / row_sum(x, n);
  for (std::size_t j = 0; j < n; ++j) x[j] *= scale;
  return scale;
}
template <class T>
void softmax_rows(T* data, std::size_t rows, std::size_t n) {
  for (std::size_t r = 0; r < rows; ++r) softmax_row(data + r * n, n);
}

// causal_columns<T>(n, seen): the columns a causal row of n computes when its first `seen` are
// seen: `seen` rounded up to whole chunks of row_lanes and of the vectorized exp's batch, at
// most n. Within them the row is computed as softmax_row computes the whole row under the
// mask (the unseen entries -inf): the same lanes, batches and order of sums. Beyond them that
// row holds 0 times its scale, as the causal row does: so the two are equal exactly.
template <class T>
std::size_t causal_columns(std::size_t n, std::size_t seen) {
  constexpr std::size_t chunk = std::is_same_v<T, float>
                                    ? std::lcm(row_lanes, std::size_t{xsimd::batch<float>::size})
                                    : row_lanes;
  return std::min(n, (seen + chunk - 1) / chunk * chunk);
}

// causal_softmax_row(x, y, n, seen): y = the softmax of x's row of n over its first `seen`
// entries, 0 after them (NaN throughout, as under the mask, where the seen part holds NaN or
// +inf or is -inf throughout); x is read only that far
template <class T>
void causal_softmax_row(const T* x, T* y, std::size_t n, std::size_t seen) {
  const std::size_t w = causal_columns<T>(n, seen);
  std::copy(x, x + seen, y);
  std::fill(y + seen, y + w, -std::numeric_limits<T>::infinity());
  const T scale = softmax_row(y, w);
  std::fill(y + w, y + n, T(0) * scale);
}

// for_each_causal_row<Length>(t, f): f(r, seen) for each row r of t's local slice (rows of
// its last dim, Dim, whole on every rank), seen = how many of the row's entries have a Dim
// index <= the row's global Length index
template <class Length, class X, class F>
void for_each_causal_row(const X& t, F&& f) {
  constexpr std::size_t rank = X::rank;
  constexpr std::size_t at = index_of_v<typename X::shape_type, Length>;
  const auto& extent = t.local().shape();
  const std::size_t n = extent[rank - 1];
  if (n == 0) return;
  std::size_t inner = 1;  // the rows of one Length index: the dims between Length and Dim
  for (std::size_t d = at + 1; d + 1 < rank; ++d) inner *= extent[d];
  const std::size_t rows = t.local().size() / n, offset = t.template local_offset<Length>();
  for (std::size_t r = 0; r < rows; ++r) {
    f(r, std::min(n, offset + (r / inner) % extent[at] + 1));
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
      return detail::row_operation(operation_kind::logsumexp, "logsumexp", Dim::name(),
                                   dim_names_v<typename E::shape_type>);
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
      return detail::row_operation(operation_kind::softmax, "softmax", Dim::name(),
                                   dim_names_v<typename E::shape_type>);
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

/// @brief The causal mask of softmax<Dim>(x, causal<Length>{}): x's entry at Dim index j and
/// Length index i is seen when j <= i (each position attends to itself and those before it),
/// what attention's mask tensor memory <= length says, without the tensor.
/// @tparam Length the dim of the positions that attend (the queries'), another dim of x
template <class Length>
struct causal {};

// softmax<Dim>(x, causal<Length>{}): softmax<Dim>(x, mask) for the causal mask (Dim index <=
// Length index), equal to it exactly (NaN rows included); x's dims and layout. Where Dim is
// x's last dim and whole (the row-by-row path, attention's scores), each row is read only as
// far as it is seen (in whole chunks of 8 or 16) and written once, with no pass of the mask's
// own: the scores of a square causal attention are read about half. Elsewhere (Dim split, or
// not last) it is softmax<Dim>(x, mask).
template <class Dim, class E, class Length>
requires is_expression_v<E>
auto softmax(const E& e, causal<Length>) {
  MESHPP_SOFTMAX_CHECK(softmax);
  using S = typename E::shape_type;
  static_assert(contains_v<S, Length> || offending::softmax_dim_not_in_operand<Length, S>,
                "meshpp::softmax<Dim>(x, causal<Length>): x has no dim Length");
  static_assert(!std::is_same_v<Dim, Length>,
                "meshpp::softmax<Dim>(x, causal<Length>): Length must be another dim than Dim");
  if constexpr (contains_v<S, Dim> && contains_v<S, Length> && !std::is_same_v<Dim, Length>) {
    const auto& x = detail::materialized(e);
    using X = std::remove_cvref_t<decltype(x)>;
    using M = typename X::mesh_type;
    if constexpr (detail::rowwise_softmax_v<Dim, X>) {
      const auto scope = x.mesh().counters().operation([] {
        return detail::row_operation(operation_kind::softmax, "softmax", Dim::name(),
                                     dim_names_v<S>);
      });
      X y(x.mesh(), x.sizes(), X::uninitialized);
      y.mesh().counters().streamed(
          [&] { return 2 * y.local().size() * sizeof(typename X::value_type); });
      const std::size_t n = x.local().shape()[X::rank - 1];
      const auto* from = x.local().data();
      auto* to = y.local().data();
      detail::for_each_causal_row<Length>(x, [&](std::size_t r, std::size_t seen) {
        detail::causal_softmax_row(from + r * n, to + r * n, n, seen);
      });
      return y;
    } else {  // x's sizes agree on every rank: the iotas need no agreement
      const auto sizes = x.sizes();
      using index = std::int64_t;
      return softmax<Dim>(
          x, detail::iota_agreed<tensor_of<index, shape<Dim>, M>>(x.mesh(), sizes) <=
                 detail::iota_agreed<tensor_of<index, shape<Length>, M>>(x.mesh(), sizes));
    }
  }
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
