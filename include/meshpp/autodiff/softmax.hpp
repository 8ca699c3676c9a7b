// meshpp/autodiff/softmax.hpp — softmax<Dim>, log_softmax<Dim>, logsumexp<Dim> of traced
// tensors, and their gradients; argmax<Dim> of a traced tensor (a plain result).
//
//   auto p = mp::softmax<memory_length>(mp::where(causal, scores, -inf));   // recorded
//   auto q = mp::softmax<memory_length>(scores, causal);   // the same, one step, no where step
//   auto c = mp::softmax<memory_length>(scores, mp::causal<length>{});   // the same, no mask
//
// Forward: exactly the plain operation (ops/softmax.hpp). Backward, from the output's gradient g:
//   softmax       dx = y (g - sum_Dim g y)       one reduce_sum over Dim: an allreduce over the
//                                                 mesh dims Dim is split over (none when whole;
//                                                 then, with Dim last, one pass row by row, and
//                                                 under causal<Length> each row only as far as
//                                                 it is seen)
//   log_softmax   dx = g - exp(y) sum_Dim g      likewise one reduce_sum over Dim
//   logsumexp     dx = g exp(x - y)               g broadcast over Dim: no communication
// Each keeps only its output for the backward step (logsumexp also keeps x, its input).
#pragma once

#include <algorithm>
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
// softmax_backward_row(y, g, dx, n, w): dx = y (g - sum g y) over the first w of a row of n
// (w = n: the whole row), and 0 times that sum after them (NaN in a NaN row, as y's)
template <class T>
void softmax_backward_row(const T* y, const T* g, T* dx, std::size_t n, std::size_t w) {
  const T dot = row_dot(g, y, w);
  for (std::size_t j = 0; j < w; ++j) dx[j] = y[j] * (g[j] - dot);
  std::fill(dx + w, dx + n, T(0) * dot);
}

// softmax_backward<Dim, Length = void>: the backward step of y = softmax<Dim>(x): dx = y (g -
// sum_Dim g y); masked entries (y = 0) get 0 with no step of their own. With a Length, of y =
// softmax<Dim>(x, causal<Length>{}): row by row only as far as each row is seen (the unseen
// entries of y are 0, so are theirs of dx: written, not computed). That is the mask form's
// gradient where g is finite, but for the sign of those zeros (the mask form's 0 (g - sum g y)
// is -0 where g is below the sum); a NaN or inf of g at an unseen entry, which the mask form
// spreads over the row through the sum, is not read.
template <class Dim, class Length = void>
struct softmax_backward {
  template <class A, class X>
  void operator()(const A& out, const A& g, const X& x) const {
    if (!x.wants_grad()) return;
    if constexpr (rowwise_softmax_v<Dim, A>) {
      using T = typename A::value_type;
      A dx(out.mesh(), out.sizes(), A::uninitialized);
      const std::size_t n = out.local().shape()[A::rank - 1];
      const T *y = out.local().data(), *gy = g.local().data();
      T* d = dx.local().data();
      const auto row = [&](std::size_t r, std::size_t seen) {
        const std::size_t at = r * n;
        softmax_backward_row(y + at, gy + at, d + at, n, causal_columns<T>(n, seen));
      };
      if constexpr (std::is_void_v<Length>) {
        for (std::size_t r = 0; n > 0 && r < out.local().size() / n; ++r) row(r, n);
      } else {
        for_each_causal_row<Length>(out, row);
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

// softmax<Dim>(x, causal<Length>{}) of a traced x: one recorded step whose forward and
// backward read each row only as far as it is seen (ops/softmax.hpp); its value is
// softmax<Dim>(x, mask)'s with the causal mask tensor, its gradient too for a finite g (see
// softmax_backward)
template <class Dim, class A, class Length>
auto softmax(const traced<A>& a, causal<Length> c) {
  return record([c](const A& x) { return A(softmax<Dim>(x, c)); },
                detail::softmax_backward<Dim, Length>{}, a);
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
