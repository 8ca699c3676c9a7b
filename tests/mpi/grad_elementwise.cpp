// Gradients of component-wise arithmetic, broadcasting and binary functions, checked by central
// differences (double) at every element, under a split and a replicated layout.
#include <meshpp/autodiff/elementwise.hpp>
#include <meshpp/autodiff/gradients.hpp>
#include <meshpp/autodiff/reduce.hpp>
#include <meshpp/core/create.hpp>

#include <string>

#include "gradcheck.hpp"
#include "testing.hpp"

namespace mp = meshpp;
using meshpp_test::gradient_error;
using meshpp_test::weighted_sum;
using meshpp_test::world;

MESHPP_DIM(batch);
MESHPP_DIM(hidden);
MESHPP_DIM(rows);
MESHPP_DIM(cols);

namespace {
const auto sizes = mp::extents{batch{} = 4, hidden{} = 6};
using split_rules = mp::layout<mp::split<batch, rows>, mp::split<hidden, cols>>;
using split_mesh = mp::mesh<mp::axes<rows, cols>, split_rules>;
using replicated_mesh = mp::mesh<mp::axes<rows, cols>, mp::layout<>>;
constexpr double tol = 1e-7;

template <class Mesh>
void check_all(const Mesh& m) {
  auto a = mp::random_normal<double, batch, hidden>(m, sizes, 1);
  auto p = mp::random_uniform<double, batch, hidden>(m, sizes, 2, 0.5, 2.0);
  auto bias = mp::random_normal<double, hidden>(m, sizes, 3);
  auto other = mp::random_normal<double, batch, hidden>(m, sizes, 4);
  auto check = [&](const char* what, const auto& x, auto f) {
    const std::string name = what;  // doctest prints a const char* as an address
    CAPTURE(name);
    CHECK(gradient_error(x, f) < tol);
  };
  check("a + bias (broadcast)", bias, [&](const auto& b) { return weighted_sum(a + b); });
  check("a - b", a, [&](const auto& x) { return weighted_sum(other - x); });
  check("a * b", a, [&](const auto& x) { return weighted_sum(x * x * other); });
  check("a / b", p, [&](const auto& x) { return weighted_sum(a / x + x / 3.0); });
  check("pow base", p, [&](const auto& x) { return weighted_sum(mp::pow(x, 2.5)); });
  check("pow both", p, [&](const auto& x) { return weighted_sum(mp::pow(x, x)); });
  check("maximum", a, [&](const auto& x) { return weighted_sum(mp::maximum(x, other)); });
  check("minimum", a, [&](const auto& x) { return weighted_sum(mp::minimum(other, x)); });
  check("where", a,
        [&](const auto& x) { return weighted_sum(mp::where(other > 0.0, x * 2.0, x * x)); });
  check("cast", a, [&](const auto& x) { return weighted_sum(mp::cast<double>(x) * 3.0); });
}
}  // namespace

TEST_CASE("component-wise gradients match central differences, split layout") {
  split_mesh m(meshpp_test::grid2(world().size()));
  check_all(m);
}

TEST_CASE("component-wise gradients match central differences, replicated layout") {
  replicated_mesh m(meshpp_test::grid2(world().size()));
  check_all(m);
}
