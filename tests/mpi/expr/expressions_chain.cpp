// Named expressions, part 8: a long fused chain, relu(a * b + c) - sigmoid(d) * 2 over
// operands of different dim sets and orders, is right replicated, split on one dim, split on
// two dims, on a 4-D mesh, and evaluated into a destination of another dim order.
//
// Every result is gathered and compared with a reference computed on one rank without any
// mesh, by plain loops over the gathered inputs, and each rank's slice with its block of the
// reference. Meshes are built from the communicator's size.
#include <meshpp/core/create.hpp>
#include <meshpp/expr/functions.hpp>
#include <meshpp/ops/scatter_gather.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <functional>
#include <type_traits>

#include "reference.hpp"
#include "testing.hpp"

namespace mp = meshpp;
using meshpp_test::matches;
using meshpp_test::slice_of;
using meshpp_test::world;
using meshpp_test::zip;

MESHPP_DIM(batch);
MESHPP_DIM(hidden);
MESHPP_DIM(seq);
MESHPP_DIM(all);
MESHPP_DIM(x);
MESHPP_DIM(y);
MESHPP_DIM(z);
MESHPP_DIM(rest);

namespace {
constexpr std::size_t nb = 8, nh = 12, ns = 4;
const auto sizes = mp::extents{batch{} = nb, hidden{} = nh, seq{} = ns};
constexpr double tol = 1e-6;

template <class E>
using layout_of = typename std::remove_cvref_t<E>::layout_type;
template <class E>
using shape_of = typename std::remove_cvref_t<E>::shape_type;

template <class E>
auto result(const E& e) {
  return mp::gather(mp::eval(e));
}
}  // namespace

namespace {
// relu(a * b + c) - sigmoid(d) * 2 with a, b [batch, hidden], c [hidden], d [seq, batch]:
// the result is [batch, hidden, seq]
template <class Mesh>
void check_chain(const Mesh& m) {
  const auto a = mp::random_normal<float, batch, hidden>(m, sizes, 41);
  const auto b = mp::random_normal<float, batch, hidden>(m, sizes, 42);
  const auto c = mp::random_normal<float, hidden>(m, sizes, 43);
  const auto d = mp::random_normal<float, seq, batch>(m, sizes, 44);
  const auto A = mp::gather(a);
  const auto Bm = mp::gather(b);
  const auto C = mp::gather(c);
  const auto D = mp::gather(d);

  const auto chain = mp::relu(a * b + c) - mp::sigmoid(d) * 2;
  using bhs = mp::shape<batch, hidden, seq>;
  static_assert(std::is_same_v<shape_of<decltype(chain)>, bhs>);
  static_assert(
      std::is_same_v<layout_of<decltype(chain)>, typename Mesh::template layout_for<bhs>>);
  xt::xtensor<double, 3> want({nb, nh, ns});
  for (std::size_t i = 0; i < nb; ++i)
    for (std::size_t j = 0; j < nh; ++j)
      for (std::size_t k = 0; k < ns; ++k) {
        want(i, j, k) =
            std::max(double(A(i, j)) * Bm(i, j) + C(j), 0.0) - 2 / (1 + std::exp(-double(D(k, i))));
      }
  // the reference is not degenerate: relu clips somewhere and passes somewhere
  std::size_t clipped = 0;
  for (std::size_t i = 0; i < nb; ++i)
    for (std::size_t j = 0; j < nh; ++j) clipped += double(A(i, j)) * Bm(i, j) + C(j) < 0;
  REQUIRE(clipped > 0);
  REQUIRE(clipped < nb * nh);

  const auto r = mp::eval(chain);
  CHECK_ALL_RANKS(matches(r.local(), slice_of(want, r), tol));
  CHECK_ALL_RANKS(matches(mp::gather(r), want, tol));
  // into a destination of another dim order
  mp::tensor_of<float, mp::shape<hidden, seq, batch>, Mesh> t = chain;
  xt::xtensor<double, 3> want_t({nh, ns, nb});
  for (std::size_t i = 0; i < nb; ++i)
    for (std::size_t j = 0; j < nh; ++j)
      for (std::size_t k = 0; k < ns; ++k) want_t(j, k, i) = want(i, j, k);
  CHECK_ALL_RANKS(matches(t.local(), slice_of(want_t, t), tol));
  CHECK_ALL_RANKS(matches(mp::gather(t), want_t, tol));
}
}  // namespace

TEST_CASE("a long fused chain: replicated") {
  check_chain(mp::mesh<mp::axes<all>>({world().size()}));
}

TEST_CASE("a long fused chain: every shape of a 4-D mesh") {
  // rules batch:x, hidden:y, seq:z over [x, y, z, rest], every shape with n ranks: replicated,
  // 1-D splits of each dim, and two dims split at once (at 4 ranks), from one compiled type
  using rules = mp::layout<mp::split<batch, x>, mp::split<hidden, y>, mp::split<seq, z>>;
  using mesh_t = mp::mesh<mp::axes<x, y, z, rest>, rules>;
  for (const auto& shape : meshpp_test::mesh_shapes<4>(world().size())) {
    mesh_t m(shape);
    CAPTURE(m.describe());
    check_chain(m);
  }
}
