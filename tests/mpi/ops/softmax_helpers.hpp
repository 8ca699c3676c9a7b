// Shared by softmax_helpers.cpp and softmax_helpers_traced.cpp (on softmax_check.hpp's dims,
// sizes and meshes): the meshes every check runs on, where's operands with their gathered
// whole arrays, and tabulate(), which builds a reference array from a formula of its index.
#pragma once

#include <array>
#include <cstddef>
#include <tuple>
#include <type_traits>

#include <xtensor/xtensor.hpp>

#include "softmax_check.hpp"

namespace softmax_test {

template <class M>
using double_t2 = mp::tensor_of<double, mp::shape<batch, hidden>, M>;

// shape_of<E>: an expression's dims, in order
template <class E>
using shape_of = typename std::remove_cvref_t<E>::shape_type;

// tabulate(shape, f): the reference array whose element at index (i, j, ...) is f(i, j, ...)
template <std::size_t N, class F>
xt::xtensor<double, N> tabulate(const std::array<std::size_t, N>& shape, F f) {
  xt::xtensor<double, N> out(shape);
  std::array<std::size_t, N> index{};
  for (std::size_t flat = 0; flat < out.size(); ++flat) {
    std::size_t rest = flat;
    for (std::size_t d = N; d-- > 0;) {
      index[d] = rest % shape[d];
      rest /= shape[d];
    }
    out.data()[flat] = static_cast<double>(std::apply(f, index));
  }
  return out;
}

// on_every_mesh(f): f(mesh) on split_mesh and replicated_mesh of every shape
template <class F>
void on_every_mesh(F&& f) {
  for (const auto& shape : mesh_shapes()) {
    f(split_mesh(shape));
    f(replicated_mesh(shape));
  }
}

// The operands of where: x [batch, hidden], y [hidden, batch] and bias [hidden] normal; c a
// bool tensor [hidden, batch] (y > 0: its dims in the other order than x's); below a bool
// tensor [seq, batch], seq < batch (seq is a dim neither branch has)
template <class Mesh>
struct where_operands {
  explicit where_operands(const Mesh& m)
      : x(mp::random_normal<double, batch, hidden>(m, sizes, 1)),
        y(mp::random_normal<double, hidden, batch>(m, sizes, 2)),
        bias(mp::random_normal<double, hidden>(m, sizes, 3)),
        c(mp::eval(y > 0)),
        below(mp::eval(mp::iota<seq>(m, sizes) < mp::iota<batch>(m, sizes))),
        X(mp::gather(x)),
        Y(mp::gather(y)),
        B(mp::gather(bias)),
        C(mp::gather(c)),
        S(mp::gather(below)) {}
  double_t2<Mesh> x;
  mp::tensor_of<double, mp::shape<hidden, batch>, Mesh> y;
  mp::tensor_of<double, mp::shape<hidden>, Mesh> bias;
  mp::tensor_of<bool, mp::shape<hidden, batch>, Mesh> c;
  mp::tensor_of<bool, mp::shape<seq, batch>, Mesh> below;
  xt::xtensor<double, 2> X, Y;
  xt::xtensor<double, 1> B;
  xt::xtensor<bool, 2> C, S;
};

}  // namespace softmax_test
