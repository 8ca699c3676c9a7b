// Finite-difference gradient checks for meshpp's autodiff tests.
//
//   double err = meshpp_test::gradient_error(x, [&](const auto& t) { return mp::reduce_sum(...);
//   });
//
// For every element i of x (keep x small: a handful of dozen elements), the central difference
// (f(x + h e_i) - f(x - h e_i)) / 2h of the scalar f is compared with element i of
// gradients(f(trace(x)), x). The perturbed inputs are generated from the global index, so every
// rank holding a replica of element i perturbs it alike, under any layout. The error is the
// largest |fd - grad| / max(1, |fd|), the same on every rank (the loss is a replicated scalar).
#pragma once

#include <meshpp/autodiff/gradients.hpp>
#include <meshpp/core/create.hpp>
#include <meshpp/ops/scatter_gather.hpp>

#include <algorithm>
#include <cmath>
#include <cstddef>

namespace meshpp_test {

// scalar_of(traced scalar): its value (a tensor of no dims, the same on every rank)
template <class L>
double scalar_of(const L& loss) {
  return static_cast<double>(*loss.value().local().data());
}

template <class X, class F>
double gradient_error(const X& x0, F&& f, double h = 1e-6) {
  namespace mp = meshpp;
  const auto xt = mp::trace(x0);
  const auto [g] = mp::gradients(f(xt), xt);
  const auto grad = mp::gather(g);
  const auto base = mp::gather(x0);
  const auto& shape = x0.global_shape();
  double worst = 0;
  for (std::size_t i = 0; i < base.size(); ++i) {
    auto at = [&](double delta) {
      const auto xp = mp::generate<X>(x0.mesh(), x0.sizes(), [&](const auto& index) {
        std::size_t flat = 0;
        for (std::size_t d = 0; d < index.size(); ++d) flat = flat * shape[d] + index[d];
        return base.data()[flat] + static_cast<typename X::value_type>(flat == i ? delta : 0.0);
      });
      return scalar_of(f(mp::trace(xp)));
    };
    const double fd = (at(h) - at(-h)) / (2 * h);
    worst = std::max(
        worst, std::abs(fd - static_cast<double>(grad.data()[i])) / std::max(1.0, std::abs(fd)));
  }
  return worst;
}

// weighted_sum(y, seed): sum of y times fixed random weights: a scalar whose gradient with
// respect to y is those weights (so every element of y matters, each differently)
template <class Y>
auto weighted_sum(const Y& y, std::uint64_t seed = 99) {
  namespace mp = meshpp;
  using T = typename Y::tensor_type;
  return mp::reduce_sum(y * mp::random_normal<T>(y.mesh(), y.sizes(), seed));
}

// max_abs_difference(a, b): the largest |a - b| over every element, a and b two tensors of the
// same dims in any order (b may be an expression) that b converts to a's type without
// communication (else a compile error), the same on every rank
template <class A, class B>
double max_abs_difference(const A& a, const B& b) {
  namespace mp = meshpp;
  const auto whole_a = mp::gather(a);
  const auto whole_b = mp::gather(A(b));  // b in a's dim order and layout
  double worst = 0;
  for (std::size_t i = 0; i < whole_a.size(); ++i) {
    worst = std::max(worst, std::abs(static_cast<double>(whole_a.data()[i]) -
                                     static_cast<double>(whole_b.data()[i])));
  }
  return worst;
}

}  // namespace meshpp_test
