// ops_traced_einsum: ops_einsum with w a variable: each einsum traced, its sum the loss and
// w's gradient taken, so each instantiates the gradient graph's nodes and its backward steps.
#include <meshpp/meshpp.hpp>

namespace mp = meshpp;

namespace compile_programs {
MESHPP_DIM(all);
MESHPP_DIM(out);
// sixteen pairs of dims: each pair makes tensors of types of their own
#define MESHPP_COMPILE_PAIRS(X) \
  X(a1, b1)                     \
  X(a2, b2)                     \
  X(a3, b3)                     \
  X(a4, b4)                     \
  X(a5, b5)                     \
  X(a6, b6)                     \
  X(a7, b7)                     \
  X(a8, b8)                     \
  X(a9, b9)                     \
  X(a10, b10)                   \
  X(a11, b11)                   \
  X(a12, b12)                   \
  X(a13, b13)                   \
  X(a14, b14)                   \
  X(a15, b15)                   \
  X(a16, b16)
#define MESHPP_COMPILE_DECLARE(A, B) \
  MESHPP_DIM(A);                     \
  MESHPP_DIM(B);
MESHPP_COMPILE_PAIRS(MESHPP_COMPILE_DECLARE)

using mesh_t = mp::mesh<mp::axes<all>, mp::layout<mp::split<out, all>>>;

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
  float sum = 0;
#define MESHPP_COMPILE_CALL(A, B) sum += one<A, B>(m);
  MESHPP_COMPILE_PAIRS(MESHPP_COMPILE_CALL)
  return sum;
}

}  // namespace compile_programs
