// Each optimizer trains: loss = mean over [batch, cols] of (x w - y)^2, with x [batch/a, rows],
// w [rows, cols/b] a variable from zeros, y = x w_true; 50 steps of backward() and step() cut
// the loss by a factor of 100 or more.
#include <meshpp/autodiff/einsum.hpp>
#include <meshpp/autodiff/elementwise.hpp>
#include <meshpp/autodiff/gradients.hpp>
#include <meshpp/autodiff/reduce.hpp>
#include <meshpp/core/create.hpp>
#include <meshpp/optim/adafactor.hpp>
#include <meshpp/optim/adam.hpp>
#include <meshpp/optim/sgd.hpp>

#include "testing.hpp"

namespace mp = meshpp;
using meshpp_test::world;

MESHPP_DIM(batch);
MESHPP_DIM(rows);
MESHPP_DIM(cols);
MESHPP_DIM(a);
MESHPP_DIM(b);

namespace {
using rules = mp::layout<mp::split<batch, a>, mp::split<cols, b>>;
using mesh_t = mp::mesh<mp::axes<a, b>, rules>;

void least_squares(mp::optimizer& opt, auto add) {
  mesh_t mesh(meshpp_test::grid2(world().size()));
  const auto sizes = mp::extents{batch{} = 32, rows{} = 8, cols{} = 4};
  const auto x = mp::random_normal<double, batch, rows>(mesh, sizes, 1);
  const auto w_true = mp::random_normal<double, rows, cols>(mesh, sizes, 2);
  const auto y = mp::einsum<mp::shape<batch, cols>>(x, w_true);
  mp::variable w(mp::zeros<double, rows, cols>(mesh, sizes), "w");
  add(w);
  auto loss_of = [&] {
    const auto d = mp::einsum<mp::shape<batch, cols>>(x, w) - y;
    return mp::reduce_mean(d * d);
  };
  auto value = [](const auto& loss) { return *loss.value().local().data(); };
  const double first = value(loss_of());
  for (int k = 0; k < 50; ++k) {
    mp::backward(loss_of());
    opt.step();
  }
  const double last = value(loss_of());
  if (world().rank() == 0) MESSAGE("loss " << first << " -> " << last);
  CHECK(first > 1);
  CHECK(last < first / 100);
}

template <class Opt>
void least_squares(Opt&& opt) {
  least_squares(opt, [&](const auto& w) { opt.add(w); });
}
}  // namespace

TEST_CASE("each optimizer drives a least-squares loss down") {
  SUBCASE("sgd, momentum") { least_squares(mp::sgd({.learning_rate = 0.1, .momentum = 0.9})); }
  SUBCASE("adam") { least_squares(mp::adam({.learning_rate = 0.1})); }
  SUBCASE("adamw") { least_squares(mp::adamw({.learning_rate = 0.1, .weight_decay = 1e-3})); }
  SUBCASE("adafactor, factored, beta1") {
    least_squares(mp::adafactor({.learning_rate = 0.1,
                                 .beta1 = 0.9,
                                 .multiply_by_parameter_scale = false,
                                 .min_dim_size_to_factor = 4}));
  }
}
