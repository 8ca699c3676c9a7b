// layer_norm<hidden> (nn/layer_norm.hpp) by both of its paths on rows longer than a lane group
// (hidden 37: four groups of 8 and a remainder), x [batch, seq, hidden] with rows offset by up
// to 1500 (a one-pass variance would lose digits):
//   rows_mesh   batch:rows, seq:cols   hidden whole and last: the row-by-row path
//   split_mesh  hidden:cols, seq:rows  the reductions over a split hidden (generic path)
// y, dx, dgamma and dbeta of a weighted sum of y against plain loops in double over the
// gathered tensors (no mesh), within 1e-10 relative (x - mean loses 3 digits at 1000); and what the
// forward step communicates: nothing row by row, an allreduce each for the mean and the variance
// over a split hidden.
#include <meshpp/autodiff/elementwise.hpp>
#include <meshpp/autodiff/gradients.hpp>
#include <meshpp/autodiff/reduce.hpp>
#include <meshpp/core/counters.hpp>
#include <meshpp/core/create.hpp>
#include <meshpp/core/error.hpp>
#include <meshpp/nn/layer_norm.hpp>
#include <meshpp/ops/scatter_gather.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "gradcheck.hpp"
#include "testing.hpp"

MESHPP_DIM(batch);
MESHPP_DIM(seq);
MESHPP_DIM(hidden);
MESHPP_DIM(rows);
MESHPP_DIM(cols);

namespace {

namespace mp = meshpp;
using meshpp_test::world;

using axes = mp::axes<rows, cols>;
using rows_mesh = mp::mesh<axes, mp::layout<mp::split<batch, rows>, mp::split<seq, cols>>>;
using split_mesh = mp::mesh<axes, mp::layout<mp::split<hidden, cols>, mp::split<seq, rows>>>;

constexpr std::size_t nb = 5, ns = 3, nh = 37;
const auto sizes = mp::extents{batch{} = nb, seq{} = ns, hidden{} = nh};

template <class Mesh>
void check(const Mesh& m) {
  const auto mesh = m.describe();
  CAPTURE(mesh);
  const auto x = mp::generate<double, batch, seq, hidden>(m, sizes, [](const auto& i) {
    return 250.0 * static_cast<double>(i[0] + i[1]) +
           std::sin(1.7 * static_cast<double>(i[2] * 3 + i[1] + 5 * i[0]));
  });
  const mp::variable gamma(mp::random_normal<double, hidden>(m, sizes, 2, 1.0, 0.5), "gamma");
  const mp::variable beta(mp::random_normal<double, hidden>(m, sizes, 3), "beta");
  const double eps = 1e-3;
  const auto xt = mp::trace(x);
  const auto y = mp::layer_norm<hidden>(xt, gamma, beta, eps);
  const auto [dx, dgamma, dbeta] = mp::gradients(meshpp_test::weighted_sum(y), xt, gamma, beta);

  const auto X = mp::gather(x), G = mp::gather(gamma.value()), B = mp::gather(beta.value());
  const auto W = mp::gather(mp::random_normal<double, batch, seq, hidden>(m, sizes, 99));
  const auto Y = mp::gather(y.value()), DX = mp::gather(dx);
  const auto DG = mp::gather(dgamma), DB = mp::gather(dbeta);
  std::vector<double> dg(nh, 0.0), db(nh, 0.0);
  double worst = 0;
  const auto differs = [&](double got, double want) {
    worst = std::max(worst, std::abs(got - want) / std::max(1.0, std::abs(want)));
  };
  for (std::size_t b = 0; b < nb; ++b) {
    for (std::size_t s = 0; s < ns; ++s) {
      double mean = 0, var = 0, m1 = 0, m2 = 0;
      for (std::size_t h = 0; h < nh; ++h) mean += X(b, s, h) / nh;
      for (std::size_t h = 0; h < nh; ++h) var += (X(b, s, h) - mean) * (X(b, s, h) - mean) / nh;
      const double r = 1 / std::sqrt(var + eps);
      const auto xhat = [&](std::size_t h) { return (X(b, s, h) - mean) * r; };
      for (std::size_t h = 0; h < nh; ++h) {
        differs(Y(b, s, h), xhat(h) * G(h) + B(h));
        m1 += W(b, s, h) * G(h) / nh;
        m2 += W(b, s, h) * G(h) * xhat(h) / nh;
        dg[h] += W(b, s, h) * xhat(h);
        db[h] += W(b, s, h);
      }
      for (std::size_t h = 0; h < nh; ++h)
        differs(DX(b, s, h), r * (W(b, s, h) * G(h) - m1 - xhat(h) * m2));
    }
  }
  for (std::size_t h = 0; h < nh; ++h) {
    differs(DG(h), dg[h]);
    differs(DB(h), db[h]);
  }
  CAPTURE(worst);
  CHECK_ALL_RANKS(worst <= 1e-10);
}

}  // namespace

TEST_CASE("layer_norm<hidden>: row by row and over a split hidden, against plain loops") {
  const int n = world().size();
  for (const auto& shape : std::vector<std::array<int, 2>>{meshpp_test::grid2(n), {1, n}, {n, 1}}) {
    check(rows_mesh(shape));
    check(split_mesh(shape));
  }
}

TEST_CASE(
    "layer_norm<hidden> forward: one row-by-row step, or two allreduces over a split hidden") {
  const int n = world().size();
  const auto forward = [](const auto& m) {
    using M = std::remove_cvref_t<decltype(m)>;
    m.counters().by_operation(true);
    const auto x = mp::random_normal<float, batch, seq, hidden>(m, sizes, 1);
    const auto gamma = mp::ones<mp::tensor_of<float, mp::shape<hidden>, M>>(m, sizes);
    const auto beta = mp::zeros<mp::tensor_of<float, mp::shape<hidden>, M>>(m, sizes);
    const auto before = m.counters().total(mp::collective::allreduce).calls;
    (void)mp::layer_norm<hidden>(mp::trace(x), gamma, beta);
    std::size_t row_steps = 0;
    for (const auto& o : m.counters().operations())
      row_steps += o.name.starts_with("layer_norm over hidden of ") ? o.runs : 0;
    return std::pair(row_steps, m.counters().total(mp::collective::allreduce).calls - before);
  };
  const auto [rows_steps, rows_allreduces] = forward(rows_mesh(std::array<int, 2>{n, 1}));
  CHECK_ALL_RANKS(rows_steps == 1);
  CHECK_ALL_RANKS(rows_allreduces == 0);
  const auto [split_steps, split_allreduces] = forward(split_mesh(std::array<int, 2>{1, n}));
  CHECK_ALL_RANKS(split_steps == 0);
  CHECK_ALL_RANKS(split_allreduces == (n > 1 ? 2 : 0));  // a group of one rank counts nothing
}

TEST_CASE("layer_norm<hidden>: gamma or beta of another size than x's hidden throws") {
  const int n = world().size();
  const auto bad = [](const auto& m, std::size_t gamma_size, std::size_t beta_size) {
    const auto x = mp::random_normal<double, batch, seq, hidden>(m, sizes, 1);
    const auto gamma = mp::ones<double, hidden>(m, mp::extents{hidden{} = gamma_size});
    const auto beta = mp::zeros<double, hidden>(m, mp::extents{hidden{} = beta_size});
    bool threw = false;
    try {
      (void)mp::layer_norm<hidden>(mp::trace(x), gamma, beta);
    } catch (const mp::error&) {
      threw = true;
    }
    return threw;
  };
  for (const auto& shape : std::vector<std::array<int, 2>>{{n, 1}, {1, n}}) {
    CHECK_ALL_RANKS(bad(rows_mesh(shape), nh - 1, nh));
    CHECK_ALL_RANKS(bad(rows_mesh(shape), nh, nh + 1));
    CHECK_ALL_RANKS(!bad(rows_mesh(shape), nh, nh));
    CHECK_ALL_RANKS(bad(split_mesh(shape), nh - 1, nh));
  }
}
