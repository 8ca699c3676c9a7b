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
  check_gradient("softplus", o.a, [](const auto& x) { return weighted_sum(mp::softplus(x)); });
}
}  // namespace

TEST_CASE("unary function gradients match central differences, split layout") {
  check_all(split_mesh(meshpp_test::grid2(world().size())));
}

TEST_CASE("unary function gradients match central differences, replicated layout") {
  check_all(replicated_mesh(meshpp_test::grid2(world().size())));
}

TEST_CASE("softplus of an expression: log(1 + e^x), finite for large |x|") {
  const split_mesh m(meshpp_test::grid2(world().size()));
  // x from -800 to 800: e^x alone would overflow at the ends
  const auto x = mp::generate<double, batch, hidden>(
      m, sizes, [](const auto& g) { return (static_cast<double>(g[0] * 6 + g[1]) - 11.5) * 70.0; });
  const auto whole_x = mp::gather(x);
  const auto whole_y = mp::gather(mp::eval(mp::softplus(x * 1.0)));
  for (std::size_t i = 0; i < whole_x.size(); ++i) {
    const double v = whole_x.data()[i];
    const double expected = v > 0 ? v + std::log1p(std::exp(-v)) : std::log1p(std::exp(v));
    CHECK(whole_y.data()[i] == doctest::Approx(expected));
  }
}
