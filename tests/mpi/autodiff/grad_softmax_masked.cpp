// Softmax under a causal mask, and stop_gradient: gradients checked by central differences
// (double) at every element, on split_mesh and replicated_mesh of every shape.
//   masked         where(mask, x, -inf) before softmax<hidden>, as attention applies a causal
//                  mask: softmax, log_softmax (the masked entries left out of the loss) and
//                  logsumexp, by the generic path (split_mesh) and row by row (replicated_mesh);
//                  the weights are 0 at the masked entries and the softmax of the visible ones
//                  elsewhere (a plain loop), the gradient is finite, and 0 at the masked entries
//   stop_gradient  f(x, stop_gradient(c(x))) has the gradient of f(x, c) with c held at c(x)
//                  (the central differences are taken with c held), for c = softmax and a
//                  maximum
//   softmax(x, mask) the same with the mask inside softmax (one step): equal to the where form
// (softmax's own gradients: grad_softmax.cpp; where's: grad_softmax_where.cpp.)
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>

#include "grad_softmax_check.hpp"

using namespace grad_softmax;

namespace {

// The causal mask of queries along batch over keys along hidden: key h is seen from query b
// when h <= b + 1, so hidden 6 and 7 are masked in every row (at 4 ranks over cols, a whole
// stripe of -inf)
bool visible(std::size_t b, std::size_t h) { return h <= b + 1; }

template <class Mesh>
void check_masked(const Mesh& m) {
  const auto x = mp::random_normal<double, batch, hidden>(m, sizes, 1);
  const auto mask = mp::eval(mp::iota<hidden>(m, sizes) <= mp::iota<batch>(m, sizes) + 1);
  constexpr double inf = std::numeric_limits<double>::infinity();
  const auto masked = [&](const auto& t) { return mp::where(mask, t, -inf); };
  check("softmax<hidden>, masked", x,
        [&](const auto& t) { return weighted_sum(mp::softmax<hidden>(masked(t))); });
  // log_softmax is -inf at the masked entries: a masked loss leaves them out
  check("log_softmax<hidden>, masked", x, [&](const auto& t) {
    return weighted_sum(mp::where(mask, mp::log_softmax<hidden>(masked(t)), 0.0));
  });
  check("logsumexp<hidden>, masked", x,
        [&](const auto& t) { return weighted_sum(mp::logsumexp<hidden>(masked(t))); });

  // the weights: 0 where masked, elsewhere the softmax of the row's visible entries (a plain
  // loop over x gathered whole); the gradient finite, and 0 where masked
  const auto xt = mp::trace(x);
  const auto p = mp::softmax<hidden>(masked(xt));
  const auto [g] = mp::gradients(weighted_sum(p), xt);
  const auto X = mp::gather(x), P = mp::gather(p.value()), G = mp::gather(g);
  bool weights_match = true, zero_where_masked = true;
  for (std::size_t b = 0; b < nb; ++b) {
    double top = -inf, sum = 0;
    for (std::size_t h = 0; h < nh; ++h) top = visible(b, h) ? std::max(top, X(b, h)) : top;
    for (std::size_t h = 0; h < nh; ++h) sum += visible(b, h) ? std::exp(X(b, h) - top) : 0.0;
    for (std::size_t h = 0; h < nh; ++h) {
      const double want = visible(b, h) ? std::exp(X(b, h) - top) / sum : 0.0;
      weights_match = weights_match && std::abs(P(b, h) - want) <= 1e-14;
      zero_where_masked = zero_where_masked && (visible(b, h) || (P(b, h) == 0 && G(b, h) == 0));
    }
  }
  CHECK_ALL_RANKS(weights_match);
  CHECK_ALL_RANKS(zero_where_masked);
  CHECK_ALL_RANKS(all_finite(G));

  // softmax<hidden>(x, mask), the mask inside softmax as attention applies it: its gradient
  // by central differences, and its value and gradient those of the where form above exactly
  // (the same arithmetic), plain and traced
  check("softmax<hidden>(x, mask)", x,
        [&](const auto& t) { return weighted_sum(mp::softmax<hidden>(t, mask)); });
  const auto fused = mp::softmax<hidden>(xt, mask);
  const auto [fused_g] = mp::gradients(weighted_sum(fused), xt);
  CHECK_ALL_RANKS(meshpp_test::max_abs_difference(fused.value(), p.value()) == 0);
  CHECK_ALL_RANKS(meshpp_test::max_abs_difference(fused_g, g) == 0);
  CHECK_ALL_RANKS(meshpp_test::max_abs_difference(mp::softmax<hidden>(x, mask), p.value()) == 0);
}

template <class Mesh>
void check_stop_gradient(const Mesh& m) {
  const auto x = mp::random_normal<double, batch, hidden>(m, sizes, 1);
  // x times a constant copy of its softmax
  check_held(
      "x * stop_gradient(softmax(x))", x,
      [](const auto& t, const auto& s) { return weighted_sum(t * s); },
      [](const auto& t) { return mp::softmax<hidden>(t); });
  // the shift by a constant maximum (broadcast over hidden), as stable softmaxes subtract it
  check_held(
      "x - stop_gradient(max_hidden x)", x,
      [](const auto& t, const auto& s) { return weighted_sum(t - s); },
      [](const auto& t) { return mp::reduce_max<hidden>(t); });
  // cross-entropy against the constant softmax of x itself (a self-distillation target)
  check_held(
      "log_softmax(x) * stop_gradient(softmax(x))", x,
      [](const auto& t, const auto& s) { return weighted_sum(mp::log_softmax<hidden>(t) * s); },
      [](const auto& t) { return mp::softmax<hidden>(t); });
}
}  // namespace

TEST_CASE("softmax under a causal mask of -inf: weight 0 there, finite gradients") {
  on_every_mesh([](const auto& m) { check_masked(m); });
}
TEST_CASE("stop_gradient: the gradient of the loss with the stopped value held constant") {
  on_every_mesh([](const auto& m) { check_stop_gradient(m); });
}
