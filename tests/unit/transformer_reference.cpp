// The single-process Transformer reference (tests/support/transformer_reference.hpp) is what
// the library's model is checked against, so its own hand-written backward pass is checked
// here: gradient(cfg, p, ids, targets) against central differences (double, h = 1e-6) of
// loss(cfg, p, ids, targets), for every element of every parameter array, on a tiny causal
// model of two layers. The sizes differ from each other where the layout could confuse two dims
// (d_k 2, d_v 3, heads 2, d_ff 5, vocab 6 with one id unused), so a transposed index shows.
// Plain loops, no MPI ranks: run once.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "testing.hpp"
#include "transformer_reference.hpp"

namespace rt = meshpp_test::reference_transformer;

namespace {

// parameters of cfg's shapes, every value N(0, 0.5) from one seeded stream (layer-norm scales
// and biases too: far from 1 and 0, where a dropped scale or bias term would not show)
rt::params random_params(const rt::config& cfg, std::uint64_t seed) {
  rt::params p = rt::zeros(cfg);
  std::mt19937_64 engine(seed);
  std::normal_distribution<double> normal(0.0, 0.5);
  rt::for_each_array(p, [&](const std::string&, rt::array& a) {
    for (double& v : a) v = normal(engine);
  });
  return p;
}

// what a central-difference check of one parameter array found
struct array_check {
  double worst_error = 0;  // largest |fd - grad| over the array's elements
  double largest_fd = 0;   // largest |fd|: the loss depends on the array
};

}  // namespace

TEST_CASE("reference Transformer: the hand-written backward pass equals central differences") {
  const rt::config cfg{.batch = 2,
                       .length = 4,
                       .d_model = 4,
                       .heads = 2,
                       .d_k = 2,
                       .d_v = 3,
                       .d_ff = 5,
                       .vocab = 6,
                       .layers = 2,
                       .causal = true};
  // ids and targets over [0, 5): row 5 of the embedding is never looked up (its gradient is 0)
  const rt::tokens ids{0, 3, 1, 4, 2, 2, 4, 0};
  const rt::tokens targets{3, 1, 4, 4, 1, 0, 2, 3};
  rt::params p = random_params(cfg, 7);
  const rt::params grad = rt::gradient(cfg, p, ids, targets);

  constexpr double h = 1e-6;
  // for_each_array visits p and grad in the same order: the k-th array of grad is the
  // gradient of the k-th of p
  std::vector<const rt::array*> grads;
  rt::for_each_array(grad, [&](const std::string&, const rt::array& g) { grads.push_back(&g); });
  std::size_t k = 0;
  rt::for_each_array(p, [&](const std::string& name, rt::array& a) {
    const rt::array& g = *grads[k++];
    REQUIRE(g.size() == a.size());
    array_check found;
    for (std::size_t i = 0; i < a.size(); ++i) {
      const double original = a[i];
      a[i] = original + h;
      const double plus = rt::loss(cfg, p, ids, targets);
      a[i] = original - h;
      const double minus = rt::loss(cfg, p, ids, targets);
      a[i] = original;
      const double fd = (plus - minus) / (2 * h);
      found.worst_error = std::max(found.worst_error, std::abs(fd - g[i]));
      found.largest_fd = std::max(found.largest_fd, std::abs(fd));
    }
    CAPTURE(name);
    // the header's bound, 8e-10, holds here too (4e-10 measured: the difference quotient's
    // rounding); and the loss depends on the array (layer 0's wq and wk least: 4e-4), so the
    // bound is at most 1e-5 of its largest gradient
    CHECK(found.worst_error < 1e-9);
    CHECK(found.largest_fd > 1e-4);
  });
  // the unused embedding row: exactly 0, as the scatter-add leaves it
  const std::size_t unused = 5;
  for (std::size_t d = 0; d < cfg.d_model; ++d)
    CHECK(grad.embedding[unused * cfg.d_model + d] == 0);
}
