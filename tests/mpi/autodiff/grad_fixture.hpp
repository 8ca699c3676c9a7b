// The shared fixture of the gradient tests over [batch, hidden] (grad_elementwise.cpp,
// grad_functions.cpp, grad_movement.cpp, grad_slicing.cpp, grad_reshape.cpp,
// nn_layer_norm_dropout.cpp) and the common ground of the other gradient tests' fixtures
// (grad_einsum_check.hpp, grad_embedding_check.hpp, grad_reduce_check.hpp): the autodiff
// headers, the central-difference check (gradcheck.hpp), the dims batch, hidden, rows and cols,
// and two mesh types over axes<rows, cols>:
//   split_mesh       batch:rows, hidden:cols (split_mesh_with<More...> adds a test's own rules)
//   replicated_mesh  no rules: everything replicated, so layouts that split slice locally
// Each test keeps its own sizes; mesh_shapes() gives the mesh shapes that split each dim over
// 1, 2 and 4 ranks somewhere, and componentwise_operands<Mesh> the inputs of
// the component-wise cases.
#pragma once

#include <meshpp/autodiff/elementwise.hpp>
#include <meshpp/autodiff/gradients.hpp>
#include <meshpp/autodiff/reduce.hpp>
#include <meshpp/core/create.hpp>
#include <meshpp/core/tensor.hpp>

#include <array>
#include <vector>

#include "gradcheck.hpp"
#include "testing.hpp"

namespace mp = meshpp;
using meshpp_test::check_gradient;
using meshpp_test::gradient_error;
using meshpp_test::weighted_sum;
using meshpp_test::world;

MESHPP_DIM(batch);
MESHPP_DIM(hidden);
MESHPP_DIM(rows);
MESHPP_DIM(cols);

namespace {
template <class... More>
using split_rules_with = mp::layout<mp::split<batch, rows>, mp::split<hidden, cols>, More...>;
template <class... More>
using split_mesh_with = mp::mesh<mp::axes<rows, cols>, split_rules_with<More...>>;
using split_rules = split_rules_with<>;
using split_mesh = split_mesh_with<>;
using replicated_mesh = mp::mesh<mp::axes<rows, cols>, mp::layout<>>;

// mesh_shapes(): the squarest grid of the world, one row, and one column
inline std::vector<std::array<int, 2>> mesh_shapes() {
  const int n = world().size();
  return {meshpp_test::grid2(n), {1, n}, {n, 1}};
}

/// The operands of the component-wise cases, double, from the global index: a and other
/// normal, p uniform in [0.5, 2) (positive: for log, sqrt and pow's base), bias normal over
/// hidden alone (broadcast).
template <class Mesh>
struct componentwise_operands {
  template <class Sizes>
  componentwise_operands(const Mesh& m, const Sizes& sizes)
      : a(mp::random_normal<double, batch, hidden>(m, sizes, 1)),
        p(mp::random_uniform<double, batch, hidden>(m, sizes, 2, 0.5, 2.0)),
        bias(mp::random_normal<double, hidden>(m, sizes, 3)),
        other(mp::random_normal<double, batch, hidden>(m, sizes, 4)) {}
  mp::tensor_of<double, mp::shape<batch, hidden>, Mesh> a, p;
  mp::tensor_of<double, mp::shape<hidden>, Mesh> bias;
  mp::tensor_of<double, mp::shape<batch, hidden>, Mesh> other;
};
}  // namespace
