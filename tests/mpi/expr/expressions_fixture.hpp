// The shared fixture of expressions_math.cpp and expressions_activations.cpp: float and
// double tensors on a 2-D mesh of every rank (hidden on the first mesh dim, batch on the
// second), gathered for the single-rank reference, and the tolerance of each value type.
#pragma once

#include <meshpp/core/create.hpp>
#include <meshpp/expr/functions.hpp>
#include <meshpp/ops/scatter_gather.hpp>

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
