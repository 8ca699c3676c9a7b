// The matrix-product cases shared by einsum.cpp and einsum_types.cpp: a[i, k] x b[k, j] in
// every storage order, under a set of layout cases, on every 2-D mesh shape.
#pragma once

#include "einsum_check.hpp"

namespace einsum_matmul {

namespace mp = meshpp;
using einsum_test::allreduce_over;
using einsum_test::no_allreduce;

MESHPP_DIM(i);
MESHPP_DIM(j);
MESHPP_DIM(k);
MESHPP_DIM(rows);
MESHPP_DIM(cols);

inline const auto sizes = mp::extents{i{} = 4, j{} = 8, k{} = 12};
inline constexpr std::size_t K = 12;
inline constexpr unsigned over_rows = 1u, over_cols = 2u;  // bit sets of axes<rows, cols>

// Layout cases: the rules, and what an [i, k] x [k, j] product must record under them.
struct replicated {
  using rules = mp::layout<>;
  template <class M>
  static einsum_test::expect want(const M&) {
    return no_allreduce(K);
  }
};
struct contracted_on_cols {  // the contracted dim split over one mesh dim, nothing else
  using rules = mp::layout<mp::split<k, cols>>;
  template <class M>
  static einsum_test::expect want(const M& m) {
    return allreduce_over(over_cols, K / m.template size<cols>());
  }
};
struct rows_and_contracted_on_cols {  // a free dim and the contracted dim split
  using rules = mp::layout<mp::split<i, rows>, mp::split<k, cols>>;
  template <class M>
  static einsum_test::expect want(const M& m) {
    return allreduce_over(over_cols, K / m.template size<cols>());
  }
};
struct contracted_on_rows_and_cols_free {  // the other free dim, the other mesh dims
  using rules = mp::layout<mp::split<k, rows>, mp::split<j, cols>>;
  template <class M>
  static einsum_test::expect want(const M& m) {
    return allreduce_over(over_rows, K / m.template size<rows>());
  }
};
struct free_dims_split {  // no summed dim split: no allreduce at all
  using rules = mp::layout<mp::split<i, rows>, mp::split<j, cols>>;
  template <class M>
  static einsum_test::expect want(const M&) {
    return no_allreduce(K);
  }
};

// The product of a (stored [i, k] or [k, i]) and b ([k, j] or [j, k]) into [i, j] and
// [j, i]: all eight storage orders (every == true), or two that between them take both
// operands transposed and untransposed and both output orders.
//
// One mesh type for every case (the layouts are in the tensor types): each mesh type costs
// compile time in every function it reaches.
using mesh_t = mp::mesh<mp::axes<rows, cols>>;
template <class Case, class T, class... Dims>
using tensor_t = einsum_test::laid_out_t<mesh_t, typename Case::rules, T, Dims...>;

template <class T, class Case, bool every = true>
void matmul_orders() {
  using einsum_test::check;
  using einsum_test::make;
  using ij = mp::shape<i, j>;
  using ji = mp::shape<j, i>;
  for (const auto& shape : einsum_test::mesh_shapes()) {
    const mesh_t m(shape);
    CAPTURE(m.describe());
    const auto a_ik = make<tensor_t<Case, T, i, k>>(m, sizes, 1);
    const auto a_ki = make<tensor_t<Case, T, k, i>>(m, sizes, 2);
    const auto b_kj = make<tensor_t<Case, T, k, j>>(m, sizes, 3);
    const auto b_jk = make<tensor_t<Case, T, j, k>>(m, sizes, 4);
    const auto want = Case::want(m);
    check<ij>(a_ik, b_kj, sizes, want);
    check<ji>(a_ki, b_jk, sizes, want);
    if constexpr (every) {
      check<ij>(a_ik, b_jk, sizes, want);
      check<ij>(a_ki, b_kj, sizes, want);
      check<ij>(a_ki, b_jk, sizes, want);
      check<ji>(a_ik, b_kj, sizes, want);
      check<ji>(a_ik, b_jk, sizes, want);
      check<ji>(a_ki, b_kj, sizes, want);
    }
  }
}

}  // namespace einsum_matmul
