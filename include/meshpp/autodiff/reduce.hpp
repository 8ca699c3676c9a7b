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
}  // namespace detail

// reduce_sum<Dims...>(a), reduce_sum<shape<Out...>>(a), reduce_sum(a) of a traced tensor
template <class... Ts, class A>
auto reduce_sum(const traced<A>& a) {
  return record([](const A& x) { return reduce_sum<Ts...>(x); }, detail::broadcast_back, a);
}

// reduce_mean<Dims...>(a), reduce_mean<shape<Out...>>(a), reduce_mean(a) of a traced tensor
template <class... Ts, class A>
auto reduce_mean(const traced<A>& a) {
  auto y = reduce_mean<Ts...>(a.value());
  using T = typename decltype(y)::value_type;
  const T scale = static_cast<T>(detail::global_count(y) / detail::global_count(a.value()));
  return record(
      std::move(y),
      [scale](const auto&, const auto& g, const auto& x) {
        x.add_grad(detail::broadcast_like(g, x.value()) * scale);
      },
      a);
}

// reduce_max / reduce_min of a traced tensor (the same three spellings)
#define MESHPP_TRACED_EXTREMUM(NAME)                                                      \
  template <class... Ts, class A>                                                         \
  auto NAME(const traced<A>& a) {                                                         \
    return record(                                                                        \
        [](const A& x) { return NAME<Ts...>(x); },                                        \
        [](const auto& out, const auto& g, const auto& x) {                               \
          if (!x.wants_grad()) return;                                                    \
          using Y = std::remove_cvref_t<decltype(out)>;                                   \
          using T = typename Y::value_type;                                               \
          const auto at_extremum = equal(x.value(), out);                                 \
          const auto ties = reduce_sum<typename Y::shape_type>(cast<T>(at_extremum));     \
          x.add_grad(where(at_extremum, detail::broadcast_like(g / ties, x.value()), 0)); \
        },                                                                                \
        a);                                                                               \
  }
MESHPP_TRACED_EXTREMUM(reduce_max)
MESHPP_TRACED_EXTREMUM(reduce_min)
#undef MESHPP_TRACED_EXTREMUM

}  // namespace meshpp
