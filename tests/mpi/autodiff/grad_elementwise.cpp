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

TEST_CASE("gradients(loss, x, x): one tensor asked for twice fails on every rank") {
  const split_mesh m(meshpp_test::grid2(world().size()));
  const auto x = mp::trace(mp::random_normal<double, batch, hidden>(m, sizes, 1));
  const auto w = mp::trace(mp::random_normal<double, hidden>(m, sizes, 2));
  const auto loss = mp::reduce_sum(x * w);
  CHECK_THROWS_WITH_AS(mp::gradients(loss, w, x, w),
                       "meshpp::gradients(loss, xs...): xs 1 and 3 are the same tensor; ask for "
                       "it once",
                       mp::error);
  const auto [dx, dw] = mp::gradients(loss, x, w);  // asked once each: fine
  CHECK(meshpp_test::max_abs_difference(dx, mp::eval(x.value() * 0.0 + w.value())) == 0.0);
}
