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

#include "reference.hpp"
#include "testing.hpp"

namespace mp = meshpp;
using meshpp_test::map;
using meshpp_test::matches;
using meshpp_test::world;
using meshpp_test::zip;

MESHPP_DIM(batch);
MESHPP_DIM(hidden);
MESHPP_DIM(rows);
MESHPP_DIM(cols);

namespace {
const auto sizes = mp::extents{batch{} = 8, hidden{} = 12};
using rules = mp::layout<mp::split<hidden, rows>, mp::split<batch, cols>>;
using mesh_t = mp::mesh<mp::axes<rows, cols>, rules>;

// 1e-5 is about 80 ulp of float; 1e-12 about 4500 ulp of double: loose enough for any
// faithful libm, tight enough that a wrong formula or a float step in double fails.
template <class T>
constexpr double tolerance = std::is_same_v<T, float> ? 1e-5 : 1e-12;

template <class E>
auto result(const E& e) {
  return mp::gather(mp::eval(e));
}

// a normal (both signs), p uniform in [0.5, 2) (positive, for log, sqrt and pow's base)
template <class T>
struct inputs {
  mesh_t m{meshpp_test::grid2(world().size())};
  mp::tensor_of<T, mp::shape<batch, hidden>, mesh_t> a =
      mp::random_normal<T, batch, hidden>(m, sizes, 1);
  mp::tensor_of<T, mp::shape<batch, hidden>, mesh_t> p =
      mp::random_uniform<T, batch, hidden>(m, sizes, 3, T(0.5), T(2));
  xt::xtensor<T, 2> A = mp::gather(a), P = mp::gather(p);
};
}  // namespace

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
