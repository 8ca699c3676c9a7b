// meshpp/autodiff/softmax.hpp — softmax<Dim>, log_softmax<Dim>, logsumexp<Dim> of traced
// tensors, and their gradients; argmax<Dim> of a traced tensor (a plain result).
//
//   auto p = mp::softmax<memory_length>(mp::where(causal, scores, -inf));   // recorded
//   auto q = mp::softmax<memory_length>(scores, causal);   // the same, one step, no where step
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

#include "meshpp/autodiff/record.hpp"
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
    const T dot = row_dot(g + at, y + at, n);
    for (std::size_t j = 0; j < n; ++j) dx[at + j] = y[at + j] * (g[at + j] - dot);
  }
}
}  // namespace detail

namespace detail {
// softmax_backward<Dim>: the backward step of y = softmax<Dim>(x): dx = y (g - sum_Dim g y);
// masked entries (y = 0) get 0 with no step of their own
template <class Dim>
struct softmax_backward {
  template <class A, class X>
  void operator()(const A& out, const A& g, const X& x) const {
    if (!x.wants_grad()) return;
    if constexpr (rowwise_softmax_v<Dim, A>) {
      A dx(out.mesh(), out.sizes(), A::uninitialized);
      const std::size_t n = out.local().shape()[A::rank - 1];
      if (n > 0) {
        softmax_backward_rows(out.local().data(), g.local().data(), dx.local().data(),
                              out.local().size() / n, n);
      }
      x.add_grad(std::move(dx));
    } else {
      x.add_grad(out * (g - reduce_sum<Dim>(g * out)));
    }
  }
};
}  // namespace detail

// softmax<Dim>(x) of a traced x
template <class Dim, class A>
auto softmax(const traced<A>& a) {
  return record([](const A& x) -> A { return softmax<Dim>(x); }, detail::softmax_backward<Dim>{},
                a);
}

// softmax<Dim>(x, mask) of a traced x and a plain bool mask: softmax<Dim>(where(mask, x, -inf))
// as one recorded step (the masked entries' gradient is 0 through y = 0: no where step, no
// pass of its own over x's gradient)
template <class Dim, class A, class M>
requires is_expression_v<M>
auto softmax(const traced<A>& a, const M& mask) {
  return record([&mask](const A& x) { return A(softmax<Dim>(x, mask)); },
                detail::softmax_backward<Dim>{}, a);
}

// log_softmax<Dim>(x) of a traced x
template <class Dim, class A>
auto log_softmax(const traced<A>& a) {
  return record([](const A& x) -> A { return log_softmax<Dim>(x); },
                [](const A& out, const A& g, const auto& x) {
                  if (x.wants_grad()) x.add_grad(g - exp(out) * reduce_sum<Dim>(g));
                },
                a);
}

// logsumexp<Dim>(x) of a traced x
template <class Dim, class A>
auto logsumexp(const traced<A>& a) {
  return record([](const A& x) { return logsumexp<Dim>(x); },
                [](const auto& out, const auto& g, const auto& x) {
                  // x first, so the gradient has x's dims in x's order: one pass, no transpose
                  if (x.wants_grad()) x.add_grad(exp(x.value() - out) * g);
                },
                a);
}

// argmax<Dim, T = std::int32_t>(x) of a traced x: a plain tensor (indices carry no gradient)
template <class Dim, class T = std::int32_t, class A>
auto argmax(const traced<A>& a) {
  return argmax<Dim, T>(a.value());
}

}  // namespace meshpp
