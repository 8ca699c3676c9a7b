// Named expressions, part 5: sigmoid relu gelu pow, in float and double, against std:: math
// in double on one rank.
//
// The inputs are gathered with meshpp::gather and the reference is a plain loop over them;
// the tolerance is a few ulp of the value type (more for the functions built of several
// operations). The tensors are split on a 2-D mesh of every rank with hidden on the first
// mesh dim, batch on the second.
#include <meshpp/core/create.hpp>
#include <meshpp/expr/functions.hpp>
#include <meshpp/ops/scatter_gather.hpp>

#include <cmath>
#include <numbers>
#include <type_traits>

#include "expressions_fixture.hpp"

TEST_CASE_TEMPLATE("sigmoid, relu, gelu", T, float, double) {
  inputs<T> in;
  const auto& [m, a, p, A, P] = in;
  constexpr double tol = tolerance<T>;
  CHECK_ALL_RANKS(matches(result(mp::sigmoid(a)),
                          map(A, [](double v) { return 1 / (1 + std::exp(-v)); }), tol));
  CHECK_ALL_RANKS(matches(result(mp::relu(a)), map(A, [](double v) { return v > 0 ? v : 0; }), 0));
  // the exact gelu, x * Phi(x)
  CHECK_ALL_RANKS(matches(
      result(mp::gelu(a)),
      map(A, [](double v) { return 0.5 * v * (1 + std::erf(v / std::numbers::sqrt2)); }), tol));
  // relu and abs see both signs in these inputs
  CHECK_ALL_RANKS(
      matches(result(mp::relu(-a)), map(A, [](double v) { return v < 0 ? -v : 0; }), 0));
}

TEST_CASE_TEMPLATE("pow of two tensors, and of a tensor and a scalar", T, float, double) {
  inputs<T> in;
  const auto& [m, a, p, A, P] = in;
  constexpr double tol = tolerance<T>;
  CHECK_ALL_RANKS(matches(result(mp::pow(p, a)),
                          zip(P, A, [](double u, double v) { return std::pow(u, v); }), tol));
  CHECK_ALL_RANKS(matches(result(mp::pow(a, 3)), map(A, [](double v) { return v * v * v; }), tol));
  CHECK_ALL_RANKS(
      matches(result(mp::pow(2, a)), map(A, [](double v) { return std::pow(2.0, v); }), tol));
}
