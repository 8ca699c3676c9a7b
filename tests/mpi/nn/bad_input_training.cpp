// Bad input, tried systematically (part 2: NaN and Inf in inputs and gradients,
// hyperparameters out of range, layers). Each case gets either a meshpp::error naming the
// problem on EVERY rank, thrown before any communication, with the ranks still in step
// afterwards, or the documented result, checked here against a reference computed in the test.
// Part 1 (sizes, meshes, data movement, files, ranks that disagree): bad_input.cpp.
#include <meshpp/autodiff/gradients.hpp>
#include <meshpp/core/create.hpp>
#include <meshpp/nn/dropout.hpp>
#include <meshpp/nn/layer_norm.hpp>
#include <meshpp/nn/softmax_cross_entropy.hpp>
#include <meshpp/ops/scatter_gather.hpp>
#include <meshpp/ops/softmax.hpp>
#include <meshpp/optim/adafactor.hpp>
#include <meshpp/optim/adam.hpp>
#include <meshpp/optim/sgd.hpp>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <string>

#include <boost/mpi/collectives/all_reduce.hpp>

#include "testing.hpp"

namespace mp = meshpp;
using meshpp_test::ranks_in_step;
using meshpp_test::throws_with;
using meshpp_test::world;

MESHPP_DIM(batch);
MESHPP_DIM(classes);
MESHPP_DIM(all);

namespace {

constexpr double not_a_number = std::numeric_limits<double>::quiet_NaN();
constexpr double infinity = std::numeric_limits<double>::infinity();

std::size_t nz() { return static_cast<std::size_t>(world().size()); }

// The class dim split over every rank (the collective path), or whole (the row-wise path).
using split_mesh = mp::mesh<mp::axes<all>, mp::layout<mp::split<classes, all>>>;
using whole_mesh = mp::mesh<mp::axes<all>, mp::layout<mp::split<batch, all>>>;

constexpr std::size_t nb = 4;  // examples; example 1 holds the bad value
std::size_t nc() { return 2 * nz(); }

// logit(b, c): a finite logit
double logit(std::size_t b, std::size_t c) { return std::sin(1.3 * b + 0.7 * c) * 2; }

template <class Mesh>
auto logits_with(const Mesh& m, double bad, std::size_t bad_class = 1) {
  return mp::generate<double, batch, classes>(
      m, mp::extents{batch{} = nb, classes{} = nc()},
      [=](const auto& i) { return i[0] == 1 && i[1] == bad_class ? bad : logit(i[0], i[1]); });
}

// softmax of a finite row, computed here
double softmax_ref(std::size_t b, std::size_t c) {
  double sum = 0;
  for (std::size_t k = 0; k < nc(); ++k) sum += std::exp(logit(b, k));
  return std::exp(logit(b, c)) / sum;
}

// every element of row 1 is NaN; the others match the reference
template <class A>
bool row_one_nan_others_right(const A& p, double tol) {
  bool ok = true;
  for (std::size_t b = 0; b < p.shape()[0]; ++b) {
    for (std::size_t c = 0; c < p.shape()[1]; ++c) {
      ok = ok && (b == 1 ? std::isnan(p(b, c)) : std::abs(p(b, c) - softmax_ref(b, c)) < tol);
    }
  }
  return ok;
}

}  // namespace

// --- NaN and Inf in inputs ---------------------------------------------------------------------

TEST_CASE("30. softmax: NaN or +Inf in a row makes that row NaN, other rows exact") {
  split_mesh s({static_cast<int>(nz())});
  whole_mesh w({static_cast<int>(nz())});
  for (double bad : {not_a_number, infinity}) {
    INFO("bad value " << bad);
    CHECK_ALL_RANKS(
        row_one_nan_others_right(mp::gather(mp::softmax<classes>(logits_with(s, bad))), 1e-12));
    CHECK_ALL_RANKS(
        row_one_nan_others_right(mp::gather(mp::softmax<classes>(logits_with(w, bad))), 1e-12));
  }
  // -Inf is a masked entry: probability 0, the rest renormalised
  const auto p = mp::gather(mp::softmax<classes>(logits_with(s, -infinity)));
  double sum = 0;
  for (std::size_t c = 0; c < nc(); ++c) sum += p(1, c);
  CHECK_ALL_RANKS(p(1, 1) == 0 && std::abs(sum - 1) < 1e-12);
  CHECK(ranks_in_step());
}

TEST_CASE("31. layer_norm: NaN or Inf in a row makes that row NaN, other rows unaffected") {
  split_mesh s({static_cast<int>(nz())});
  const auto sizes = mp::extents{classes{} = nc()};
  const auto gamma = mp::ones<double, classes>(s, sizes);
  const auto beta = mp::zeros<double, classes>(s, sizes);
  for (double bad : {not_a_number, infinity, -infinity}) {
    INFO("bad value " << bad);
    const auto y = mp::gather(mp::layer_norm<classes>(logits_with(s, bad), gamma, beta).value());
    const auto good =
        mp::gather(mp::layer_norm<classes>(logits_with(s, 0.25), gamma, beta).value());
    bool ok = true;
    for (std::size_t b = 0; b < y.shape()[0]; ++b) {
      for (std::size_t c = 0; c < y.shape()[1]; ++c) {
        ok = ok && (b == 1 ? std::isnan(y(b, c)) : y(b, c) == good(b, c));
      }
    }
    CHECK_ALL_RANKS(ok);
  }
}

TEST_CASE("32. softmax_cross_entropy: a NaN logit gives that example NaN, +Inf elsewhere +Inf") {
  split_mesh s({static_cast<int>(nz())});
  const auto labels = mp::generate<std::int32_t, batch>(
      s, mp::extents{batch{} = nb}, [](const auto& i) { return std::int32_t(i[0] % 2); });
  auto check = [&](double bad, std::size_t bad_class, auto is_bad) {
    const auto l =
        mp::gather(mp::softmax_cross_entropy<classes>(logits_with(s, bad, bad_class), labels));
    bool ok = true;
    for (std::size_t b = 0; b < nb; ++b) {
      double lse = 0;
      for (std::size_t c = 0; c < nc(); ++c) lse += std::exp(logit(b, c));
      const double want = std::log(lse) - logit(b, b % 2);
      ok = ok && (b == 1 ? is_bad(l(b)) : std::abs(l(b) - want) < 1e-12);
    }
    return ok;
  };
  // example 1's label is class 1
  CHECK_ALL_RANKS(check(not_a_number, 0, [](double v) { return std::isnan(v); }));
  CHECK_ALL_RANKS(check(infinity, 0, [](double v) { return v == infinity; }));      // p(label) = 0
  CHECK_ALL_RANKS(check(-infinity, 0, [](double v) { return std::isfinite(v); }));  // masked class
  CHECK_ALL_RANKS(
      check(infinity, 1, [](double v) { return std::isnan(v); }));  // infinity - infinity
}

TEST_CASE("33. softmax_cross_entropy: labels out of range, on one rank only, throw on every rank") {
  split_mesh s({static_cast<int>(nz())});
  const auto z = logits_with(s, 0.5);
  // replicated labels: the last rank alone holds a bad one (replicas that should agree do not)
  const std::int32_t bad = world().rank() + 1 == static_cast<int>(nz()) ? std::int32_t(nc()) : 0;
  // made by a maker, the difference is caught there
  if (nz() >= 2) {
    CHECK_ALL_RANKS(throws_with<mp::error>(
        [&] { (void)mp::full<std::int32_t, batch>(s, mp::extents{batch{} = nb}, bad); },
        {"meshpp::full: the ranks disagree on the value (from 0 to " + std::to_string(nc())}));
  }
  // filled in per rank (read from a per-node file, say), it is caught by the lookup
  using labels_t = mp::tensor_of<std::int32_t, mp::shape<batch>, split_mesh>;
  labels_t labels(s, mp::extents{batch{} = nb});
  labels.local().fill(bad);
  auto run = [&] { (void)mp::softmax_cross_entropy<classes>(z, labels); };
  const std::string last = std::to_string(nz() - 1);
  const bool finder = world().rank() + 1 == static_cast<int>(nz());
  CHECK_ALL_RANKS(
      throws_with<mp::error>(run, {(finder ? "" : "meshpp: rank " + last + " found bad input: ") +
                                   "meshpp::take<classes>(table, ids): id " + std::to_string(nc()) +
                                   " at ids[batch:0] is outside [0, " + std::to_string(nc()) +
                                   "), the range of dim 'classes'"}));
  const auto negative = mp::full<std::int32_t, batch>(s, mp::extents{batch{} = nb}, -1);
  auto traced = mp::trace(z);
  CHECK_ALL_RANKS(throws_with<mp::error>(
      [&] { (void)mp::softmax_cross_entropy<classes>(traced, negative); },
      {"id -1", "outside [0, " + std::to_string(nc()) + ")", "dim 'classes'"}));
  CHECK(ranks_in_step());
}

// --- layers' hyperparameters -----------------------------------------------------------------

TEST_CASE("34. layer_norm: epsilon <= 0 or NaN throws, naming the value") {
  split_mesh s({static_cast<int>(nz())});
  const auto sizes = mp::extents{classes{} = nc()};
  const auto gamma = mp::ones<double, classes>(s, sizes);
  const auto beta = mp::zeros<double, classes>(s, sizes);
  const auto x = logits_with(s, 0.5);
  for (double eps : {0.0, -1e-5, not_a_number, infinity}) {
    INFO("epsilon " << eps);
    CHECK_ALL_RANKS(
        throws_with<mp::error>([&] { (void)mp::layer_norm<classes>(x, gamma, beta, eps); },
                               {"meshpp::layer_norm<classes>", "epsilon must be finite and > 0"}));
    CHECK_ALL_RANKS(throws_with<mp::error>(
        [&] { mp::layer_norm_layer<double, classes, split_mesh> layer(s, sizes, eps); },
        {"meshpp::layer_norm", "epsilon must be finite and > 0"}));
  }
  CHECK_NOTHROW((void)mp::layer_norm<classes>(x, gamma, beta, 1e-12));
  CHECK(ranks_in_step());
}

TEST_CASE("35. dropout: a rate outside [0, 1) or NaN throws, naming it") {
  split_mesh s({static_cast<int>(nz())});
  const auto x = logits_with(s, 0.5);
  for (double rate : {-0.1, 1.0, 1.5, not_a_number}) {
    INFO("rate " << rate);
    CHECK_ALL_RANKS(throws_with<mp::error>([&] { (void)mp::dropout(x, rate, 1); },
                                           {"meshpp::dropout", "rate must be in [0, 1)"}));
    auto t = mp::trace(x);
    CHECK_ALL_RANKS(
        throws_with<mp::error>([&] { (void)mp::dropout(t, rate, 1); }, {"rate must be in [0, 1)"}));
  }
  // rate 0 is the identity
  CHECK_ALL_RANKS(meshpp_test::bit_equal(mp::gather(mp::dropout(x, 0.0, 1)), mp::gather(x)));
  CHECK(ranks_in_step());
}

// --- optimizers' hyperparameters --------------------------------------------------------------

TEST_CASE("36. sgd: learning rate, momentum, weight decay out of range throw, naming them") {
  using o = mp::sgd_options;
  auto bad = [](o opt, const char* what) {
    INFO(what);
    CHECK_ALL_RANKS(throws_with<mp::error>([&] { mp::sgd s(opt); }, {"meshpp::sgd", what}));
  };
  bad({.learning_rate = -0.1}, "learning_rate must be finite and >= 0, got -0.1");
  bad({.learning_rate = not_a_number}, "learning_rate must be finite and >= 0, got nan");
  bad({.learning_rate = infinity}, "learning_rate");
  bad({.momentum = -0.5}, "momentum must be in [0, 1), got -0.5");
  bad({.momentum = 1.0}, "momentum must be in [0, 1), got 1");
  bad({.momentum = not_a_number}, "momentum");
  bad({.nesterov = true}, "nesterov needs a momentum > 0");
  bad({.weight_decay = -1}, "weight_decay must be finite and >= 0, got -1");
  mp::sgd fine({.learning_rate = 0.0, .momentum = 0.0});  // 0 is allowed: no update
  CHECK_ALL_RANKS(throws_with<mp::error>([&] { fine.set_learning_rate(-1e-3); },
                                         {"meshpp::sgd", "learning_rate", "-0.001"}));
  CHECK(fine.learning_rate() == 0.0);  // unchanged by the failed call
}

TEST_CASE("37. adam and adamw: betas outside [0, 1), epsilon <= 0 and bad rates throw") {
  auto bad_adam = [](mp::adam_options opt, const char* what) {
    INFO(what);
    CHECK_ALL_RANKS(throws_with<mp::error>([&] { mp::adam a(opt); }, {"meshpp::adam", what}));
  };
  bad_adam({.learning_rate = -1}, "learning_rate must be finite and >= 0, got -1");
  bad_adam({.beta1 = 1.0}, "beta1 must be in [0, 1), got 1");
  bad_adam({.beta1 = -0.1}, "beta1 must be in [0, 1), got -0.1");
  bad_adam({.beta2 = 1.5}, "beta2 must be in [0, 1), got 1.5");
  bad_adam({.beta2 = not_a_number}, "beta2");
  bad_adam({.epsilon = 0}, "epsilon must be finite and > 0, got 0");
  bad_adam({.epsilon = -1e-8}, "epsilon must be finite and > 0, got -1e-08");
  CHECK_ALL_RANKS(
      throws_with<mp::error>([] { mp::adamw a({.weight_decay = -0.01}); },
                             {"meshpp::adamw", "weight_decay must be finite and >= 0"}));
  CHECK_ALL_RANKS(throws_with<mp::error>([] { mp::adamw a({.beta2 = 1}); },
                                         {"meshpp::adamw", "beta2 must be in [0, 1)"}));
  mp::adam fine({.beta1 = 0, .beta2 = 0});  // no memory: allowed
  CHECK_ALL_RANKS(throws_with<mp::error>([&] { fine.set_learning_rate(not_a_number); },
                                         {"meshpp::adam", "learning_rate"}));
}

TEST_CASE("38. adafactor: every hyperparameter out of range throws, naming it") {
  auto bad = [](mp::adafactor_options opt, const char* what) {
    INFO(what);
    CHECK_ALL_RANKS(
        throws_with<mp::error>([&] { mp::adafactor a(opt); }, {"meshpp::adafactor", what}));
  };
  bad({.learning_rate = -1e-2}, "learning_rate must be finite and >= 0, got -0.01");
  bad({.beta1 = 1}, "beta1 must be in [0, 1), got 1");
  bad({.decay_rate = 1.0}, "decay_rate must be in [0, 1), got 1");
  bad({.decay_rate = -0.2}, "decay_rate must be in [0, 1)");
  bad({.decay_exponent = -0.8}, "decay_exponent must be finite and >= 0, got -0.8");
  bad({.clipping_threshold = 0.0}, "clipping_threshold must be finite and > 0, got 0");
  bad({.epsilon1 = 0}, "epsilon1 must be finite and > 0, got 0");
  bad({.epsilon2 = -1e-3}, "epsilon2 must be finite and >= 0, got -0.001");
  // the defaults and Mesh-TensorFlow's usual settings are fine
  CHECK_NOTHROW(mp::adafactor(mp::adafactor_options{}));
  CHECK_NOTHROW(mp::adafactor(mp::adafactor_options{
      .learning_rate = 1e-2, .beta1 = 0.9, .clipping_threshold = std::nullopt}));
  mp::adafactor fine(mp::adafactor_options{});
  CHECK_ALL_RANKS(throws_with<mp::error>([&] { fine.set_learning_rate(-3); },
                                         {"meshpp::adafactor", "learning_rate", "-3"}));
}

// --- NaN in gradients ---------------------------------------------------------------------------

namespace {
// A variable [batch, classes] (classes split) with gradient 0.5 everywhere but NaN at [1, 1];
// after one step of `opt`, the elements that are NaN and those that are not, against
// `updated(p, g)` for the finite ones
template <class Opt, class Updated>
bool nan_gradient_step(Opt&& opt, Updated updated, bool everything_nan) {
  split_mesh s({static_cast<int>(nz())});
  const auto p0 = logits_with(s, 0.75);
  mp::variable w(p0, "w");
  opt.add(w);
  w.grad() = mp::generate<double, batch, classes>(
      s, p0.sizes(), [](const auto& i) { return i[0] == 1 && i[1] == 1 ? not_a_number : 0.5; });
  opt.step();
  const auto P0 = mp::gather(p0);
  const auto P = mp::gather(w.value());
  bool ok = !w.grad().has_value();
  for (std::size_t b = 0; b < P.shape()[0]; ++b) {
    for (std::size_t c = 0; c < P.shape()[1]; ++c) {
      const bool bad = everything_nan || (b == 1 && c == 1);
      ok = ok && (bad ? std::isnan(P(b, c)) : std::abs(P(b, c) - updated(P0(b, c), 0.5)) < 1e-12);
    }
  }
  return ok;
}
}  // namespace

TEST_CASE("39. a NaN gradient propagates into its element (sgd, adam) as documented") {
  CHECK_ALL_RANKS(nan_gradient_step(
      mp::sgd({.learning_rate = 0.1}), [](double p, double g) { return p - 0.1 * g; }, false));
  CHECK_ALL_RANKS(nan_gradient_step(
      mp::sgd({.learning_rate = 0.1, .momentum = 0.9}),
      [](double p, double g) { return p - 0.1 * g; }, false));
  // adam's first step: m^ = g, v^ = g^2, so p -= lr g / (|g| + eps)
  CHECK_ALL_RANKS(nan_gradient_step(
      mp::adam({.learning_rate = 0.01}),
      [](double p, double g) { return p - 0.01 * g / (g + 1e-8); }, false));
  CHECK(ranks_in_step());
}

TEST_CASE(
    "40. a NaN gradient makes the whole variable NaN under factored adafactor, as documented") {
  // factored (min_dim_size_to_factor 1): the NaN enters its row's and column's statistics,
  // then every row's through mean_R(v_r)
  CHECK_ALL_RANKS(nan_gradient_step(
      mp::adafactor({.min_dim_size_to_factor = 1}), [](double p, double) { return p; }, true));
  CHECK(ranks_in_step());
}
