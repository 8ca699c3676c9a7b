// Named expressions, part 7: mixed layouts. An operand that holds a dim whole is read at this
// rank's stripe when another operand splits that dim: the result is split, with no
// communication; a destination may split what the expression holds whole.
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
MESHPP_DIM(rows);
MESHPP_DIM(cols);

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

TEST_CASE("mixed layouts: an operand holding a dim whole is read at this rank's stripe") {
  const int n = world().size();
  const auto g2 = meshpp_test::grid2(n);
  using mesh_t = mp::mesh<mp::axes<rows, cols>>;  // no rules: each tensor names its layout
  mesh_t m(g2);
  using mp::layout;
  using mp::split;
  using bh = mp::shape<batch, hidden>;
  using split_b = mp::tensor<float, bh, layout<split<batch, rows>>, mesh_t>;
  using whole = mp::tensor<float, bh, layout<>, mesh_t>;
  using split_h = mp::tensor<float, mp::shape<hidden>, layout<split<hidden, cols>>, mesh_t>;
  using whole_hb = mp::tensor<float, mp::shape<hidden, batch>, layout<>, mesh_t>;
  using split_both = mp::tensor<float, bh, layout<split<batch, rows>, split<hidden, cols>>, mesh_t>;
  const auto sb = mp::random_normal<split_b>(m, sizes, 21);
  const auto w = mp::random_normal<whole>(m, sizes, 22);
  const auto sh = mp::random_normal<split_h>(m, sizes, 23);
  const auto wt = mp::random_normal<whole_hb>(m, sizes, 24);
  const std::size_t rows_n = static_cast<std::size_t>(g2[0]);
  const std::size_t cols_n = static_cast<std::size_t>(g2[1]);
  // the inputs really are laid out as declared
  CHECK(sb.local_shape() == std::array<std::size_t, 2>{nb / rows_n, nh});
  CHECK(w.local_shape() == std::array<std::size_t, 2>{nb, nh});
  const auto SB = mp::gather(sb), W = mp::gather(w), WT = mp::gather(wt);
  const auto SH = mp::gather(sh);

  SUBCASE("split + whole is split, whichever comes first") {
    const auto want = zip(SB, W, std::plus<>());
    const auto r1 = mp::eval(sb + w);
    const auto r2 = mp::eval(w + sb);
    static_assert(std::is_same_v<decltype(r1), const split_b>);
    static_assert(std::is_same_v<decltype(r2), const split_b>);
    CHECK(r1.local_shape() == std::array<std::size_t, 2>{nb / rows_n, nh});
    CHECK(r2.local_shape() == std::array<std::size_t, 2>{nb / rows_n, nh});
    CHECK_ALL_RANKS(matches(mp::gather(r1), want, tol));
    CHECK_ALL_RANKS(matches(mp::gather(r2), want, tol));
    CHECK_ALL_RANKS(matches(r2.local(), slice_of(want, r2), tol));
  }
  SUBCASE("operands splitting different dims give a result split on both") {
    const auto e = w * sb + sh;
    static_assert(
        std::is_same_v<layout_of<decltype(e)>, layout<split<batch, rows>, split<hidden, cols>>>);
    xt::xtensor<double, 2> want({nb, nh});
    for (std::size_t i = 0; i < nb; ++i)
      for (std::size_t j = 0; j < nh; ++j) want(i, j) = W(i, j) * SB(i, j) + SH(j);
    const auto r = mp::eval(e);
    static_assert(std::is_same_v<decltype(r), const split_both>);
    CHECK(r.local_shape() == std::array<std::size_t, 2>{nb / rows_n, nh / cols_n});
    CHECK_ALL_RANKS(matches(mp::gather(r), want, tol));
    CHECK_ALL_RANKS(matches(r.local(), slice_of(want, r), tol));
  }
  SUBCASE("a whole operand in another dim order") {
    const auto e = wt - sh;  // [hidden, batch], hidden split by sh
    static_assert(std::is_same_v<layout_of<decltype(e)>, layout<split<hidden, cols>>>);
    xt::xtensor<double, 2> want({nh, nb});
    for (std::size_t j = 0; j < nh; ++j)
      for (std::size_t i = 0; i < nb; ++i) want(j, i) = WT(j, i) - SH(j);
    CHECK_ALL_RANKS(matches(result(e), want, tol));
    const auto e2 = sb * wt;  // [batch, hidden], batch split by sb, wt read transposed
    static_assert(std::is_same_v<layout_of<decltype(e2)>, layout<split<batch, rows>>>);
    xt::xtensor<double, 2> want2({nb, nh});
    for (std::size_t i = 0; i < nb; ++i)
      for (std::size_t j = 0; j < nh; ++j) want2(i, j) = SB(i, j) * WT(j, i);
    CHECK_ALL_RANKS(matches(result(e2), want2, tol));
  }
  SUBCASE("a destination may split what the expression holds whole (free slicing)") {
    split_both d = w * 2 + wt;
    xt::xtensor<double, 2> want({nb, nh});
    for (std::size_t i = 0; i < nb; ++i)
      for (std::size_t j = 0; j < nh; ++j) want(i, j) = W(i, j) * 2 + WT(j, i);
    CHECK(d.local_shape() == std::array<std::size_t, 2>{nb / rows_n, nh / cols_n});
    CHECK_ALL_RANKS(matches(mp::gather(d), want, tol));
    d = sb - w;
    CHECK_ALL_RANKS(matches(mp::gather(d), zip(SB, W, std::minus<>()), tol));
    // transposed and split on both dims
    mp::tensor<float, mp::shape<hidden, batch>, layout<split<hidden, cols>, split<batch, rows>>,
               mesh_t>
        dt = sb * w;
    xt::xtensor<double, 2> want_t({nh, nb});
    for (std::size_t j = 0; j < nh; ++j)
      for (std::size_t i = 0; i < nb; ++i) want_t(j, i) = SB(i, j) * W(i, j);
    CHECK(dt.local_shape() == std::array<std::size_t, 2>{nh / cols_n, nb / rows_n});
    CHECK_ALL_RANKS(matches(mp::gather(dt), want_t, tol));
    CHECK_ALL_RANKS(matches(dt.local(), slice_of(want_t, dt), tol));
  }
}
