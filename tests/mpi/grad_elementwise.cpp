// Gradients of component-wise arithmetic and broadcasting (binary functions: grad_binary.cpp),
// checked by central differences (double) at every element, under a split and a replicated layout.
#include "grad_fixture.hpp"

namespace {
const auto sizes = mp::extents{batch{} = 4, hidden{} = 6};

template <class Mesh>
void check_all(const Mesh& m) {
  const componentwise_operands o(m, sizes);
  check_gradient("a + bias (broadcast)", o.bias,
                 [&](const auto& b) { return weighted_sum(o.a + b); });
  check_gradient("a - b", o.a, [&](const auto& x) { return weighted_sum(o.other - x); });
  check_gradient("a * b", o.a, [&](const auto& x) { return weighted_sum(x * x * o.other); });
  check_gradient("a / b", o.p, [&](const auto& x) { return weighted_sum(o.a / x + x / 3.0); });
}
}  // namespace

TEST_CASE("component-wise gradients match central differences, split layout") {
  check_all(split_mesh(meshpp_test::grid2(world().size())));
}

TEST_CASE("component-wise gradients match central differences, replicated layout") {
  check_all(replicated_mesh(meshpp_test::grid2(world().size())));
}
