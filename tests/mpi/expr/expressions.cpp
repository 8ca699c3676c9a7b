// Named expressions, part 1: the arithmetic operators, scalars on either side, maximum and
// minimum, cast<U>, and assignment that reads its own destination. (Comparisons and where:
// expressions_compare.cpp; size errors and operand ownership: expressions_errors.cpp; math
// functions: expressions_math.cpp and expressions_activations.cpp; broadcasting and
// transposing by name: expressions_layouts.cpp; mixed layouts: expressions_mixed.cpp; a long
// chain: expressions_chain.cpp. The split keeps each file quick to compile: every expression
// is its own fused loop.)
//
// Every result is gathered and compared with a reference computed on one rank without any
// mesh: the inputs are gathered with meshpp::gather, the reference is a plain loop over the
// gathered arrays in double. The tensors are split on a 2-D mesh of every rank (batch:rows,
// hidden:cols), so at 2 and 4 ranks each rank computes its own block.
#include <meshpp/core/create.hpp>
#include <meshpp/expr/functions.hpp>
#include <meshpp/ops/scatter_gather.hpp>

#include <cstddef>
#include <functional>
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
using rules = mp::layout<mp::split<batch, rows>, mp::split<hidden, cols>>;
using mesh_t = mp::mesh<mp::axes<rows, cols>, rules>;
constexpr double tol = 1e-6;  // float arithmetic against the double reference: a few ulp

template <class E>
using value_of = typename std::remove_cvref_t<E>::value_type;
template <class E>
using shape_of = typename std::remove_cvref_t<E>::shape_type;

// result(e): e evaluated, and gathered whole
template <class E>
auto result(const E& e) {
  return mp::gather(mp::eval(e));
}

// Inputs: a, b normal; q uniform in [0.5, 2) (a safe divisor); A, Bm, Q gathered.
struct inputs {
  mesh_t m{meshpp_test::grid2(world().size())};
  mp::tensor_of<float, mp::shape<batch, hidden>, mesh_t> a =
      mp::random_normal<float, batch, hidden>(m, sizes, 1);
  mp::tensor_of<float, mp::shape<batch, hidden>, mesh_t> b =
      mp::random_normal<float, batch, hidden>(m, sizes, 2);
  mp::tensor_of<float, mp::shape<batch, hidden>, mesh_t> q =
      mp::random_uniform<float, batch, hidden>(m, sizes, 3, 0.5f, 2.0f);
  xt::xtensor<float, 2> A = mp::gather(a), Bm = mp::gather(b), Q = mp::gather(q);
};
}  // namespace

TEST_CASE("the inputs are split, and not degenerate") {
  inputs in;
  const auto g = meshpp_test::grid2(world().size());
  CHECK(in.a.local_shape() ==
        std::array<std::size_t, 2>{8 / std::size_t(g[0]), 12 / std::size_t(g[1])});
  bool neg = false, pos = false;
  for (float v : in.A) (v < 0 ? neg : pos) = true;
  CHECK(neg);
  CHECK(pos);
}

TEST_CASE("arithmetic operators") {
  inputs in;
  const auto& [m, a, b, q, A, Bm, Q] = in;
  static_assert(std::is_same_v<value_of<decltype(a + b)>, float>);
  static_assert(std::is_same_v<shape_of<decltype(a + b)>, mp::shape<batch, hidden>>);
  CHECK_ALL_RANKS(matches(result(a + b), zip(A, Bm, std::plus<>()), tol));
  CHECK_ALL_RANKS(matches(result(a - b), zip(A, Bm, std::minus<>()), tol));
  CHECK_ALL_RANKS(matches(result(a * b), zip(A, Bm, std::multiplies<>()), tol));
  CHECK_ALL_RANKS(matches(result(a / q), zip(A, Q, std::divides<>()), tol));
  CHECK_ALL_RANKS(matches(result(-a), map(A, std::negate<>()), 0));
  // operators of expressions, not only of tensors
  CHECK_ALL_RANKS(matches(result(-(a - b) * (a + b)),
                          zip(A, Bm, [](double u, double v) { return (v - u) * (u + v); }), tol));
}

TEST_CASE("scalars on either side take the tensor's value type") {
  inputs in;
  const auto& [m, a, b, q, A, Bm, Q] = in;
  // x * 0.5 keeps a float tensor float; so do int and float scalars, on either side
  static_assert(std::is_same_v<value_of<decltype(a * 0.5)>, float>);
  static_assert(std::is_same_v<value_of<decltype(0.5 * a)>, float>);
  static_assert(std::is_same_v<value_of<decltype(2 * a)>, float>);
  static_assert(std::is_same_v<value_of<decltype(a / 3.0f)>, float>);
  static_assert(std::is_same_v<value_of<decltype(1 - a)>, float>);
  static_assert(std::is_same_v<typename decltype(mp::eval(a * 0.5))::value_type, float>);
  static_assert(std::is_same_v<shape_of<decltype(2 * a)>, mp::shape<batch, hidden>>);
  CHECK_ALL_RANKS(matches(result(2 * a), map(A, [](double v) { return 2 * v; }), 0));
  CHECK_ALL_RANKS(matches(result(a * 0.5), map(A, [](double v) { return v * 0.5; }), 0));
  CHECK_ALL_RANKS(matches(result(a / 3.0f), map(A, [](double v) { return v / 3; }), tol));
  CHECK_ALL_RANKS(matches(result(3 / q), map(Q, [](double v) { return 3 / v; }), tol));
  CHECK_ALL_RANKS(matches(result(1 - a), map(A, [](double v) { return 1 - v; }), tol));
  CHECK_ALL_RANKS(matches(result(a + 0.25), map(A, [](double v) { return v + 0.25; }), tol));
}

TEST_CASE("maximum and minimum, of tensors and scalars") {
  inputs in;
  const auto& [m, a, b, q, A, Bm, Q] = in;
  CHECK_ALL_RANKS(matches(result(mp::maximum(a, b)),
                          zip(A, Bm, [](double u, double v) { return std::max(u, v); }), 0));
  CHECK_ALL_RANKS(matches(result(mp::minimum(a, b)),
                          zip(A, Bm, [](double u, double v) { return std::min(u, v); }), 0));
  CHECK_ALL_RANKS(
      matches(result(mp::maximum(a, 0)), map(A, [](double v) { return std::max(v, 0.0); }), 0));
  CHECK_ALL_RANKS(
      matches(result(mp::minimum(0.5, a)), map(A, [](double v) { return std::min(0.5, v); }), 0));
}

TEST_CASE("cast<U>") {
  inputs in;
  const auto& [m, a, b, q, A, Bm, Q] = in;
  static_assert(std::is_same_v<value_of<decltype(mp::cast<int>(a))>, int>);
  static_assert(std::is_same_v<value_of<decltype(mp::cast<double>(a))>, double>);
  static_assert(
      std::is_same_v<typename decltype(mp::eval(mp::cast<int>(a * 10)))::value_type, int>);
  // truncation toward zero, as static_cast; the product is taken in float first
  CHECK_ALL_RANKS(
      matches(result(mp::cast<int>(a * 10)),
              map(A, [](double v) { return static_cast<int>(static_cast<float>(v) * 10.0f); }), 0));
  const auto d = mp::eval(mp::cast<double>(a) / 3);
  static_assert(std::is_same_v<typename decltype(d)::value_type, double>);
  // the division is in double: far closer than float would be
  CHECK_ALL_RANKS(matches(mp::gather(d), map(A, [](double v) { return v / 3; }), 1e-15));
}

TEST_CASE("assignment may read its own destination, element by element") {
  inputs in;
  auto& [m, a, b, q, A, Bm, Q] = in;
  a = a * 2 + b;  // an optimizer step: x = x * 2 + g
  CHECK_ALL_RANKS(
      matches(mp::gather(a), zip(A, Bm, [](double u, double v) { return u * 2 + v; }), tol));
  // every element was written: assign a constant expression over it
  a = b * 0;
  CHECK_ALL_RANKS(matches(mp::gather(a), map(Bm, [](double) { return 0.0; }), 0));
}
