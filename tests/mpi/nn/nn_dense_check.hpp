// Shared by the dense-layer tests: a single-rank reference of plain loops (double), and
// central-difference checks of the gradients of the layer's variables and input.
#pragma once

#include <meshpp/autodiff/gradients.hpp>
#include <meshpp/autodiff/reduce.hpp>
#include <meshpp/core/create.hpp>
#include <meshpp/nn/dense.hpp>
#include <meshpp/ops/scatter_gather.hpp>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <numbers>
#include <string>
#include <type_traits>

#include "gradcheck.hpp"
#include "nn_variable_gradcheck.hpp"
#include "reference.hpp"
#include "testing.hpp"

MESHPP_DIM(batch);
MESHPP_DIM(io);
MESHPP_DIM(hidden);
MESHPP_DIM(rows);
MESHPP_DIM(cols);

namespace nn_dense_test {

namespace mp = meshpp;

inline const auto sizes = mp::extents{batch{} = 4, io{} = 6, hidden{} = 4};

// data parallel on batch, model parallel on hidden (the paper's two-layer layout)
using batch_hidden_mesh =
    mp::mesh<mp::axes<rows, cols>, mp::layout<mp::split<batch, rows>, mp::split<hidden, cols>>>;
// both of the layer's dims split: the contracted io too (the forward einsum allreduces)
using io_hidden_mesh =
    mp::mesh<mp::axes<rows, cols>, mp::layout<mp::split<io, rows>, mp::split<hidden, cols>>>;
using replicated_mesh = mp::mesh<mp::axes<rows, cols>, mp::layout<>>;

constexpr double tol = 1e-7;

// act_reference<Act>(z): the activation in double, written out
template <class Act>
double act_reference(double z) {
  if constexpr (std::is_same_v<Act, mp::activation::relu>)
    return z > 0 ? z : 0;
  else if constexpr (std::is_same_v<Act, mp::activation::gelu>)
    return 0.5 * z * (1 + std::erf(z / std::numbers::sqrt2));
  else if constexpr (std::is_same_v<Act, mp::activation::tanh>)
    return std::tanh(z);
  else if constexpr (std::is_same_v<Act, mp::activation::sigmoid>)
    return 1 / (1 + std::exp(-z));
  else
    return z;
}

// check_layer<Act, UseBias>(mesh): forward against plain loops, then the gradients of x, w
// and b against central differences
template <class Act, bool UseBias = true, class Mesh>
void check_layer(const Mesh& m) {
  using layer_t = mp::dense<double, mp::shape<io>, mp::shape<hidden>, Mesh, Act, UseBias>;
  layer_t layer(m, sizes, /*seed*/ 7, "layer");
  if constexpr (UseBias) {
    layer.bias().value() = mp::random_normal<typename layer_t::bias_type>(m, sizes, 3, 0.0, 0.5);
  }
  const auto x = mp::random_normal<double, batch, io>(m, sizes, 1);
  const auto y = layer(x);

  // forward: a plain loop over the gathered inputs
  const auto xs = mp::gather(x);
  const auto ws = mp::gather(layer.weight().value());
  xt::xtensor<double, 2> want({4, 4});
  for (std::size_t b = 0; b < 4; ++b) {
    for (std::size_t h = 0; h < 4; ++h) {
      double z = 0;
      for (std::size_t i = 0; i < 6; ++i) z += xs(b, i) * ws(i, h);
      if constexpr (UseBias) z += mp::gather(layer.bias().value())(h);
      want(b, h) = act_reference<Act>(z);
    }
  }
  CHECK_ALL_RANKS(meshpp_test::matches(mp::gather(y.value()), want, 1e-12));

  // bias and activation are one recorded node: its inputs are the einsum's result and b
  if constexpr (UseBias) {
    CHECK(y.node()->inputs.size() == 2);
    CHECK(y.node()->inputs.back() == layer.bias().node());
  }

  // gradients, by central differences
  auto loss = [&] { return meshpp_test::weighted_sum(layer(x)); };
  CHECK(meshpp_test::gradient_error(
            x, [&](const auto& xt) { return meshpp_test::weighted_sum(layer(xt)); }) < tol);
  CHECK(meshpp_test::variable_gradient_error(layer.weight(), loss) < tol);
  if constexpr (UseBias) CHECK(meshpp_test::variable_gradient_error(layer.bias(), loss) < tol);
}

}  // namespace nn_dense_test
