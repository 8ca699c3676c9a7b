// Gradients of reshape and rename (autodiff/movement.hpp), checked by central differences
// (double) at every element: on a mesh whose rules split the dims merged and split (meshes
// grid2(n), [1, n] and [n, 1], so each dim is split over 1, 2 and 4 ranks somewhere) and on a
// mesh with no rules (everything replicated); and a variable's accumulated gradient through a
// reshape, compared exactly. Relayout: grad_movement.cpp.
#include <meshpp/autodiff/movement.hpp>
#include <meshpp/ops/scatter_gather.hpp>

#include <xtensor/xtensor.hpp>

#include "grad_fixture.hpp"

MESHPP_DIM(flat);
MESHPP_DIM(head);
MESHPP_DIM(dk);
MESHPP_DIM(hidden2);

namespace {
const auto sizes = mp::extents{batch{} = 4, hidden{} = 8};
// the new dims are split too: [batch/rows, hidden/cols] |-> [flat/rows] keeps the split of
// batch and gathers hidden; |-> [batch/rows, head/cols, dk] is local; hidden2 is whole
using reshape_mesh = split_mesh_with<mp::split<flat, rows>, mp::split<head, cols>>;

template <class Mesh>
void check_all(const Mesh& m) {
  const auto a = mp::random_normal<double, batch, hidden>(m, sizes, 1);
  auto check = [&](const char* what, auto f) { check_gradient(what, a, f); };
  check("reshape merging the split dims",
        [](const auto& x) { return weighted_sum(mp::reshape<mp::shape<flat>>(x)); });
  check("reshape splitting hidden", [](const auto& x) {
    return weighted_sum(
        mp::reshape<mp::shape<batch, head, dk>>(x, mp::extents{head{} = 4, dk{} = 2}));
  });
  // the traced tensor is not laid out by the rules: its gradient is relayouted back too
  check("reshape of a relayouted tensor, and back", [](const auto& x) {
    const auto by_hidden = mp::relayout<mp::layout<mp::split<hidden, rows>>>(x);
    const auto flat_x = mp::reshape<mp::shape<flat>>(by_hidden);
    return weighted_sum(mp::reshape<mp::shape<batch, hidden>>(flat_x, sizes) * x);
  });
  check("rename", [](const auto& x) { return weighted_sum(mp::rename<hidden, hidden2>(x)); });
}
}  // namespace

TEST_CASE("reshape and rename gradients match central differences, split layout") {
  for (const auto& shape : mesh_shapes()) check_all(reshape_mesh(shape));
}

TEST_CASE("reshape and rename gradients match central differences, replicated layout") {
  check_all(replicated_mesh(meshpp_test::grid2(world().size())));
}

TEST_CASE("a variable's gradient through a reshape and a relayout") {
  for (const auto& shape : mesh_shapes()) {
    const reshape_mesh m(shape);
    mp::variable w(mp::random_normal<double, batch, hidden>(m, sizes, 5), "w");
    const auto y = mp::relayout<mp::layout<>>(mp::reshape<mp::shape<flat>>(w));
    mp::backward(mp::reduce_sum(y * y));
    REQUIRE(w.grad().has_value());
    // d sum(w^2) / dw = 2 w, exactly: the gradient is only moved
    const xt::xtensor<double, 2> twice_w = mp::gather(w.value()) * 2.0;
    CHECK_ALL_RANKS(meshpp_test::bit_equal(mp::gather(*w.grad()), twice_w));
  }
}
