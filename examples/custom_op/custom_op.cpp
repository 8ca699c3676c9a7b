// custom_op: meshpp extended from outside, through its public names (docs/extending.md, "Extending
// meshpp"): a differentiable operation and an optimizer of one's own.
//   mpiexec -n 2 build/examples/custom_op
//
// 1. l2_normalize<Dim>(x) = x / sqrt(sum_Dim x^2 + epsilon), recorded with mp::record: its
//    forward is named operations, its backward step the vector-Jacobian product
//      dx = (g - y sum_Dim(g y)) / sqrt(sum_Dim x^2 + epsilon)
//    Checked against central differences (double) with feature split over the mesh, where
//    each sum over feature is an allreduce, in the forward and the backward alike.
// 2. signum: sign descent with momentum (Bernstein et al. 2018), m = beta m + (1 - beta) g,
//    p -= lr sign(m), as an mp::optimizer_slot and an mp::basic_optimizer. It fits a small
//    least-squares problem; the loss must fall.
// Exits non-zero if either check fails, on every rank alike (both decide on values that are the
// same on every rank).
#include <meshpp/meshpp.hpp>

#include <boost/mpi/communicator.hpp>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <iostream>
#include <memory>
#include <optional>
#include <type_traits>
#include <utility>

#include "cli.hpp"

namespace mp = meshpp;

MESHPP_DIM(batch);
MESHPP_DIM(feature);
MESHPP_DIM(out);
MESHPP_DIM(ranks);

// feature split over every rank: l2_normalize<feature>'s sums communicate
using mesh_t = mp::mesh<mp::axes<ranks>, mp::layout<mp::split<feature, ranks>>>;

// ---- 1. a differentiable operation --------------------------------------------------------

// l2_normalize<Dim>(x, epsilon): x divided by its Euclidean norm over Dim; x traced (the result
// records its gradient) or plain
template <class Dim, class X>
auto l2_normalize(const X& x, double epsilon = 1e-12) {
  return mp::record(
      [epsilon](const auto& v) {  // v: x's value, a tensor
        using T = typename std::remove_cvref_t<decltype(v)>::value_type;
        return v * mp::rsqrt(mp::reduce_sum<Dim>(v * v) + static_cast<T>(epsilon));
      },
      [epsilon](const auto& y, const auto& g, const auto& in) {  // y, g = dL/dy, x's input
        if (!in.wants_grad()) return;
        const auto& v = in.value();
        using T = typename std::remove_cvref_t<decltype(v)>::value_type;
        const auto inverse_norm =
            mp::eval(mp::rsqrt(mp::reduce_sum<Dim>(v * v) + static_cast<T>(epsilon)));
        in.add_grad((g - y * mp::reduce_sum<Dim>(g * y)) * inverse_norm);
      },
      x);
}

// gradient_check(mesh): the largest relative difference between the recorded gradient of
// L(x) = sum(w * l2_normalize<feature>(x)) and central differences, over every element of x
double gradient_check(const mesh_t& mesh) {
  const auto sizes = mp::extents{batch{} = 3, feature{} = 4};
  const auto x0 = mp::random_normal<double, batch, feature>(mesh, sizes, 1);
  const auto w = mp::random_normal<double, batch, feature>(mesh, sizes, 2);
  const auto loss = [&](const auto& x) { return mp::reduce_sum(l2_normalize<feature>(x) * w); };

  const auto x = mp::trace(x0);
  const auto [dx] = mp::gradients(loss(x), x);
  const auto recorded = mp::gather(dx);  // the whole gradient, on every rank

  // x0 + delta at the global element i (row-major), generated from the global index
  const auto base = mp::gather(x0);
  const auto shifted = [&](std::size_t i, double delta) {
    return mp::generate<std::remove_cvref_t<decltype(x0)>>(mesh, sizes, [&](const auto& index) {
      const std::size_t flat = index[0] * base.shape()[1] + index[1];
      return base.data()[flat] + (flat == i ? delta : 0.0);
    });
  };
  const double h = 1e-6;
  double worst = 0;
  for (std::size_t i = 0; i < base.size(); ++i) {
    const double fd = (loss(shifted(i, h)).item() - loss(shifted(i, -h)).item()) / (2 * h);
    const double error = std::abs(fd - recorded.data()[i]) / std::max(1.0, std::abs(fd));
    if (!(error <= worst)) worst = error;  // a NaN is the worst
  }
  return worst;
}

// ---- 2. an optimizer ------------------------------------------------------------------------

struct signum_options {
  double learning_rate = 0.01;
  double beta = 0.9;
};

// signum_slot<Tensor, Options>: a variable and its momentum, laid out as the variable
template <class Tensor, class Options>
class signum_slot : public mp::optimizer_slot<Tensor> {
 public:
  signum_slot(mp::variable<Tensor> v, std::shared_ptr<const Options> o)
      : mp::optimizer_slot<Tensor>(std::move(v)), options_(std::move(o)) {}

  // one pass over this rank's slices of p, g and m: no communication
  void update() override {
    using T = typename Tensor::value_type;
    if (!momentum_) momentum_.emplace(this->zeros_like_parameter());
    const T lr = static_cast<T>(options_->learning_rate);
    const T beta = static_cast<T>(options_->beta);
    T* p = this->parameter().local().data();
    const T* g = this->gradient().local().data();
    T* m = momentum_->local().data();
    for (std::size_t i = 0; i < momentum_->local().size(); ++i) {
      m[i] = beta * m[i] + (1 - beta) * g[i];
      p[i] -= lr * static_cast<T>((m[i] > 0) - (m[i] < 0));
    }
  }

 private:
  std::shared_ptr<const Options> options_;
  std::optional<Tensor> momentum_;  // created at the first update
};

class signum : public mp::basic_optimizer<signum_options, signum_slot> {
 public:
  template <class... Vs>
  explicit signum(signum_options o, const Vs&... vs) : basic_optimizer(o) {
    add(vs...);
  }
  double learning_rate() const override { return options().learning_rate; }
  void set_learning_rate(double rate) override { mutable_options().learning_rate = rate; }
};

// train(mesh): the least-squares loss mean((x w - t)^2) before and after 100 signum steps,
// t = x w_true
std::pair<double, double> train(const mesh_t& mesh) {
  const auto sizes = mp::extents{batch{} = 16, feature{} = 4, out{} = 2};
  const auto x = mp::random_normal<double, batch, feature>(mesh, sizes, 3);
  const auto w_true = mp::random_normal<double, feature, out>(mesh, sizes, 4);
  const auto t = mp::eval(mp::einsum<mp::shape<batch, out>>(x, w_true));
  mp::variable w(mp::zeros<double, feature, out>(mesh, sizes), "w");
  signum opt({.learning_rate = 0.02, .beta = 0.9}, w);

  const auto loss = [&] {
    const auto r = mp::einsum<mp::shape<batch, out>>(x, w) - t;  // allreduce over ranks
    return mp::reduce_mean(r * r);
  };
  const double first = loss().item();
  for (int step = 0; step < 100; ++step) {
    mp::backward(loss());
    opt.step();
  }
  return {first, loss().item()};
}

int main(int argc, char** argv) {
  mp::environment env(argc, argv);
  examples::cli("custom_op",
                "a differentiable operation and an optimizer defined outside meshpp, checked")
      .parse(argc, argv);
  const boost::mpi::communicator world;
  const mesh_t mesh({world.size()});  // every rank along one mesh dim
  const bool root = world.rank() == 0;

  const double error = gradient_check(mesh);
  const bool gradient_ok = error < 1e-7;
  const auto [first, last] = train(mesh);
  const bool training_ok = last < 0.1 * first;
  if (root) {
    std::cout << "l2_normalize: recorded gradient vs central differences: largest error " << error
              << (gradient_ok ? " (ok)\n" : " (FAILED: above 1e-7)\n");
    std::cout << "signum: least-squares loss " << first << " -> " << last
              << (training_ok ? " (ok)\n" : " (FAILED: not below a tenth)\n");
  }
  return gradient_ok && training_ok ? 0 : 1;
}
