// The embedding layer (nn/embedding.hpp): its table initialised identically under every layout,
// the lookup against plain loops, and the table's gradient against central differences, under
// layouts splitting vocab, d_model, or nothing (ids with repeats, so rows gather several rows of
// the output's gradient).
#include <meshpp/autodiff/elementwise.hpp>
#include <meshpp/autodiff/gradients.hpp>
#include <meshpp/autodiff/parameters.hpp>
#include <meshpp/autodiff/reduce.hpp>
#include <meshpp/core/create.hpp>
#include <meshpp/nn/embedding.hpp>
#include <meshpp/ops/scatter_gather.hpp>

#include <cmath>
#include <cstddef>

#include "gradcheck.hpp"
#include "nn_variable_gradcheck.hpp"
#include "reference.hpp"
#include "testing.hpp"

namespace mp = meshpp;
using meshpp_test::world;

MESHPP_DIM(batch);
MESHPP_DIM(seq);
MESHPP_DIM(vocab);
MESHPP_DIM(d_model);
MESHPP_DIM(rows);
MESHPP_DIM(cols);

namespace {
const auto sizes = mp::extents{batch{} = 4, seq{} = 3, vocab{} = 8, d_model{} = 4};
// data parallel on batch, the vocabulary split (the lookup allreduces over cols)
using vocab_mesh =
    mp::mesh<mp::axes<rows, cols>, mp::layout<mp::split<batch, rows>, mp::split<vocab, cols>>>;
// the model dim split (the lookup is local; the table's gradient allreduces over rows)
using model_mesh =
    mp::mesh<mp::axes<rows, cols>, mp::layout<mp::split<batch, rows>, mp::split<d_model, cols>>>;
using replicated_mesh = mp::mesh<mp::axes<rows, cols>, mp::layout<>>;

template <class Mesh>
using layer_t = mp::embedding<double, vocab, mp::shape<d_model>, Mesh>;

// ids k^2 mod 8 (k = 0..11): 0, 1 and 4 only, each several times; the other rows unused
template <class Mesh>
auto make_ids(const Mesh& m) {
  return mp::generate<int, batch, seq>(m, sizes, [](const auto& i) {
    const auto k = i[0] * 3 + i[1];
    return static_cast<int>(k * k % 8);
  });
}

struct collector {
  std::size_t count = 0;
  template <class V>
  void add(V&) {
    ++count;
  }
};

template <class Mesh>
void check_layer(const Mesh& m) {
  layer_t<Mesh> embed(m, sizes, 3, "embed");
  const auto ids = make_ids(m);
  const auto y = embed(ids);

  const auto table = mp::gather(embed.table().value());
  const auto id = mp::gather(ids);
  xt::xtensor<double, 3> want({4, 3, 4});
  for (std::size_t b = 0; b < 4; ++b)
    for (std::size_t s = 0; s < 3; ++s)
      for (std::size_t d = 0; d < 4; ++d)
        want(b, s, d) = table(static_cast<std::size_t>(id(b, s)), d);
  CHECK_ALL_RANKS(meshpp_test::matches(mp::gather(y.value()), want, 0));

  auto loss = [&] { return meshpp_test::weighted_sum(embed(ids)); };
  CHECK(meshpp_test::variable_gradient_error(embed.table(), loss) < 1e-7);
  // rows that no id names get no gradient
  mp::backward(loss());
  const auto grad = mp::gather(*embed.table().grad());
  bool unused_rows_zero = true;
  for (std::size_t v = 0; v < 8; ++v) {
    bool used = false;
    for (int i : id) used = used || static_cast<std::size_t>(i) == v;
    for (std::size_t d = 0; d < 4; ++d)
      unused_rows_zero = unused_rows_zero && (used || grad(v, d) == 0);
  }
  CHECK_ALL_RANKS(unused_rows_zero);

  collector c;
  mp::add_variables(c, embed);
  CHECK(c.count == 1);
  CHECK(embed.table().name() == "embed/table");
}
}  // namespace

TEST_CASE("embedding: the table is the same bits under every layout, normal(0, 1/sqrt(d))") {
  const auto grid = meshpp_test::grid2(world().size());
  mp::embedding<float, vocab, mp::shape<d_model>, vocab_mesh> a(vocab_mesh(grid), sizes, 9);
  mp::embedding<float, vocab, mp::shape<d_model>, model_mesh> b(model_mesh(grid), sizes, 9);
  mp::embedding<float, vocab, mp::shape<d_model>, replicated_mesh> c(replicated_mesh(grid), sizes,
                                                                     9);
  const auto ta = mp::gather(a.table().value());
  CHECK_ALL_RANKS(meshpp_test::bit_equal(ta, mp::gather(b.table().value())));
  CHECK_ALL_RANKS(meshpp_test::bit_equal(ta, mp::gather(c.table().value())));
  const auto want = meshpp_test::filled<float, 2>({8, 4}, [](std::uint64_t i) {
    return 0.0f + 0.5f * mp::normal_at<float>(9, i);  // 1 / sqrt(4)
  });
  CHECK_ALL_RANKS(meshpp_test::bit_equal(ta, want));
}

TEST_CASE("embedding: lookup and table gradient, vocab split") {
  check_layer(vocab_mesh(meshpp_test::grid2(world().size())));
}
TEST_CASE("embedding: lookup and table gradient, d_model split") {
  check_layer(model_mesh(meshpp_test::grid2(world().size())));
}
TEST_CASE("embedding: lookup and table gradient, replicated") {
  check_layer(replicated_mesh(meshpp_test::grid2(world().size())));
}
