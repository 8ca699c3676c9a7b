// Shared by softmax.cpp and softmax_helpers.cpp: the dims, the sizes, three meshes over
// axes<rows, cols>, and single-rank references of softmax, log_softmax, logsumexp and argmax
// along one axis of a whole [batch, hidden] array, as plain loops in double (no mesh).
//   split_mesh        batch:rows, hidden:cols   softmax<hidden> reduces over cols (generic path)
//   batch_split_mesh  batch:rows                hidden whole and last: the row-by-row path
//   replicated_mesh   no rules                  the row-by-row path, nothing communicated
#pragma once

#include <meshpp/core/create.hpp>
#include <meshpp/core/tensor.hpp>
#include <meshpp/ops/scatter_gather.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <vector>

#include <xtensor/xtensor.hpp>

#include "reference.hpp"
#include "testing.hpp"

MESHPP_DIM(batch);
MESHPP_DIM(hidden);
MESHPP_DIM(seq);
MESHPP_DIM(rows);
MESHPP_DIM(cols);

namespace softmax_test {

namespace mp = meshpp;
using meshpp_test::world;

inline constexpr std::size_t nb = 4, nh = 8, ns = 2;
inline const auto sizes = mp::extents{batch{} = nb, hidden{} = nh, seq{} = ns};

using split_mesh =
    mp::mesh<mp::axes<rows, cols>, mp::layout<mp::split<batch, rows>, mp::split<hidden, cols>>>;
using batch_split_mesh = mp::mesh<mp::axes<rows, cols>, mp::layout<mp::split<batch, rows>>>;
using replicated_mesh = mp::mesh<mp::axes<rows, cols>, mp::layout<>>;

// mesh_shapes(): the squarest grid of the world, one row, and one column (each divides nb and
// nh at 1, 2 and 4 ranks)
inline std::vector<std::array<int, 2>> mesh_shapes() {
  const int n = world().size();
  return {meshpp_test::grid2(n), {1, n}, {n, 1}};
}

// agrees(got, want, tol): the same shape, and every element within tol * max(1, |want|), where
// an infinite want must be met exactly and a NaN want by a NaN. Reports the first mismatch.
template <class G, class W>
bool agrees(const G& got, const W& want, double tol) {
  if (got.dimension() != want.dimension() || got.size() != want.size()) {
    MESSAGE("rank " << world().rank() << ": got " << got.size() << " values, want " << want.size());
    return false;
  }
  for (std::size_t i = 0; i < got.size(); ++i) {
    const double g = static_cast<double>(got.data()[i]);
    const double w = static_cast<double>(want.data()[i]);
    const bool ok = std::isnan(w)   ? std::isnan(g)
                    : std::isinf(w) ? g == w
                                    : std::abs(g - w) <= tol * std::max(1.0, std::abs(w));
    if (!ok) {
      MESSAGE("rank " << world().rank() << ": flat element " << i << " is " << g << ", want " << w);
      return false;
    }
  }
  return true;
}

namespace reference {

using meshpp_test::map;
using meshpp_test::to_double;

using array2 = xt::xtensor<double, 2>;
using array1 = xt::xtensor<double, 1>;

// lines(x, axis): the number of lines along axis (the other axis' size) and their length
inline std::size_t other_size(const array2& x, std::size_t axis) { return x.shape()[1 - axis]; }
inline double& at(array2& x, std::size_t axis, std::size_t line, std::size_t i) {
  return axis == 1 ? x(line, i) : x(i, line);
}
inline double at(const array2& x, std::size_t axis, std::size_t line, std::size_t i) {
  return axis == 1 ? x(line, i) : x(i, line);
}

// logsumexp(x, axis): log sum_i exp(x_i) along axis, the maximum taken out (0 if infinite)
inline array1 logsumexp(const array2& x, std::size_t axis) {
  const std::size_t lines = other_size(x, axis), n = x.shape()[axis];
  auto out = array1::from_shape({lines});
  for (std::size_t l = 0; l < lines; ++l) {
    double m = -std::numeric_limits<double>::infinity();
    for (std::size_t i = 0; i < n; ++i) m = std::max(m, at(x, axis, l, i));
    if (!std::isfinite(m)) m = 0;
    double s = 0;
    for (std::size_t i = 0; i < n; ++i) s += std::exp(at(x, axis, l, i) - m);
    out(l) = std::log(s) + m;
  }
  return out;
}

// softmax(x, axis): exp(x_i - m) / sum_j exp(x_j - m) along axis (a line of -inf: NaN)
inline array2 softmax(const array2& x, std::size_t axis) {
  const std::size_t lines = other_size(x, axis), n = x.shape()[axis];
  array2 out(x.shape());
  for (std::size_t l = 0; l < lines; ++l) {
    double m = -std::numeric_limits<double>::infinity();
    for (std::size_t i = 0; i < n; ++i) m = std::max(m, at(x, axis, l, i));
    double s = 0;
    for (std::size_t i = 0; i < n; ++i) s += std::exp(at(x, axis, l, i) - m);
    for (std::size_t i = 0; i < n; ++i) at(out, axis, l, i) = std::exp(at(x, axis, l, i) - m) / s;
  }
  return out;
}

// log_softmax(x, axis): x_i - logsumexp(x) along axis
inline array2 log_softmax(const array2& x, std::size_t axis) {
  const auto lse = logsumexp(x, axis);
  array2 out(x.shape());
  for (std::size_t l = 0; l < other_size(x, axis); ++l) {
    for (std::size_t i = 0; i < x.shape()[axis]; ++i)
      at(out, axis, l, i) = at(x, axis, l, i) - lse(l);
  }
  return out;
}

// argmax(x, axis): the first index of the largest value along axis
inline array1 argmax(const array2& x, std::size_t axis) {
  auto out = array1::from_shape({other_size(x, axis)});
  for (std::size_t l = 0; l < out.size(); ++l) {
    std::size_t best = 0;
    for (std::size_t i = 1; i < x.shape()[axis]; ++i) {
      if (at(x, axis, l, i) > at(x, axis, l, best)) best = i;
    }
    out(l) = static_cast<double>(best);
  }
  return out;
}

}  // namespace reference

}  // namespace softmax_test
