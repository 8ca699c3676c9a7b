// Gradients of unary component-wise functions, checked by central differences (double) at every
// element, under a split and a replicated layout.
#include "grad_fixture.hpp"

namespace {
const auto sizes = mp::extents{batch{} = 4, hidden{} = 6};

template <class Mesh>
void check_all(const Mesh& m) {
  const componentwise_operands o(m, sizes);
  check_gradient("-a", o.a, [](const auto& x) { return weighted_sum(-x); });
  check_gradient("exp", o.a, [](const auto& x) { return weighted_sum(mp::exp(x)); });
  check_gradient("log", o.p, [](const auto& x) { return weighted_sum(mp::log(x)); });
  check_gradient("sqrt", o.p, [](const auto& x) { return weighted_sum(mp::sqrt(x)); });
  check_gradient("rsqrt", o.p, [](const auto& x) { return weighted_sum(mp::rsqrt(x)); });
  check_gradient("tanh", o.a, [](const auto& x) { return weighted_sum(mp::tanh(x)); });
  check_gradient("sigmoid", o.a, [](const auto& x) { return weighted_sum(mp::sigmoid(x)); });
  check_gradient("relu", o.a, [](const auto& x) { return weighted_sum(mp::relu(x)); });
  check_gradient("gelu", o.a, [](const auto& x) { return weighted_sum(mp::gelu(x)); });
  check_gradient("abs", o.a, [](const auto& x) { return weighted_sum(mp::abs(x)); });
}
}  // namespace

TEST_CASE("unary function gradients match central differences, split layout") {
  check_all(split_mesh(meshpp_test::grid2(world().size())));
}

TEST_CASE("unary function gradients match central differences, replicated layout") {
  check_all(replicated_mesh(meshpp_test::grid2(world().size())));
}
