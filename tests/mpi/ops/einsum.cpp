// einsum<Out>(a, b) as a matrix product: every storage order of the operands and the output,
// for double, float and int, under replicated and split layouts; what it counts; and the
// run-time errors. Every result is compared with a single-rank reference in plain loops over
// the gathered inputs (einsum_check.hpp). Runs at any rank count: the meshes are built from
// the communicator's size, and every size divides by 1, 2 and 4.
//
// float, int and mixed types: einsum_types.cpp. The other matrix-product layouts, an empty
// contraction and a full one: einsum_splits.cpp. Two contracted dims on two mesh dims,
// operands split differently, dims of one input only: einsum_layouts.cpp. Batch dims:
// einsum_batched.cpp. Outer products, the one-operand form and expression operands:
// einsum_forms.cpp.
#include "einsum_check.hpp"
#include "einsum_matmul.hpp"

#include <meshpp/expr/functions.hpp>

#include <array>
#include <cmath>
#include <cstddef>
#include <type_traits>
#include <vector>

#include <boost/mpi/collectives/all_reduce.hpp>
#include <xtensor/xmanipulation.hpp>
#include <xtensor/xoperation.hpp>

namespace mp = meshpp;
using meshpp_test::ranks_in_step;
using meshpp_test::world;

MESHPP_DIM(b);
MESHPP_DIM(k2);
MESHPP_DIM(x);
MESHPP_DIM(y);
MESHPP_DIM(z);

using namespace einsum_matmul;

namespace {
const auto with_batch = mp::extents{b{} = 4, i{} = 4, j{} = 8, k{} = 12};

}  // namespace

TEST_CASE("the reference einsum is the plain triple loop of a matrix product") {
  // The reference of einsum_check.hpp against a hand-written loop, so that a mistake in the
  // generic reference could not hide a mistake in einsum.
  const auto a = meshpp_test::filled<double>(std::array<std::size_t, 2>{12, 4},
                                             [](auto n) { return mp::normal_at<double>(7, n); });
  const auto bm = meshpp_test::filled<double>(std::array<std::size_t, 2>{12, 8},
                                              [](auto n) { return mp::normal_at<double>(8, n); });
  const auto ref =
      einsum_test::reference<mp::shape<j, i>, mp::shape<k, i>, mp::shape<k, j>>(a, bm, sizes);
  REQUIRE(ref.shape == std::vector<std::size_t>{8, 4});
  CHECK(ref.terms == 12);
  xt::xtensor<double, 2> loops({8, 4}), magnitudes({8, 4});
  for (std::size_t jj = 0; jj < 8; ++jj) {
    for (std::size_t ii = 0; ii < 4; ++ii) {
      double sum = 0, magnitude = 0;
      for (std::size_t kk = 0; kk < 12; ++kk) {
        sum += a(kk, ii) * bm(kk, jj);
        magnitude += std::abs(a(kk, ii) * bm(kk, jj));
      }
      loops(jj, ii) = sum;
      magnitudes(jj, ii) = magnitude;
    }
  }
  CHECK(einsum_test::as_doubles(loops) == ref.value);  // the same sums in the same order
  CHECK(einsum_test::as_doubles(magnitudes) == ref.magnitude);
  // and close_to tells a wrong result from a right one
  const xt::xtensor<int, 2> truncated = xt::cast<int>(loops);
  CHECK(einsum_test::close_to(loops, ref));
  CHECK_FALSE(einsum_test::close_to(truncated, ref, /*quiet=*/true));  // sums are not integers
  CHECK_FALSE(einsum_test::close_to(xt::xtensor<double, 2>(xt::transpose(loops)), ref, true));
  loops(3, 1) += 1e-3;
  CHECK_FALSE(einsum_test::close_to(loops, ref, true));
}

TEST_CASE_TEMPLATE("matmul in every storage order, double", Case, replicated,
                   rows_and_contracted_on_cols) {
  matmul_orders<double, Case>();
}

TEST_CASE("a 3-D mesh: a free dim on one mesh dim, two contracted dims on the other two") {
  using mesh3 = mp::mesh<mp::axes<x, y, z>>;
  using R = mp::layout<mp::split<i, x>, mp::split<k, y>, mp::split<k2, z>>;
  const mesh3 m(meshpp_test::grid3(world().size()));
  CAPTURE(m.describe());
  const auto three = mp::extents{i{} = 4, j{} = 8, k{} = 12, k2{} = 8};
  const auto a =
      einsum_test::make<einsum_test::laid_out_t<mesh3, R, double, k2, i, k>>(m, three, 1);
  const auto c =
      einsum_test::make<einsum_test::laid_out_t<mesh3, R, double, k, j, k2>>(m, three, 2);
  static_assert(mesh3::mask_v<y, z> == 6u);
  const std::uint64_t k_local = 12 / m.size<y>() * (8 / m.size<z>());
  einsum_test::check<mp::shape<j, i>>(a, c, three, einsum_test::allreduce_over(6u, k_local));
}

TEST_CASE("inputs that disagree on a shared dim's size throw meshpp::error on every rank") {
  using C = contracted_on_cols;
  const mesh_t m(meshpp_test::grid2(world().size()));
  const auto other = mp::extents{i{} = 4, j{} = 8, k{} = 8, b{} = 8};
  const auto a = einsum_test::make<tensor_t<C, double, i, k>>(m, sizes, 1);
  const auto b8 = einsum_test::make<tensor_t<C, double, k, j>>(m, other, 2);
  m.counters().reset();
  CHECK_ALL_RANKS(meshpp_test::throws_with<mp::error>(
      [&] { (void)mp::einsum<mp::shape<i, j>>(a, b8); },
      {"meshpp::einsum: the inputs disagree on the size of dim 'k': 12 and 8"}));
  CHECK_ALL_RANKS(meshpp_test::throws_with<mp::error>(
      [&] { (void)mp::einsum<mp::shape<j, i>>(b8, a * 2.0); }, {"dim 'k': 8 and 12"}));

  // a batch dim (in both inputs and the output)
  const auto x = einsum_test::make<tensor_t<C, double, b, i, k>>(m, with_batch, 3);
  const auto y = einsum_test::make<tensor_t<C, double, b, k, j>>(
      m, mp::extents{b{} = 8, k{} = 12, j{} = 8}, 4);
  CHECK_ALL_RANKS(meshpp_test::throws_with<mp::error>(
      [&] { (void)mp::einsum<mp::shape<b, i, j>>(x, y); }, {"size of dim 'b': 4 and 8"}));

  // nothing was counted, and no rank was left behind in a collective
  CHECK_ALL_RANKS(m.counters().total(mp::collective::allreduce).calls == 0);
  CHECK_ALL_RANKS(m.counters().einsum_calls() == 0);
  CHECK_ALL_RANKS(ranks_in_step());
}

TEST_CASE("inputs on two different meshes throw meshpp::error on every rank") {
  using C = contracted_on_cols;
  const mesh_t m1(meshpp_test::grid2(world().size()));
  const mesh_t m2(meshpp_test::grid2(world().size()));
  const auto a = einsum_test::make<tensor_t<C, double, i, k>>(m1, sizes, 1);
  const auto c = einsum_test::make<tensor_t<C, double, k, j>>(m2, sizes, 2);
  CHECK_ALL_RANKS(
      meshpp_test::throws_with<mp::error>([&] { (void)mp::einsum<mp::shape<i, j>>(a, c); },
                                          {"meshpp::einsum: the inputs live on different meshes"}));
  CHECK_ALL_RANKS(ranks_in_step());
}
