// meshpp/ops/reduce.hpp — reductions over named dims: reduce_sum, reduce_max, reduce_min,
// reduce_mean.
//
//   reduce_sum<batch>(x)                  sum out batch
//   reduce_sum_to<shape<hidden>>(x * y)   to the shape [hidden] (one fused pass)
//   reduce_max(x)                         over every dim: a tensor of no dims
//
// [batch/rows, hidden/cols] |-> [hidden/cols]   local sum, then allreduce over rows
//
// The local pass reads the expression once, accumulating into the output slice; then one
// allreduce runs over exactly the mesh dims that the reduced-out dims are split over (none
// if they are all whole here). The output keeps the input's layout on its remaining dims.
#pragma once

#include <cstddef>
#include <limits>
#include <span>
#include <string>
#include <type_traits>

#include "meshpp/comm/collectives.hpp"
#include "meshpp/core/config.hpp"
#include "meshpp/core/error.hpp"
#include "meshpp/core/layout.hpp"
#include "meshpp/core/shape.hpp"
#include "meshpp/core/tensor.hpp"
#include "meshpp/expr/evaluate.hpp"
#include "meshpp/expr/expression.hpp"

namespace meshpp {

namespace offending {
template <class Dim, class Shape>
inline constexpr bool reduced_dim_not_in_operand = std::is_same_v<Dim, detail::no_dim>;
template <class Dim, class Shape>
inline constexpr bool output_dim_not_in_operand = std::is_same_v<Dim, detail::no_dim>;
}  // namespace offending

namespace detail {

template <class Op, class T>
constexpr T identity() {
  if constexpr (std::is_same_v<Op, op::sum>)
    return T(0);
  else if constexpr (std::is_same_v<Op, op::max>) {
    if constexpr (std::numeric_limits<T>::has_infinity)
      return -std::numeric_limits<T>::infinity();
    else
      return std::numeric_limits<T>::lowest();
  } else {
    if constexpr (std::numeric_limits<T>::has_infinity)
      return std::numeric_limits<T>::infinity();
    else
      return std::numeric_limits<T>::max();
  }
}
template <class Op, class T>
T combine(T a, T b) {
  if constexpr (std::is_same_v<Op, op::sum>)
    return a + b;
  else if constexpr (std::is_same_v<Op, op::max>)
    return b > a ? b : a;
  else
    return b < a ? b : a;
}

template <class Out, class E>
auto extents_of(const E& e) {
  return [&]<class... Dims>(shape<Dims...>*) {
    return extents<Dims...>{dim_extent<Dims>{e.template size<Dims>()}...};
  }(static_cast<Out*>(nullptr));
}

// reduce_local<Op, Out>(e, mesh): the local part of a reduction of e to the dims Out, in a
// tensor laid out like e on Out's dims (not yet combined across ranks).
template <class Op, class Out, class E>
auto reduce_local(const E& e) {
  using S = typename E::shape_type;
  using V = typename E::value_type;
  using T = std::conditional_t<std::is_same_v<V, bool>, int, V>;
  using Mesh = typename E::mesh_type;
  using result_t = tensor<T, Out, layout_for_t<typename E::layout_type, Out>, Mesh>;
  const Mesh& m = *e.mesh_ptr();
  result_t out(m, extents_of<Out>(e), result_t::uninitialized);
  out.local().fill(identity<Op, T>());

  constexpr std::size_t n = S::rank;
  const frame<S> fr = local_frame<S, typename E::layout_type>(m, e);
  auto source = e.cursor(fr);
  // the accumulating side: the output slice, read and written along rows of e's order;
  // invariant along a reduced inner dim, contiguous or strided otherwise
  dest_cursor<T, n> acc{out.local().data(), {}};
  const auto out_strides = row_major_strides<Out::rank>(out.local().shape());
  for_each_index<n>([&](auto i) {
    using d = dim_at_t<S, i.value>;
    if constexpr (contains_v<Out, d>)
      acc.stride[i] = out_strides[index_of_v<Out, d>];
    else
      acc.stride[i] = 0;
  });
  auto cursors = group(acc, source);
  for_each_row<n>(fr.extent, cursors, [&](std::size_t len) {
    constexpr access a = access_of<Out, S>();
    if constexpr (a == access::invariant) {
      T total = *acc.ptr;
      for (std::size_t j = 0; j < len; ++j)
        total = combine<Op>(total, static_cast<T>(source.at(j)));
      *acc.ptr = total;
    } else if constexpr (a == access::contiguous) {
      // __restrict holds: o points into `out`, created above; e reads tensors that existed
      // before it, and a tensor owns its slice (no two share one), so none of them is out's
      T* __restrict o = acc.ptr;
      MESHPP_IVDEP
      for (std::size_t j = 0; j < len; ++j) o[j] = combine<Op>(o[j], static_cast<T>(source.at(j)));
    } else {
      const std::ptrdiff_t s = acc.stride[n - 1];
      for (std::size_t j = 0; j < len; ++j) {
        T& o = acc.ptr[static_cast<std::ptrdiff_t>(j) * s];
        o = combine<Op>(o, static_cast<T>(source.at(j)));
      }
    }
  });
  return out;
}

// The output shape a reduce call names: reduce_x_to<shape<...>>(e) gives it (Ts is that one
// shape); reduce_x<Dims...>(e) names the dims to reduce out (all when none are named).
// `unknown_reduced_dim` is the first named dim to reduce that S lacks, `unknown_output_dim` the
// first output dim S lacks (or no_dim).
template <class S, class... Ts>
struct reduce_output {
  using type = shape_difference_t<S, shape<Ts...>>;
  using reduced = shape<Ts...>;
  using unknown_reduced_dim = first_found_t<std::conditional_t<contains_v<S, Ts>, no_dim, Ts>...>;
  using unknown_output_dim = no_dim;
};
template <class S>
struct reduce_output<S> {
  using type = shape<>;
  using reduced = S;
  using unknown_reduced_dim = no_dim;
  using unknown_output_dim = no_dim;
};
template <class S, class... Out>
struct reduce_output<S, shape<Out...>> {
  using type = shape<Out...>;
  using reduced = shape_difference_t<S, shape<Out...>>;
  using unknown_reduced_dim = no_dim;
  using unknown_output_dim = first_found_t<std::conditional_t<contains_v<S, Out>, no_dim, Out>...>;
};
template <class S, class... Ts>
inline constexpr bool reduce_names_known_dims_v =
    std::is_same_v<typename reduce_output<S, Ts...>::unknown_reduced_dim, no_dim>&&
        std::is_same_v<typename reduce_output<S, Ts...>::unknown_output_dim, no_dim>;

// reduce<Op, E, Ts...>(e): the work of the reduce_x<Ts...>(e) below, once their checks passed
template <class Op, class E, class... Ts>
auto reduce(const E& e) {
  using S = typename E::shape_type;
  using Out = typename reduce_output<S, Ts...>::type;
  using reduced = typename reduce_output<S, Ts...>::reduced;
  const auto scope = e.mesh_ptr()->counters().operation([] {
    return detail::listed_operation(operation_kind::reduce, "reduce",
                                    {dim_names_v<S>, dim_names_v<Out>});
  });
  e.mesh_ptr()->counters().streamed([&] { return e.bytes_read(); });
  auto out = reduce_local<Op, Out>(e);
  using mesh_dims = split_mesh_dims_t<typename E::layout_type, reduced>;
  allreduce<over_t<mesh_dims>, Op>::run(*e.mesh_ptr(),
                                        std::span(out.local().data(), out.local().size()));
  return out;
}

// reduce_expression<Op, Spec...>(e): reduce<Op, ..., Spec...> of e as an expression
template <class Op, class... Spec, class E>
auto reduce_expression(const E& e) {
  return reduce<Op, std::remove_cvref_t<decltype(as_expression(e))>, Spec...>(as_expression(e));
}

}  // namespace detail

// Each reduce_x checks the dims it is given here, at the call, so a misnamed dim is reported
// in the user's terms; the conditions name the dim and x's shape. Two spellings, never one
// for the other: reduce_x<Dims...>(x) names the dims to reduce out, reduce_x_to<shape<...>>(x)
// the shape of the result (reduce_x<shape<batch>> would read as either, so it is an error).

namespace offending {
template <class T>
inline constexpr bool shape_given_as_dims_to_reduce = !is_shape_v<T>;
}  // namespace offending

#define MESHPP_REDUCE_CHECKS(NAME)                                                     \
  static_assert((offending::shape_given_as_dims_to_reduce<Ts> && ...),                 \
                "meshpp::" #NAME                                                       \
                "<Dims...>(x) names the dims to reduce out; for the shape "            \
                "of the result write " #NAME "_to<shape<Out...>>(x)");                 \
  using S = typename E::shape_type;                                                    \
  static_assert(offending::reduced_dim_not_in_operand<                                 \
                    typename detail::reduce_output<S, Ts...>::unknown_reduced_dim, S>, \
                "meshpp::" #NAME "<Dims...>(x): x has no dim of that name to reduce"); \
  constexpr bool named_right =                                                         \
      (!is_shape_v<Ts> && ...) && detail::reduce_names_known_dims_v<S, Ts...>
#define MESHPP_REDUCE_TO_CHECKS(NAME)                                                       \
  static_assert(is_shape_v<Out>, "meshpp::" #NAME "_to<Out>(x): Out must be a shape<...>"); \
  using S = typename E::shape_type;                                                         \
  static_assert(offending::output_dim_not_in_operand<                                       \
                    typename detail::reduce_output<S, Out>::unknown_output_dim, S>,         \
                "meshpp::" #NAME                                                            \
                "_to<shape<Out...>>(x): the output shape names a dim x does "               \
                "not have");                                                                \
  constexpr bool named_right = is_shape_v<Out> && detail::reduce_names_known_dims_v<S, Out>

// reduce_sum<Dims...>(e): Dims summed out (every dim when none is named);
// reduce_sum_to<shape<Out...>>(e): e summed to the shape Out (the dims Out lacks summed out).
// Likewise reduce_max(_to) and reduce_min(_to). Over a dim of size 0 each gives its identity:
// 0, -inf and +inf (for integers their lowest and highest values), so that a reduction in
// parts combines with it exactly.
#define MESHPP_REDUCTION(NAME, OP)                                             \
  template <class... Ts, class E>                                              \
  requires is_expression_v<E>                                                  \
  auto NAME(const E& e) {                                                      \
    MESHPP_REDUCE_CHECKS(NAME);                                                \
    if constexpr (named_right) return detail::reduce_expression<OP, Ts...>(e); \
  }                                                                            \
  template <class Out, class E>                                                \
  requires is_expression_v<E>                                                  \
  auto NAME##_to(const E& e) {                                                 \
    MESHPP_REDUCE_TO_CHECKS(NAME);                                             \
    if constexpr (named_right) return detail::reduce_expression<OP, Out>(e);   \
  }
MESHPP_REDUCTION(reduce_sum, op::sum)
MESHPP_REDUCTION(reduce_max, op::max)
MESHPP_REDUCTION(reduce_min, op::min)
#undef MESHPP_REDUCTION

namespace detail {
// mean<Spec...>(e): the work of reduce_mean<Spec...>(e) and reduce_mean_to<Spec>(e), once
// their checks passed: the sum divided by the number of elements reduced (global sizes)
template <class... Spec, class E>
auto mean(const E& e) {
  const auto& x = as_expression(e);
  using X = std::remove_cvref_t<decltype(x)>;
  using reduced = typename reduce_output<typename X::shape_type, Spec...>::reduced;
  double count = 1;
  for_each_index<reduced::rank>([&](auto i) {
    using d = dim_at_t<reduced, i.value>;
    const std::size_t n = x.template size<d>();
    // the same sizes on every rank, so every rank throws here, before the allreduce
    if (n == 0) {
      throw error("meshpp::reduce_mean: dim '" + std::string(d::name()) +
                  "' has size 0, and the mean of no elements is undefined (reduce_sum "
                  "gives 0)");
    }
    count *= static_cast<double>(n);
  });
  auto out = reduce<op::sum, X, Spec...>(x);
  using T = typename decltype(out)::value_type;
  if constexpr (std::is_integral_v<T>) {
    // integer division, truncating (as TensorFlow's reduce_mean of ints): a scale of
    // static_cast<T>(1.0 / count) would be 0
    const T divisor = static_cast<T>(count);
    for (auto& v : out.local()) v /= divisor;
  } else {
    const T scale = static_cast<T>(1.0 / count);
    for (auto& v : out.local()) v *= scale;
  }
  return out;
}
}  // namespace detail

// reduce_mean<Dims...>(e), reduce_mean_to<shape<Out...>>(e), reduce_mean(e): the sum divided
// by the number of elements reduced (global sizes). A reduced dim of size 0 throws
// meshpp::error on every rank (the mean of nothing: not a silent NaN, nor an integer division
// by zero).
template <class... Ts, class E>
requires is_expression_v<E>
auto reduce_mean(const E& e) {
  MESHPP_REDUCE_CHECKS(reduce_mean);
  if constexpr (named_right) return detail::mean<Ts...>(e);
}
template <class Out, class E>
requires is_expression_v<E>
auto reduce_mean_to(const E& e) {
  MESHPP_REDUCE_TO_CHECKS(reduce_mean);
  if constexpr (named_right) return detail::mean<Out>(e);
}

#undef MESHPP_REDUCE_CHECKS
#undef MESHPP_REDUCE_TO_CHECKS

}  // namespace meshpp
