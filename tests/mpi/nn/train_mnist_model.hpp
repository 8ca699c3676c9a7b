// Shared by train_mnist_model.cpp and train_mnist_model_2d.cpp. The Mesh-TensorFlow README's
// network (relu(einsum(images, w1)) -> einsum(., w2) -> softmax cross-entropy -> mean), trained
// with backward() and SGD for a few steps under its three layouts, against a single-rank reference
// written as plain loops (forward, backward and update by hand, in double, without the mesh):
// losses and final weights agree.
#pragma once

#include <meshpp/meshpp.hpp>

#include <cmath>
#include <cstdint>
#include <vector>

#include "testing.hpp"

namespace mp = meshpp;
using meshpp_test::world;

MESHPP_DIM(batch);
MESHPP_DIM(rows);
MESHPP_DIM(cols);
MESHPP_DIM(hidden);
MESHPP_DIM(classes);
MESHPP_DIM(all);
MESHPP_DIM(processor_rows);
MESHPP_DIM(processor_cols);

namespace {
constexpr std::size_t B = 8, R = 3, C = 4, H = 8, K = 5, steps = 4;
constexpr double lr = 0.5;
const auto sizes = mp::extents{batch{} = B, rows{} = R, cols{} = C, hidden{} = H, classes{} = K};

double image(std::size_t step, std::size_t n, std::size_t r, std::size_t c) {
  return static_cast<double>(mp::uniform_at<float>(100 + step, (n * R + r) * C + c));
}
std::int32_t label(std::size_t step, std::size_t n) {
  return static_cast<std::int32_t>((n * 3 + step) % K);
}

struct reference {
  std::vector<double> w1, w2, losses;
  reference() : w1(R * C * H), w2(H * K) {
    for (std::size_t i = 0; i < w1.size(); ++i)
      w1[i] = static_cast<double>(mp::normal_at<double>(1, i)) * 0.5;
    for (std::size_t i = 0; i < w2.size(); ++i)
      w2[i] = static_cast<double>(mp::normal_at<double>(2, i)) * 0.5;
    for (std::size_t s = 0; s < steps; ++s) step(s);
  }
  void step(std::size_t s) {
    std::vector<double> h(B * H), dz(B * K), dw1(w1.size()), dw2(w2.size());
    double loss = 0;
    for (std::size_t n = 0; n < B; ++n) {
      for (std::size_t k = 0; k < H; ++k) {
        double a = 0;
        for (std::size_t r = 0; r < R; ++r)
          for (std::size_t c = 0; c < C; ++c) a += image(s, n, r, c) * w1[(r * C + c) * H + k];
        h[n * H + k] = std::max(0.0, a);
      }
      std::vector<double> z(K);
      double m = -1e300;
      for (std::size_t j = 0; j < K; ++j) {
        for (std::size_t k = 0; k < H; ++k) z[j] += h[n * H + k] * w2[k * K + j];
        m = std::max(m, z[j]);
      }
      double sum = 0;
      for (double v : z) sum += std::exp(v - m);
      loss += (std::log(sum) + m - z[label(s, n)]) / B;
      for (std::size_t j = 0; j < K; ++j)
        dz[n * K + j] = (std::exp(z[j] - m) / sum - (int(j) == label(s, n) ? 1 : 0)) / B;
    }
    for (std::size_t n = 0; n < B; ++n) {
      for (std::size_t k = 0; k < H; ++k) {
        double dh = 0;
        for (std::size_t j = 0; j < K; ++j) {
          dw2[k * K + j] += h[n * H + k] * dz[n * K + j];
          dh += dz[n * K + j] * w2[k * K + j];
        }
        if (h[n * H + k] <= 0) dh = 0;
        for (std::size_t r = 0; r < R; ++r)
          for (std::size_t c = 0; c < C; ++c) dw1[(r * C + c) * H + k] += image(s, n, r, c) * dh;
      }
    }
    for (std::size_t i = 0; i < w1.size(); ++i) w1[i] -= lr * dw1[i];
    for (std::size_t i = 0; i < w2.size(); ++i) w2[i] -= lr * dw2[i];
    losses.push_back(loss);
  }
};

template <class Mesh>
void train_and_compare(const Mesh& m) {
  static const reference ref;
  mp::variable w1(mp::eval(mp::random_normal<double, rows, cols, hidden>(m, sizes, 1) * 0.5));
  mp::variable w2(mp::eval(mp::random_normal<double, hidden, classes>(m, sizes, 2) * 0.5));
  mp::sgd opt({.learning_rate = lr}, w1, w2);
  double worst = 0;
  for (std::size_t s = 0; s < steps; ++s) {
    const auto x = mp::generate<double, batch, rows, cols>(
        m, sizes, [&](const auto& i) { return image(s, i[0], i[1], i[2]); });
    const auto y =
        mp::generate<std::int32_t, batch>(m, sizes, [&](const auto& i) { return label(s, i[0]); });
    auto h = mp::relu(mp::einsum<mp::shape<batch, hidden>>(x, w1));
    auto logits = mp::einsum<mp::shape<batch, classes>>(h, w2);
    auto loss = mp::reduce_mean(mp::softmax_cross_entropy<classes>(logits, y));
    m.counters().reset();
    mp::backward(loss);
    opt.step();
    // Both weight gradients contract batch: where batch is split they are partial sums, summed
    // in one bucket by one allreduce (not one per weight); elsewhere backward sums nothing.
    // (a batch split over a mesh dim of one rank counts nothing: a group of one rank)
    using x_layout = typename decltype(x)::layout_type;
    const bool batch_split = [&] {
      if constexpr (mp::is_split_in_v<x_layout, batch>)
        return m.template size<mp::mesh_dim_of_t<x_layout, batch>>() > 1;
      else
        return false;
    }();
    CHECK_ALL_RANKS(m.counters().total(mp::collective::allreduce).calls == (batch_split ? 1 : 0));
    CHECK_ALL_RANKS(m.counters().values(mp::collective::allreduce) ==
                    (batch_split ? w1.value().local().size() + w2.value().local().size() : 0));
    worst = std::max(worst, std::abs(*loss.value().local().data() - ref.losses[s]));
  }
  CHECK(worst < 1e-12);
  const auto g1 = mp::gather(w1.value());
  const auto g2 = mp::gather(w2.value());
  double wd = 0;
  for (std::size_t i = 0; i < ref.w1.size(); ++i)
    wd = std::max(wd, std::abs(g1.data()[i] - ref.w1[i]));
  for (std::size_t i = 0; i < ref.w2.size(); ++i)
    wd = std::max(wd, std::abs(g2.data()[i] - ref.w2[i]));
  CHECK(wd < 1e-12);
}
}  // namespace
