// Named expressions, part 4: abs exp log sqrt rsqrt tanh, in float and double, against std::
// math in double on one rank (sigmoid relu gelu pow: expressions_activations.cpp).
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

TEST_CASE_TEMPLATE("abs, exp, log, sqrt, rsqrt, tanh", T, float, double) {
  inputs<T> in;
  const auto& [m, a, p, A, P] = in;
  constexpr double tol = tolerance<T>;
  static_assert(std::is_same_v<typename decltype(mp::exp(a))::value_type, T>);
  CHECK_ALL_RANKS(matches(result(mp::abs(a)), map(A, [](double v) { return std::abs(v); }), 0));
  CHECK_ALL_RANKS(matches(result(mp::exp(a)), map(A, [](double v) { return std::exp(v); }), tol));
  CHECK_ALL_RANKS(matches(result(mp::log(p)), map(P, [](double v) { return std::log(v); }), tol));
  CHECK_ALL_RANKS(matches(result(mp::sqrt(p)), map(P, [](double v) { return std::sqrt(v); }), tol));
  CHECK_ALL_RANKS(
      matches(result(mp::rsqrt(p)), map(P, [](double v) { return 1 / std::sqrt(v); }), tol));
  CHECK_ALL_RANKS(matches(result(mp::tanh(a)), map(A, [](double v) { return std::tanh(v); }), tol));
}
