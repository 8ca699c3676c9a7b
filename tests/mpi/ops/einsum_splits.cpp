// einsum<Out>(a, b) as a matrix product under the layout cases einsum.cpp and
// einsum_types.cpp leave (the contracted dim alone on one mesh dim; only free dims split; the
// contracted dim on rows with a free dim on cols), float and int replicated, a contracted dim
// of size 0 (the empty sum), and a full contraction to a tensor of no dims. Compared with a
// single-rank reference (einsum_check.hpp). Runs at any rank count.
#include <cstdint>

#include "einsum_check.hpp"
#include "einsum_matmul.hpp"

namespace mp = meshpp;
using meshpp_test::world;
using namespace einsum_matmul;

TEST_CASE_TEMPLATE("matmul in double, the other layout cases", Case, contracted_on_cols,
                   free_dims_split, contracted_on_rows_and_cols_free) {
  matmul_orders<double, Case, /*every=*/false>();
}

TEST_CASE_TEMPLATE("matmul in float and int, replicated", T, float, int) {
  matmul_orders<T, replicated, /*every=*/false>();
}

TEST_CASE_TEMPLATE("a contracted dim of size 0: the empty sum is 0", T, double, int) {
  using R = rows_and_contracted_on_cols::rules;
  const auto empty = mp::extents{i{} = 4, j{} = 8, k{} = 0};
  for (const auto& shape : einsum_test::mesh_shapes()) {
    const mesh_t m(shape);
    CAPTURE(m.describe());
    const auto a = einsum_test::make<einsum_test::laid_out_t<mesh_t, R, T, i, k>>(m, empty, 1);
    const auto b = einsum_test::make<einsum_test::laid_out_t<mesh_t, R, T, k, j>>(m, empty, 2);
    einsum_test::check<mp::shape<i, j>>(a, b, empty, allreduce_over(over_cols, 0));
  }
}

TEST_CASE("a full contraction: a tensor of no dims") {
  using R = free_dims_split::rules;
  for (const auto& shape : einsum_test::mesh_shapes()) {
    const mesh_t m(shape);
    CAPTURE(m.describe());
    const auto a = einsum_test::make<einsum_test::laid_out_t<mesh_t, R, double, i, j>>(m, sizes, 1);
    const auto b = einsum_test::make<einsum_test::laid_out_t<mesh_t, R, double, j, i>>(m, sizes, 2);
    const std::uint64_t k_local = 4 / m.size<rows>() * (8 / m.size<cols>());
    einsum_test::check<mp::shape<>>(a, b, sizes, allreduce_over(over_rows | over_cols, k_local));
  }
}
