// Gradients of binary component-wise functions (pow, maximum, minimum, where, cast), checked by
// central differences (double) at every element, under a split and a replicated layout.
#include "grad_fixture.hpp"

namespace {
const auto sizes = mp::extents{batch{} = 4, hidden{} = 6};

template <class Mesh>
void check_all(const Mesh& m) {
  const componentwise_operands o(m, sizes);
  check_gradient("pow base", o.p, [&](const auto& x) { return weighted_sum(mp::pow(x, 2.5)); });
  check_gradient("pow both", o.p, [&](const auto& x) { return weighted_sum(mp::pow(x, x)); });
  check_gradient("maximum", o.a,
                 [&](const auto& x) { return weighted_sum(mp::maximum(x, o.other)); });
  check_gradient("minimum", o.a,
                 [&](const auto& x) { return weighted_sum(mp::minimum(o.other, x)); });
  check_gradient("where", o.a, [&](const auto& x) {
    return weighted_sum(mp::where(o.other > 0.0, x * 2.0, x * x));
  });
  check_gradient("cast", o.a,
                 [&](const auto& x) { return weighted_sum(mp::cast<double>(x) * 3.0); });
}
}  // namespace

TEST_CASE("binary function gradients match central differences, split layout") {
  check_all(split_mesh(meshpp_test::grid2(world().size())));
}

TEST_CASE("binary function gradients match central differences, replicated layout") {
  check_all(replicated_mesh(meshpp_test::grid2(world().size())));
}
