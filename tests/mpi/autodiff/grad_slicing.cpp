// Gradients of slice, pad, concat, split_along and shift (autodiff/movement.hpp), checked by
// central differences (double) at every element: along hidden split over cols and along batch
// split over rows (meshes grid2(n), [1, n] and [n, 1], so each is split over 1, 2 and 4 ranks
// somewhere), and on a mesh with no rules (everything replicated). Ranges and offsets are
// chosen to cross the stripes' borders, so the backward permutes move rows between ranks.
// Relayout, reshape and rename: grad_movement.cpp.
#include <meshpp/autodiff/movement.hpp>
#include <meshpp/ops/scatter_gather.hpp>

#include <cstddef>

#include <xtensor/xtensor.hpp>

#include "grad_fixture.hpp"

namespace {
const auto sizes = mp::extents{batch{} = 4, hidden{} = 8};

template <class Mesh>
void check_all(const Mesh& m) {
  const auto a = mp::random_normal<double, batch, hidden>(m, sizes, 1);
  const auto other = mp::random_normal<double, batch, hidden>(m, sizes, 2);
  auto check = [&](const char* what, auto f) { check_gradient(what, a, f); };
  // every result size divides by 4: legal on every mesh
  check("slice", [](const auto& x) { return weighted_sum(mp::slice<hidden>(x, 3, 4)); });
  check("pad", [](const auto& x) { return weighted_sum(mp::pad<hidden>(x, 3, 1, 0.5)); });
  check("pad, then slice across it", [](const auto& x) {
    return weighted_sum(mp::slice<hidden>(mp::pad<hidden>(x, 2, 2), 1, 8));
  });
  check("concat with a plain operand after",
        [&](const auto& x) { return weighted_sum(mp::concat<hidden>(x, other)); });
  check("concat with a plain operand before",
        [&](const auto& x) { return weighted_sum(mp::concat<hidden>(other, x * x)); });
  check("concat of a tensor with itself",
        [](const auto& x) { return weighted_sum(mp::concat<batch>(x, x)); });
  check("split_along, both pieces used", [](const auto& x) {
    const auto pieces = mp::split_along<hidden>(x, {4, 4});
    return weighted_sum(pieces[0]) + weighted_sum(pieces[1] * pieces[1], 7);
  });
  check("split_along, one piece used", [](const auto& x) {
    const auto pieces = mp::split_along<hidden>(x, {4, 4});
    return weighted_sum(pieces[1]);
  });
  check("shift zero, forward",
        [](const auto& x) { return weighted_sum(mp::shift<hidden>(x, 3, mp::boundary::zero)); });
  check("shift zero, backward",
        [](const auto& x) { return weighted_sum(mp::shift<batch>(x, -1, mp::boundary::zero)); });
  check("shift wrap, forward",
        [](const auto& x) { return weighted_sum(mp::shift<batch>(x, 3, mp::boundary::wrap)); });
  check("shift wrap, backward, more than once around",
        [](const auto& x) { return weighted_sum(mp::shift<hidden>(x, -13, mp::boundary::wrap)); });
  check("shift by the default boundary, twice",
        [](const auto& x) { return weighted_sum(mp::shift<hidden>(mp::shift<hidden>(x, 5), -2)); });
}
}  // namespace

TEST_CASE("slice, pad, concat, split_along and shift gradients, split layout") {
  for (const auto& shape : mesh_shapes()) check_all(split_mesh(shape));
}

TEST_CASE("slice, pad, concat, split_along and shift gradients, replicated layout") {
  check_all(replicated_mesh(meshpp_test::grid2(world().size())));
}

TEST_CASE("a piece of split_along that gets no gradient contributes zeros") {
  const split_mesh m(meshpp_test::grid2(world().size()));
  const auto x = mp::trace(mp::random_normal<double, batch, hidden>(m, sizes, 3));
  const auto pieces = mp::split_along<hidden>(x, {4, 4});
  const auto [dx] = mp::gradients(mp::reduce_sum(pieces[0]), x);
  const auto got = mp::gather(dx);
  xt::xtensor<double, 2> want({4, 8}, 0.0);
  for (std::size_t b = 0; b < 4; ++b) {
    for (std::size_t h = 0; h < 4; ++h) want(b, h) = 1.0;
  }
  CHECK_ALL_RANKS(meshpp_test::bit_equal(got, want));
}
