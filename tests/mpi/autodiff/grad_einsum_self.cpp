// Gradients of einsum (grad_einsum_check.hpp: central differences, every mesh shape) with the
// same traced tensor as both operands (its gradient accumulates from both), and of
// einsum<Out>(a) of one operand (transpose, sum out).
#include "grad_einsum_check.hpp"

using namespace grad_einsum;

TEST_CASE("einsum gradients: one traced tensor as both operands") {
  for_each_mesh([](const mesh_t& m) {
    const operands o(m);
    // d/dx sum_io x^2 = 2 x g: each operand's half arrives separately and adds up
    check("einsum<[batch]>(x, x)", o.x,
          [](const auto& t) { return weighted_sum(mp::einsum<mp::shape<batch>>(t, t)); });
    check("einsum<[io, batch]>(x, x): no contraction, transposed", o.x,
          [](const auto& t) { return weighted_sum(mp::einsum<mp::shape<io, batch>>(t, t)); });
    check("einsum<[]>(p, p): everything contracted", o.p,
          [](const auto& t) { return weighted_sum(mp::einsum<mp::shape<>>(t, t)); });
  });
}

TEST_CASE("einsum gradients: one operand") {
  for_each_mesh([](const mesh_t& m) {
    const operands o(m);
    check("einsum<[io]>(x): batch summed out", o.x,
          [](const auto& t) { return weighted_sum(mp::einsum<mp::shape<io>>(t)); });
    check("einsum<[extra, batch]>(p): io summed out, transposed", o.p,
          [](const auto& t) { return weighted_sum(mp::einsum<mp::shape<extra, batch>>(t)); });
    check("einsum<[hidden, extra, batch]>(q): transposed only", o.q, [](const auto& t) {
      return weighted_sum(mp::einsum<mp::shape<hidden, extra, batch>>(t));
    });
  });
}
