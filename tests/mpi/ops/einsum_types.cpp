// einsum<Out>(a, b) as a matrix product in float and int (no BLAS for int: a plain loop),
// in every storage order, and with operands of mixed value types. Compared with a single-rank
// reference (einsum_check.hpp). Runs at any rank count.
#include <type_traits>

#include "einsum_check.hpp"
#include "einsum_matmul.hpp"

namespace mp = meshpp;
using meshpp_test::world;
using namespace einsum_matmul;

TEST_CASE_TEMPLATE("matmul in every storage order, float", Case, rows_and_contracted_on_cols) {
  matmul_orders<float, Case>();
}

TEST_CASE_TEMPLATE("matmul in every storage order, int (a plain loop, no BLAS)", Case,
                   contracted_on_rows_and_cols_free) {
  matmul_orders<int, Case>();
}

TEST_CASE("mixed value types: float x double computes in double") {
  using R = rows_and_contracted_on_cols;
  const mesh_t m(meshpp_test::grid2(world().size()));
  const auto a = einsum_test::make<tensor_t<R, float, i, k>>(m, sizes, 1);
  const auto b = einsum_test::make<tensor_t<R, double, k, j>>(m, sizes, 3);
  static_assert(std::is_same_v<decltype(mp::einsum<mp::shape<i, j>>(a, b))::value_type, double>);
  einsum_test::check<mp::shape<i, j>>(a, b, sizes, R::want(m));
  einsum_test::check<mp::shape<j, i>>(b, a, sizes, R::want(m));
}
