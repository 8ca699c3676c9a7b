// meshpp/autodiff/softmax.hpp — softmax<Dim>, log_softmax<Dim>, logsumexp<Dim> of traced
// tensors, and their gradients; argmax<Dim> of a traced tensor (a plain result).
//
//   auto p = mp::softmax<memory_length>(mp::where(causal, scores, -inf));   // recorded
//
// Forward: exactly the plain operation (ops/softmax.hpp). Backward, from the output's gradient g:
//   softmax       dx = y (g - sum_Dim g y)       one reduce_sum over Dim: an allreduce over the
//                                                 mesh dims Dim is split over (none when whole;
//                                                 then, with Dim last, one pass row by row)
//   log_softmax   dx = g - exp(y) sum_Dim g      likewise one reduce_sum over Dim
//   logsumexp     dx = g exp(x - y)               g broadcast over Dim: no communication
// Each keeps only its output for the backward step (logsumexp also keeps x, its input).
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "meshpp/autodiff/traced.hpp"
#include "meshpp/expr/functions.hpp"
#include "meshpp/ops/reduce.hpp"
#include "meshpp/ops/softmax.hpp"

namespace meshpp {

namespace detail {
// softmax_backward_rows(y, g, dx, rows, n): dx = y (g - sum g y) for each contiguous row of n
template <class T>
void softmax_backward_rows(const T* y, const T* g, T* dx, std::size_t rows, std::size_t n) {
  for (std::size_t r = 0; r < rows; ++r) {
    const std::size_t at = r * n;
    T dot = 0;
    for (std::size_t j = 0; j < n; ++j) dot += g[at + j] * y[at + j];
    for (std::size_t j = 0; j < n; ++j) dx[at + j] = y[at + j] * (g[at + j] - dot);
  }
}
}  // namespace detail

// softmax<Dim>(x) of a traced x
template <class Dim, class A>
auto softmax(const traced<A>& a) {
  auto ha = a.node();
  A y = softmax<Dim>(ha->value);
  return detail::record(
      std::move(y),
      [ha](const A& out, const A& g) {
        if (!ha->wanted) return;
        if constexpr (detail::rowwise_softmax_v<Dim, A>) {
          A dx(out.mesh(), out.sizes(), A::uninitialized);
          const std::size_t n = out.local().shape()[A::rank - 1];
          if (n > 0) {
            detail::softmax_backward_rows(out.local().data(), g.local().data(), dx.local().data(),
                                          out.local().size() / n, n);
          }
          ha->accumulate(std::move(dx));
        } else {
          ha->accumulate(out * (g - reduce_sum<Dim>(g * out)));
        }
      },
      ha);
}

// log_softmax<Dim>(x) of a traced x
template <class Dim, class A>
auto log_softmax(const traced<A>& a) {
  auto ha = a.node();
  A y = log_softmax<Dim>(ha->value);
  return detail::record(
      std::move(y),
      [ha](const A& out, const A& g) {
        if (ha->wanted) ha->accumulate(g - exp(out) * reduce_sum<Dim>(g));
      },
      ha);
}

// logsumexp<Dim>(x) of a traced x
template <class Dim, class A>
auto logsumexp(const traced<A>& a) {
  auto ha = a.node();
  auto y = logsumexp<Dim>(ha->value);
  using Y = decltype(y);
  return detail::record(
      std::move(y),
      [ha](const Y& out, const Y& g) {
        // x first, so the gradient has x's dims in x's order: one pass, no transpose
        if (ha->wanted) ha->accumulate(exp(ha->value - out) * g);
      },
      ha);
}

// argmax<Dim, T = std::int32_t>(x) of a traced x: a plain tensor (indices carry no gradient)
template <class Dim, class T = std::int32_t, class A>
auto argmax(const traced<A>& a) {
  return argmax<Dim, T>(a.value());
}

}  // namespace meshpp
