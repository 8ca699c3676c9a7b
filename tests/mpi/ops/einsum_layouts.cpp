// einsum<Out>(a, b) under layouts that split the summed dims in several ways: two contracted
// dims over two mesh dims; a contracted dim and a dim of one input only (summed out first);
// a contracted dim split in one operand and held whole in the other (the whole operand is
// read at this rank's stripe, for free). Every result is compared with a
// single-rank reference (einsum_check.hpp), and every einsum must record exactly one
// allreduce over exactly the mesh dims of its split summed dims (none if none is split).
// Runs at any rank count: meshes are built from the communicator's size.
#include <cstdint>
#include <type_traits>
#include <utility>

#include "einsum_check.hpp"

namespace mp = meshpp;
using einsum_test::allreduce_over;
using einsum_test::check;
using einsum_test::make;
using einsum_test::no_allreduce;
using meshpp_test::world;

MESHPP_DIM(i);
MESHPP_DIM(j);
MESHPP_DIM(k1);
MESHPP_DIM(k2);
MESHPP_DIM(e);  // in the first input only
MESHPP_DIM(f);  // in the second input only
MESHPP_DIM(rows);
MESHPP_DIM(cols);

namespace {
const auto sizes = mp::extents{i{} = 4, j{} = 8, k1{} = 4, k2{} = 8, e{} = 4, f{} = 4};
constexpr unsigned over_rows = 1u, over_cols = 2u;  // bit sets of axes<rows, cols>
using ij = mp::shape<i, j>;
using ji = mp::shape<j, i>;
using mesh_t = mp::mesh<mp::axes<rows, cols>>;
template <class Rules, class T, class... Dims>
using tensor_t = einsum_test::laid_out_t<mesh_t, Rules, T, Dims...>;
}  // namespace

TEST_CASE("two contracted dims split over two mesh dims: one allreduce over both") {
  using R = mp::layout<mp::split<k1, rows>, mp::split<k2, cols>>;
  for (const auto& shape : einsum_test::mesh_shapes()) {
    const mesh_t m(shape);
    CAPTURE(m.describe());
    const auto a = make<tensor_t<R, double, i, k1, k2>>(m, sizes, 1);
    const auto a_t = make<tensor_t<R, double, k1, k2, i>>(m, sizes, 2);
    const auto b = make<tensor_t<R, double, k1, k2, j>>(m, sizes, 3);
    const auto b_t = make<tensor_t<R, double, j, k2, k1>>(m, sizes, 4);
    const std::uint64_t k_local = 4 / m.size<rows>() * (8 / m.size<cols>());
    const auto want = allreduce_over(over_rows | over_cols, k_local);
    check<ij>(a, b, sizes, want);    // both as they lie
    check<ji>(a_t, b, sizes, want);  // a transposed, output transposed
    check<ij>(a, b_t, sizes, want);  // b's contracted dims in the other order: copied
  }
}

TEST_CASE("a contracted dim on one mesh dim and a dim of one input only on the other") {
  // e (a only) and f (b only) are summed out of their input first; split, they leave partial
  // sums that the one allreduce completes along with the contraction.
  using R = mp::layout<mp::split<k1, rows>, mp::split<e, cols>, mp::split<f, cols>>;
  for (const auto& shape : einsum_test::mesh_shapes()) {
    const mesh_t m(shape);
    CAPTURE(m.describe());
    const auto a = make<tensor_t<R, double, i, k1, e>>(m, sizes, 1);
    const auto a2 = make<tensor_t<R, double, i, k1>>(m, sizes, 2);
    const auto b = make<tensor_t<R, double, k1, j>>(m, sizes, 3);
    const auto b2 = make<tensor_t<R, double, f, k1, j>>(m, sizes, 4);
    const auto want = allreduce_over(over_rows | over_cols, 4 / m.size<rows>());
    check<ij>(a, b, sizes, want);
    check<ji>(a2, b2, sizes, want);
  }
}

TEST_CASE("a dim of one input only, held whole: summed out locally, no collective") {
  using R = mp::layout<mp::split<i, rows>, mp::split<j, cols>>;
  for (const auto& shape : einsum_test::mesh_shapes()) {
    const mesh_t m(shape);
    CAPTURE(m.describe());
    const auto a = make<tensor_t<R, double, e, i, k1>>(m, sizes, 1);
    const auto b = make<tensor_t<R, double, k1, j>>(m, sizes, 2);
    check<ij>(a, b, sizes, no_allreduce(4));
    // and with nothing contracted at all: an outer product of the sums over e
    const auto u = make<tensor_t<R, double, i, e>>(m, sizes, 3);
    const auto v = make<tensor_t<R, double, j>>(m, sizes, 4);
    check<ji>(u, v, sizes, no_allreduce(1));
  }
}

TEST_CASE("a contracted dim split in one operand and held whole in the other") {
  using a_split = mp::tensor<double, mp::shape<i, k1>, mp::layout<mp::split<k1, cols>>, mesh_t>;
  using a_whole = mp::tensor<double, mp::shape<i, k1>, mp::layout<>, mesh_t>;
  using a_rows = mp::tensor<double, mp::shape<i, k1>, mp::layout<mp::split<i, rows>>, mesh_t>;
  using b_split = mp::tensor<double, mp::shape<k1, j>, mp::layout<mp::split<k1, cols>>, mesh_t>;
  using b_whole = mp::tensor<double, mp::shape<j, k1>, mp::layout<>, mesh_t>;
  using b_rows = mp::tensor<double, mp::shape<k1, j>, mp::layout<mp::split<k1, rows>>, mesh_t>;
  // the output keeps the split of its dims from whichever input splits them
  static_assert(std::is_same_v<decltype(mp::einsum<ij>(std::declval<a_rows>(),
                                                       std::declval<b_split>()))::layout_type,
                               mp::layout<mp::split<i, rows>>>);
  static_assert(std::is_same_v<decltype(mp::einsum<ij>(std::declval<a_split>(),
                                                       std::declval<b_whole>()))::layout_type,
                               mp::layout<>>);
  for (const auto& shape : einsum_test::mesh_shapes()) {
    const mesh_t m(shape);
    CAPTURE(m.describe());
    const auto as = make<a_split>(m, sizes, 1);
    const auto aw = make<a_whole>(m, sizes, 2);
    const auto ar = make<a_rows>(m, sizes, 3);
    const auto bs = make<b_split>(m, sizes, 4);
    const auto bw = make<b_whole>(m, sizes, 5);
    const auto br = make<b_rows>(m, sizes, 6);
    const auto on_cols = allreduce_over(over_cols, 4 / m.size<cols>());
    check<ij>(as, bw, sizes, on_cols);  // split first, whole second
    check<ji>(aw, bs, sizes, on_cols);  // whole first, split second
    check<ij>(ar, bs, sizes, on_cols);  // a free dim split in one, the contracted in the other
    check<ij>(aw, br, sizes, allreduce_over(over_rows, 4 / m.size<rows>()));
    check<ij>(aw, bw, sizes, no_allreduce(4));  // both whole: nothing to combine
  }
}
