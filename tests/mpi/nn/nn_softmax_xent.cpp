// softmax_cross_entropy: values against a single-rank reference, gradients against central
// differences (double), with the class dim split, the batch dim split, and neither; large
// logits stay finite; bad labels fail on every rank.
#include <meshpp/autodiff/elementwise.hpp>
#include <meshpp/autodiff/gradients.hpp>
#include <meshpp/autodiff/reduce.hpp>
#include <meshpp/core/create.hpp>
#include <meshpp/nn/softmax_cross_entropy.hpp>
#include <meshpp/ops/scatter_gather.hpp>

#include <cmath>
#include <cstdint>
#include <vector>

#include "gradcheck.hpp"
#include "testing.hpp"

namespace mp = meshpp;
using meshpp_test::gradient_error;
using meshpp_test::world;

MESHPP_DIM(batch);
MESHPP_DIM(classes);
MESHPP_DIM(rows);
MESHPP_DIM(cols);

namespace {
constexpr std::size_t nb = 4, nc = 8;
const auto sizes = mp::extents{batch{} = nb, classes{} = nc};

// the loss of example n, in double, from whole arrays
double reference_loss(const double* z, std::int32_t label) {
  double m = z[0];
  for (std::size_t c = 1; c < nc; ++c) m = std::max(m, z[c]);
  double s = 0;
  for (std::size_t c = 0; c < nc; ++c) s += std::exp(z[c] - m);
  return std::log(s) + m - z[label];
}

template <class Rules>
void check_layout(double scale) {
  using mesh_t = mp::mesh<mp::axes<rows, cols>, Rules>;
  mesh_t m(meshpp_test::grid2(world().size()));
  auto logits = mp::eval(mp::random_normal<double, batch, classes>(m, sizes, 1) * scale);
  auto labels = mp::generate<std::int32_t, batch>(
      m, sizes, [](const auto& i) { return static_cast<std::int32_t>((i[0] * 3 + 1) % nc); });
  auto loss = mp::softmax_cross_entropy<classes>(mp::trace(logits), labels);
  const auto got = mp::gather(loss.value());
  const auto z = mp::gather(logits);
  const auto l = mp::gather(labels);
  double worst = 0;
  for (std::size_t n = 0; n < nb; ++n) {
    const double want = reference_loss(z.data() + n * nc, l(n));
    worst = std::max(worst, std::abs(got(n) - want) / std::max(1.0, std::abs(want)));
  }
  CHECK(std::isfinite(got(0)));
  CHECK(worst < 1e-12);
  CHECK(gradient_error(logits, [&](const auto& x) {
          return meshpp_test::weighted_sum(mp::softmax_cross_entropy<classes>(x, labels));
        }) < 1e-7 * scale);
}
}  // namespace

TEST_CASE("softmax cross-entropy, classes split") {
  check_layout<mp::layout<mp::split<classes, cols>, mp::split<batch, rows>>>(1);
}
TEST_CASE("softmax cross-entropy, batch split") {
  check_layout<mp::layout<mp::split<batch, cols>>>(1);
}
TEST_CASE("softmax cross-entropy, replicated") { check_layout<mp::layout<>>(1); }
TEST_CASE("softmax cross-entropy, logits near 1000 stay finite") {
  check_layout<mp::layout<mp::split<classes, cols>>>(1000);
}

TEST_CASE("softmax cross-entropy: a label out of range fails on every rank") {
  using mesh_t = mp::mesh<mp::axes<rows, cols>, mp::layout<mp::split<batch, cols>>>;
  mesh_t m(meshpp_test::grid2(world().size()));
  auto logits = mp::trace(mp::random_normal<double, batch, classes>(m, sizes, 1));
  auto labels = mp::generate<std::int32_t, batch>(
      m, sizes, [](const auto& i) { return static_cast<std::int32_t>(i[0] == nb - 1 ? nc : 0); });
  CHECK_THROWS_AS(mp::softmax_cross_entropy<classes>(logits, labels), mp::error);
}
