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
//
//   meshpp_test::check_gradient("exp", x, [](const auto& t) { return weighted_sum(mp::exp(t)); });
//
// checks that error against a tolerance (1e-7 unless given: double, h = 1e-6), and names the case
// and x's mesh when it fails.
#pragma once

#include <meshpp/autodiff/gradients.hpp>
#include <meshpp/core/create.hpp>
#include <meshpp/ops/scatter_gather.hpp>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <string>
#include <string_view>

#include "testing.hpp"

namespace meshpp_test {

// scalar_of(traced scalar): its value (a tensor of no dims, the same on every rank)
template <class L>
double scalar_of(const L& loss) {
  return static_cast<double>(*loss.value().local().data());
}

// perturbed(x0, base, i, delta): x0 with delta added to its element i (flat index of the
// global array, row-major; base: x0 gathered whole), generated from the global index so that
// every rank holding a replica of element i perturbs it alike
template <class X, class B>
X perturbed(const X& x0, const B& base, std::size_t i, double delta) {
  const auto& shape = x0.global_shape();
  return meshpp::generate<X>(x0.mesh(), x0.sizes(), [&](const auto& index) {
    std::size_t flat = 0;
    for (std::size_t d = 0; d < index.size(); ++d) flat = flat * shape[d] + index[d];
    return base.data()[flat] + static_cast<typename X::value_type>(flat == i ? delta : 0.0);
  });
}

// central_difference_error(x0, grad, loss_at, h): the largest |fd - grad| / max(1, |fd|) over the
// elements i of x0, fd = (loss_at(x0 + h e_i) - loss_at(x0 - h e_i)) / 2h, grad the gradient
// gathered whole
template <class X, class G, class F>
double central_difference_error(const X& x0, const G& grad, F&& loss_at, double h) {
  const auto base = meshpp::gather(x0);
  double worst = 0;
  for (std::size_t i = 0; i < base.size(); ++i) {
    const double plus = loss_at(perturbed(x0, base, i, h));
    const double minus = loss_at(perturbed(x0, base, i, -h));
    const double fd = (plus - minus) / (2 * h);
    const double err =
        std::abs(fd - static_cast<double>(grad.data()[i])) / std::max(1.0, std::abs(fd));
    if (!(err <= worst)) worst = err;  // a NaN is the worst error, never skipped
  }
  return worst;
}

// gradient_error(x0, f, h): central_difference_error of gradients(f(trace(x0)), x0)
template <class X, class F>
double gradient_error(const X& x0, F&& f, double h = 1e-6) {
  namespace mp = meshpp;
  const auto xt = mp::trace(x0);
  const auto [g] = mp::gradients(f(xt), xt);
  return central_difference_error(
      x0, mp::gather(g), [&](const X& x) { return scalar_of(f(mp::trace(x))); }, h);
}

// gradient_tolerance: what check_gradient allows by default: central differences of double with
// h = 1e-6 are good to about 1e-9 on smooth losses of moderate size
inline constexpr double gradient_tolerance = 1e-7;

// check_gradient_error(what, mesh, error, tol): CHECK(error < tol), naming the case and the mesh
// when it fails (once, outside the templates: doctest's macros cost compile time)
inline void check_gradient_error(std::string_view what, const std::string& mesh, double error,
                                 double tol) {
  const std::string name(what);  // doctest would print a const char* as an address
  CAPTURE(name);
  CAPTURE(mesh);
  CHECK(error < tol);
}

// check_gradient(what, x, f, tol): CHECK(gradient_error(x, f) < tol), reporting what and x's
// mesh when it fails
template <class X, class F>
void check_gradient(std::string_view what, const X& x, F&& f, double tol = gradient_tolerance) {
  check_gradient_error(what, x.mesh().describe(), gradient_error(x, f), tol);
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
    const double err =
        std::abs(static_cast<double>(whole_a.data()[i]) - static_cast<double>(whole_b.data()[i]));
    if (!(err <= worst)) worst = err;  // a NaN is the worst error, never skipped
  }
  return worst;
}

}  // namespace meshpp_test
