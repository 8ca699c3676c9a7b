// Layer normalisation (nn/layer_norm.hpp) and dropout (nn/dropout.hpp): forward against plain
// loops, gradients against central differences, under a layout splitting the normalised dim
// (and batch) and under a replicated one; dropout's mask identical bit for bit across layouts.
#include <meshpp/nn/dropout.hpp>
#include <meshpp/nn/layer_norm.hpp>
#include <meshpp/ops/scatter_gather.hpp>

#include <cmath>
#include <cstddef>

#include "../autodiff/grad_fixture.hpp"
#include "reference.hpp"

// split_mesh splits hidden, the normalised dim: its means allreduce over cols
namespace {
const auto sizes = mp::extents{batch{} = 4, hidden{} = 6};

template <class Mesh>
void check_layer_norm(const Mesh& m) {
  // rows with a large offset: a one-pass variance would lose digits there
  const auto x = mp::generate<double, batch, hidden>(m, sizes, [](const auto& i) {
    return 1000.0 * static_cast<double>(i[0]) + std::sin(3.0 * static_cast<double>(i[1] + i[0]));
  });
  const auto gamma = mp::random_normal<double, hidden>(m, sizes, 2, 1.0, 0.5);
  const auto beta = mp::random_normal<double, hidden>(m, sizes, 3);
  const double eps = 1e-3;
  const auto y = mp::layer_norm<hidden>(mp::trace(x), gamma, beta, eps);

  const auto xs = mp::gather(x);
  const auto gs = mp::gather(gamma);
  const auto bs = mp::gather(beta);
  xt::xtensor<double, 2> want({4, 6});
  for (std::size_t b = 0; b < 4; ++b) {
    double mean = 0, var = 0;
    for (std::size_t h = 0; h < 6; ++h) mean += xs(b, h) / 6;
    for (std::size_t h = 0; h < 6; ++h) var += (xs(b, h) - mean) * (xs(b, h) - mean) / 6;
    for (std::size_t h = 0; h < 6; ++h)
      want(b, h) = (xs(b, h) - mean) / std::sqrt(var + eps) * gs(h) + bs(h);
  }
  CHECK_ALL_RANKS(meshpp_test::matches(mp::gather(y.value()), want, 1e-12));

  // gradients of x, gamma and beta (the inputs of moderate size: finite differences in x)
  const auto x0 = mp::random_normal<double, batch, hidden>(m, sizes, 4);
  check_gradient("layer_norm, d/dx", x0, [&](const auto& t) {
    return weighted_sum(mp::layer_norm<hidden>(t, gamma, beta, eps));
  });
  check_gradient("layer_norm, d/dgamma", gamma, [&](const auto& t) {
    return weighted_sum(mp::layer_norm<hidden>(x0, t, beta, eps));
  });
  check_gradient("layer_norm, d/dbeta", beta, [&](const auto& t) {
    return weighted_sum(mp::layer_norm<hidden>(x0, gamma, t, eps));
  });

  // the layer: gamma 1, beta 0, and its variables receive gradients through backward()
  mp::layer_norm_layer<double, hidden, Mesh> norm(m, sizes, eps, "ln");
  const auto z = norm(mp::trace(x0));
  CHECK_ALL_RANKS(meshpp_test::matches(
      mp::gather(z.value()),
      mp::gather(mp::layer_norm<hidden>(mp::trace(x0), mp::ones<double, hidden>(m, sizes),
                                        mp::zeros<double, hidden>(m, sizes), eps)
                     .value()),
      0));
  mp::backward(weighted_sum(z));
  const auto [dgamma, dbeta] =
      mp::gradients(weighted_sum(mp::layer_norm<hidden>(x0, norm.gamma(), norm.beta(), eps)),
                    norm.gamma(), norm.beta());
  REQUIRE(norm.gamma().grad().has_value());
  REQUIRE(norm.beta().grad().has_value());
  CHECK_ALL_RANKS(meshpp_test::matches(mp::gather(*norm.gamma().grad()), mp::gather(dgamma), 0));
  CHECK_ALL_RANKS(meshpp_test::matches(mp::gather(*norm.beta().grad()), mp::gather(dbeta), 0));
  CHECK(norm.gamma().name() == "ln/gamma");
}

// the mask of dropout(x, rate, seed, step) on ones: 0 or 1 / (1 - rate) per element
template <class Mesh>
auto dropout_of_ones(const Mesh& m, double rate, std::uint64_t step) {
  const auto big = mp::extents{batch{} = 32, hidden{} = 64};
  return mp::gather(
      mp::dropout(mp::trace(mp::ones<float, batch, hidden>(m, big)), rate, 11, step).value());
}
}  // namespace

TEST_CASE("layer_norm: forward and gradients, normalised dim split") {
  check_layer_norm(split_mesh(meshpp_test::grid2(world().size())));
}
TEST_CASE("layer_norm: forward and gradients, replicated") {
  check_layer_norm(replicated_mesh(meshpp_test::grid2(world().size())));
}

TEST_CASE("dropout: the mask is the same bits under every layout, and keeps about 1 - rate") {
  const auto grid = meshpp_test::grid2(world().size());
  split_mesh split(grid);
  replicated_mesh whole(grid);
  const double rate = 0.3;
  const auto a = dropout_of_ones(split, rate, 0);
  CHECK_ALL_RANKS(meshpp_test::bit_equal(a, dropout_of_ones(whole, rate, 0)));
  std::size_t kept = 0;
  bool values_ok = true;
  for (float v : a) {
    kept += v != 0.0f;
    values_ok = values_ok && (v == 0.0f || v == static_cast<float>(1.0 / (1.0 - rate)));
  }
  CHECK(values_ok);
  // 2048 elements: the kept fraction's standard deviation is 0.01
  CHECK(std::abs(static_cast<double>(kept) / static_cast<double>(a.size()) - (1 - rate)) < 0.04);
  // another step, another mask (same under every layout too)
  const auto b = dropout_of_ones(split, rate, 1);
  CHECK_FALSE(meshpp_test::bit_equal(a, b));
  CHECK_ALL_RANKS(meshpp_test::bit_equal(b, dropout_of_ones(whole, rate, 1)));
  // plain tensors take the same mask
  const auto big = mp::extents{batch{} = 32, hidden{} = 64};
  CHECK_ALL_RANKS(meshpp_test::bit_equal(
      a, mp::gather(mp::dropout(mp::ones<float, batch, hidden>(split, big), rate, 11, 0))));
}

TEST_CASE("dropout: gradient uses the same mask; rate 0 and inference are the identity") {
  const auto grid = meshpp_test::grid2(world().size());
  split_mesh m(grid);
  const auto x = mp::random_normal<double, batch, hidden>(m, sizes, 5);
  check_gradient("dropout 0.5", x,
                 [](const auto& t) { return weighted_sum(mp::dropout(t, 0.5, 3)); });
  check_gradient("dropout 0", x,
                 [](const auto& t) { return weighted_sum(mp::dropout(t, 0.0, 3)); });
  // the gradient is the mask itself: zero exactly where the output is
  const auto xt = mp::trace(x);
  const auto y = mp::dropout(xt, 0.5, 3);
  const auto [dx] = mp::vjp(y, mp::ones<double, batch, hidden>(m, sizes), xt);
  const auto ys = mp::gather(y.value());
  const auto gs = mp::gather(dx);
  bool same_mask = true;
  for (std::size_t i = 0; i < ys.size(); ++i)
    same_mask = same_mask && ((ys.data()[i] == 0.0) == (gs.data()[i] == 0.0)) &&
                (gs.data()[i] == 0.0 || gs.data()[i] == 2.0);
  CHECK_ALL_RANKS(same_mask);

  CHECK(mp::dropout(xt, 0.0, 3).node() == xt.node());  // rate 0: x itself
  mp::dropout_layer drop(0.5, 3);
  const auto d0 = drop(xt);
  CHECK(drop.step() == 1);
  CHECK_ALL_RANKS(meshpp_test::bit_equal(mp::gather(d0.value()), ys));  // step 0: as above
  const auto d1 = drop(xt);
  CHECK_FALSE(meshpp_test::bit_equal(mp::gather(d1.value()), ys));
  drop.inference = true;
  CHECK(drop(xt).node() == xt.node());
  CHECK(drop.step() == 2);
  CHECK(meshpp_test::throws_with<mp::error>([] { mp::dropout_layer(1.0, 0); }, {"rate"}));
}
