// ops_einsum: sixteen einsums of tensors of distinct dims, each made by random_normal: with
// ops_traced_einsum, what one operation of each kind costs to compile (the difference over 16).
#include "dim_pairs.hpp"

namespace compile_programs {

// one<A, B>(m): x [A, B] and w [B, out] made and multiplied
template <class A, class B>
float one(const mesh_t& m) {
  const auto sizes = mp::extents{A{} = 8, B{} = 4, out{} = 3};
  const auto x = mp::random_normal<float, A, B>(m, sizes, 1);
  const auto w = mp::random_normal<float, B, out>(m, sizes, 2);
  return mp::einsum<mp::shape<A, out>>(x, w).local()(0, 0);
}

// all_pairs(m): one() for each pair
float all_pairs(const mesh_t& m) {
  return sum_over_pairs([&]<class A, class B>() { return one<A, B>(m); });
}

}  // namespace compile_programs
