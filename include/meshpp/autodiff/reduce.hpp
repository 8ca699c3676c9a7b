// meshpp/autodiff/reduce.hpp — reductions of traced tensors, and their gradients.
//
//   auto loss = mp::reduce_mean(mp::reduce_sum<classes>(p * p));   // recorded like any op
//
// Forward: exactly the plain reduction (a local pass, then one allreduce over the mesh dims
// the reduced dims are split over). Backward: the gradient is broadcast back over the reduced
// dims, a local pass with no communication:
//   reduce_sum   [hidden] |-> [batch/rows, hidden]   g repeated over batch
//   reduce_mean  the same, times 1 / (number of elements reduced)
//   reduce_max   g to the elements equal to the maximum, split evenly among ties (their count
//   reduce_min   is a reduce_sum of the same shape as the forward's: one more allreduce of the
//                output's size, over the same mesh dims)
#pragma once

#include <cstddef>
#include <type_traits>
#include <utility>

#include "meshpp/autodiff/record.hpp"
#include "meshpp/autodiff/traced.hpp"
#include "meshpp/expr/functions.hpp"
#include "meshpp/ops/reduce.hpp"

namespace meshpp {

namespace detail {
// global_count(t): the number of elements of t (global)
template <class Tensor>
double global_count(const Tensor& t) {
  double n = 1;
  for (std::size_t s : t.global_shape()) n *= static_cast<double>(s);
  return n;
}

// traced_sum / traced_mean / traced_extremum: the recorded reductions, given the plain one
// (reduce_x<Dims...> or reduce_x_to<shape<...>>) as `reduce`
template <class Reduce, class A>
auto traced_sum(const traced<A>& a, Reduce reduce) {
  return record(reduce, broadcast_back, a);
}
template <class Reduce, class A>
auto traced_mean(const traced<A>& a, Reduce reduce) {
  auto y = reduce(a.value());
  using T = typename decltype(y)::value_type;
  const T scale = static_cast<T>(global_count(y) / global_count(a.value()));
  return record(
      std::move(y),
      [scale](const auto&, const auto& g, const auto& x) {
        x.add_grad(broadcast_like(g, x.value()) * scale);
      },
      a);
}
// reduce_max and reduce_min: g to the elements equal to the extremum, split evenly among ties
template <class Reduce, class A>
auto traced_extremum(const traced<A>& a, Reduce reduce) {
  return record(
      reduce,
      [](const auto& out, const auto& g, const auto& x) {
        if (!x.wants_grad()) return;
        using Y = std::remove_cvref_t<decltype(out)>;
        using T = typename Y::value_type;
        const auto at_extremum = equal(x.value(), out);
        const auto ties = reduce_sum_to<typename Y::shape_type>(cast<T>(at_extremum));
        x.add_grad(where(at_extremum, broadcast_like(g / ties, x.value()), 0));
      },
      a);
}
}  // namespace detail

// reduce_x<Dims...>(a), reduce_x(a) and reduce_x_to<shape<Out...>>(a) of a traced tensor, for
// x in sum, mean, max, min
#define MESHPP_TRACED_REDUCTION(NAME, HOW)                               \
  template <class... Ts, class A>                                        \
  auto NAME(const traced<A>& a) {                                        \
    return detail::HOW(a, [](const A& x) { return NAME<Ts...>(x); });    \
  }                                                                      \
  template <class Out, class A>                                          \
  auto NAME##_to(const traced<A>& a) {                                   \
    return detail::HOW(a, [](const A& x) { return NAME##_to<Out>(x); }); \
  }
MESHPP_TRACED_REDUCTION(reduce_sum, traced_sum)
MESHPP_TRACED_REDUCTION(reduce_mean, traced_mean)
MESHPP_TRACED_REDUCTION(reduce_max, traced_extremum)
MESHPP_TRACED_REDUCTION(reduce_min, traced_extremum)
#undef MESHPP_TRACED_REDUCTION

}  // namespace meshpp
