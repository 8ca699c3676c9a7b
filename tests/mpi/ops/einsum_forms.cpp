// The forms of einsum beyond a matrix product: outer products, the one-operand form
// einsum<Out>(a) (transpose and sum), and expression operands (einsum(x * 2.0, w)). Every result is
// compared with a single-rank reference (einsum_check.hpp) and every einsum's counters are
// checked. Runs at any rank count: meshes are built from the communicator's size.
#include <meshpp/expr/functions.hpp>

#include <cstdint>
#include <type_traits>

#include <xtensor/xmanipulation.hpp>
#include <xtensor/xoperation.hpp>

#include "einsum_check.hpp"

namespace mp = meshpp;
using einsum_test::allreduce_over;
using einsum_test::check;
using einsum_test::check_call;
using einsum_test::make;
using einsum_test::no_allreduce;
using meshpp_test::world;

MESHPP_DIM(b);
MESHPP_DIM(h);
MESHPP_DIM(d);
MESHPP_DIM(i);
MESHPP_DIM(j);
MESHPP_DIM(rows);
MESHPP_DIM(cols);

namespace {
const auto sizes = mp::extents{b{} = 4, h{} = 4, d{} = 8, i{} = 4, j{} = 8};
constexpr unsigned over_rows = 1u, over_cols = 2u;  // bit sets of axes<rows, cols>
using mesh_t = mp::mesh<mp::axes<rows, cols>>;
template <class Rules, class T, class... Dims>
using tensor_t = einsum_test::laid_out_t<mesh_t, Rules, T, Dims...>;
}  // namespace

TEST_CASE("outer products: no contracted dim") {
  using R = mp::layout<mp::split<i, rows>, mp::split<j, cols>, mp::split<b, rows>>;
  for (const auto& shape : einsum_test::mesh_shapes()) {
    const mesh_t m(shape);
    CAPTURE(m.describe());
    const auto u = make<tensor_t<R, double, i>>(m, sizes, 1);
    const auto v = make<tensor_t<R, double, j>>(m, sizes, 2);
    check<mp::shape<i, j>>(u, v, sizes, no_allreduce(1));
    check<mp::shape<j, i>>(u, v, sizes, no_allreduce(1));
    // with a batch dim: [b, j] x [b, i]; b and i share rows, but b is on rows only here
    const auto bu = make<tensor_t<R, double, b, j>>(m, sizes, 3);
    const auto bv = make<tensor_t<R, double, h, b>>(m, sizes, 4);
    check<mp::shape<b, h, j>>(bu, bv, sizes, no_allreduce(1));
  }
}

TEST_CASE("einsum<Out>(a): transpose, and sum out the dims Out lacks") {
  using R = mp::layout<mp::split<d, rows>, mp::split<j, cols>>;
  xt::xtensor<double, 0> one;
  one() = 1.0;  // the second input of the reference: a scalar 1
  for (const auto& shape : einsum_test::mesh_shapes()) {
    const mesh_t m(shape);
    CAPTURE(m.describe());
    const auto a = make<tensor_t<R, double, i, d, j>>(m, sizes, 1);
    const auto ga = mp::gather(a);
    using S = mp::shape<i, d, j>;
    // d is split over rows: one allreduce over rows
    check_call<mp::shape<j, i>, S, mp::shape<>>(
        m, [&] { return mp::einsum<mp::shape<j, i>>(a); }, ga, one, sizes,
        allreduce_over(over_rows, 0), /*flops=*/false);
    // nothing summed: a transpose, no communication
    check_call<mp::shape<j, d, i>, S, mp::shape<>>(
        m, [&] { return mp::einsum<mp::shape<j, d, i>>(a); }, ga, one, sizes, no_allreduce(0),
        false);
    // j (split over cols) summed out: one allreduce over cols
    check_call<mp::shape<d, i>, S, mp::shape<>>(
        m, [&] { return mp::einsum<mp::shape<d, i>>(a); }, ga, one, sizes,
        allreduce_over(over_cols, 0), false);
  }
}

TEST_CASE("expression operands are evaluated straight into the gemm layout") {
  using R = mp::layout<mp::split<i, rows>, mp::split<d, cols>>;
  for (const auto& shape : einsum_test::mesh_shapes()) {
    const mesh_t m(shape);
    CAPTURE(m.describe());
    const auto x = make<tensor_t<R, double, i, d>>(m, sizes, 1);
    const auto x2 = make<tensor_t<R, double, d, i>>(m, sizes, 2);
    const auto w = make<tensor_t<R, double, d, j>>(m, sizes, 3);
    const xt::xtensor<double, 2> gx = mp::gather(x), gx2 = mp::gather(x2), gw = mp::gather(w);
    const auto want = allreduce_over(over_cols, 8 / m.size<cols>());
    using ij = mp::shape<i, j>;
    using id = mp::shape<i, d>;
    using dj = mp::shape<d, j>;
    const xt::xtensor<double, 2> gx_times_2 = gx * 2.0;
    check_call<ij, id, dj>(
        m, [&] { return mp::einsum<ij>(x * 2.0, w); }, gx_times_2, gw, sizes, want);
    const xt::xtensor<double, 2> gw_plus_1 = gw + 1.0;
    check_call<mp::shape<j, i>, id, dj>(
        m, [&] { return mp::einsum<mp::shape<j, i>>(x, w + 1.0); }, gx, gw_plus_1, sizes, want);
    // an expression of two tensors in different storage orders, both operands expressions
    const xt::xtensor<double, 2> gsum = gx - xt::transpose(gx2);
    check_call<ij, id, dj>(
        m, [&] { return mp::einsum<ij>(x - x2, -w); }, gsum, xt::xtensor<double, 2>(-gw), sizes,
        want);
    // one operand: the sum over d of an expression
    xt::xtensor<double, 0> one;
    one() = 1.0;
    const xt::xtensor<double, 2> gx_times_3 = gx * 3.0;
    check_call<mp::shape<i>, id, mp::shape<>>(
        m, [&] { return mp::einsum<mp::shape<i>>(x * 3.0); }, gx_times_3, one, sizes,
        allreduce_over(over_cols, 0), false);
  }
}

TEST_CASE("a float expression operand stays float") {
  using R = mp::layout<mp::split<d, rows>>;
  const mesh_t m(meshpp_test::grid2(world().size()));
  const auto x = make<tensor_t<R, float, i, d>>(m, sizes, 1);
  const auto w = make<tensor_t<R, float, j, d>>(m, sizes, 2);
  static_assert(
      std::is_same_v<decltype(mp::einsum<mp::shape<i, j>>(x * 0.5, w))::value_type, float>);
  const xt::xtensor<float, 2> gx = mp::gather(x) * 0.5f;
  check_call<mp::shape<i, j>, mp::shape<i, d>, mp::shape<j, d>>(
      m, [&] { return mp::einsum<mp::shape<i, j>>(x * 0.5, w); }, gx, mp::gather(w), sizes,
      allreduce_over(over_rows, 8 / m.size<rows>()));
}

TEST_CASE("a dim of one input only, in an expression operand") {
  using R = mp::layout<mp::split<d, rows>, mp::split<h, cols>>;
  const mesh_t m(meshpp_test::grid2(world().size()));
  const auto a = make<tensor_t<R, double, h, d, i>>(m, sizes, 1);
  const auto w = make<tensor_t<R, double, d, j>>(m, sizes, 2);
  const xt::xtensor<double, 3> ga = mp::gather(a) + 1.0;
  check_call<mp::shape<i, j>, mp::shape<h, d, i>, mp::shape<d, j>>(
      m, [&] { return mp::einsum<mp::shape<i, j>>(a + 1.0, w); }, ga, mp::gather(w), sizes,
      allreduce_over(over_rows | over_cols, 8 / m.size<rows>()));
}
