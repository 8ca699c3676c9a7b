// ops_traced_einsum: ops_einsum with w a variable: each einsum traced, its sum the loss and
// w's gradient taken, so each instantiates the gradient graph's nodes and its backward steps.
#include "dim_pairs.hpp"

namespace compile_programs {

// one<A, B>(m): x [A, B] and w [B, out] made, the product traced, d sum / d w
template <class A, class B>
float one(const mesh_t& m) {
  const auto sizes = mp::extents{A{} = 8, B{} = 4, out{} = 3};
  const auto x = mp::random_normal<float, A, B>(m, sizes, 1);
  mp::variable w(mp::random_normal<float, B, out>(m, sizes, 2), "w");
  const auto loss = mp::reduce_sum(mp::einsum<mp::shape<A, out>>(x, w));
  return std::get<0>(mp::gradients(loss, w)).local()(0, 0);
}

// all_pairs(m): one() for each pair
float all_pairs(const mesh_t& m) {
  return sum_over_pairs([&]<class A, class B>() { return one<A, B>(m); });
}

}  // namespace compile_programs
