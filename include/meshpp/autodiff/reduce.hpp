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
  auto ha = a.node();
  auto y = reduce_sum<Ts...>(ha->value);
  using Y = decltype(y);
  return detail::record(
      std::move(y),
      [ha](const Y&, const Y& g) { detail::send(ha, detail::broadcast_like(g, ha->value)); }, ha);
}

// reduce_mean<Dims...>(a), reduce_mean<shape<Out...>>(a), reduce_mean(a) of a traced tensor
template <class... Ts, class A>
auto reduce_mean(const traced<A>& a) {
  auto ha = a.node();
  auto y = reduce_mean<Ts...>(ha->value);
  using Y = decltype(y);
  using T = typename Y::value_type;
  const T scale = static_cast<T>(detail::global_count(y) / detail::global_count(ha->value));
  return detail::record(
      std::move(y),
      [ha, scale](const Y&, const Y& g) {
        detail::send(ha, detail::broadcast_like(g, ha->value) * scale);
      },
      ha);
}

// reduce_max / reduce_min of a traced tensor (the same three spellings)
#define MESHPP_TRACED_EXTREMUM(NAME)                                                          \
  template <class... Ts, class A>                                                             \
  auto NAME(const traced<A>& a) {                                                             \
    auto ha = a.node();                                                                       \
    auto y = NAME<Ts...>(ha->value);                                                          \
    using Y = decltype(y);                                                                    \
    using T = typename Y::value_type;                                                         \
    return detail::record(                                                                    \
        std::move(y),                                                                         \
        [ha](const Y& out, const Y& g) {                                                      \
          if (!ha->wanted) return;                                                            \
          const auto at_extremum = equal(ha->value, out);                                     \
          const auto ties = reduce_sum<typename Y::shape_type>(cast<T>(at_extremum));         \
          ha->accumulate(where(at_extremum, detail::broadcast_like(g / ties, ha->value), 0)); \
        },                                                                                    \
        ha);                                                                                  \
  }
MESHPP_TRACED_EXTREMUM(reduce_max)
MESHPP_TRACED_EXTREMUM(reduce_min)
#undef MESHPP_TRACED_EXTREMUM

}  // namespace meshpp
