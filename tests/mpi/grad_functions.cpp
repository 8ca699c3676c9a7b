// Gradients of unary component-wise functions, checked by central differences (double) at every
// element, under a split and a replicated layout.
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
  check("-a", a, [&](const auto& x) { return weighted_sum(-x); });
  check("exp", a, [&](const auto& x) { return weighted_sum(mp::exp(x)); });
  check("log", p, [&](const auto& x) { return weighted_sum(mp::log(x)); });
  check("sqrt", p, [&](const auto& x) { return weighted_sum(mp::sqrt(x)); });
  check("rsqrt", p, [&](const auto& x) { return weighted_sum(mp::rsqrt(x)); });
  check("tanh", a, [&](const auto& x) { return weighted_sum(mp::tanh(x)); });
  check("sigmoid", a, [&](const auto& x) { return weighted_sum(mp::sigmoid(x)); });
  check("relu", a, [&](const auto& x) { return weighted_sum(mp::relu(x)); });
  check("gelu", a, [&](const auto& x) { return weighted_sum(mp::gelu(x)); });
  check("abs", a, [&](const auto& x) { return weighted_sum(mp::abs(x)); });
}
}  // namespace

TEST_CASE("unary function gradients match central differences, split layout") {
  split_mesh m(meshpp_test::grid2(world().size()));
  check_all(m);
}

TEST_CASE("unary function gradients match central differences, replicated layout") {
  replicated_mesh m(meshpp_test::grid2(world().size()));
  check_all(m);
}
