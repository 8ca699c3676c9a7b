// Gradients of more forms of einsum (grad_einsum_check.hpp: central differences, every mesh
// shape): an outer product, and a plain (non-traced) other operand (a tensor or an expression,
// on either side). grad_einsum_self.cpp has the rest.
#include "grad_einsum_check.hpp"

using namespace grad_einsum;

TEST_CASE("einsum gradients: outer product") {
  for_each_mesh([](const mesh_t& m) {
    const operands o(m);
    check("[io] x [hidden] -> [io, hidden], d/du", o.u, [&](const auto& t) {
      return weighted_sum(mp::einsum<mp::shape<io, hidden>>(t, mp::trace(o.v)));
    });
    check("[io] x [hidden] -> [hidden, io], d/dv", o.v, [&](const auto& t) {
      return weighted_sum(mp::einsum<mp::shape<hidden, io>>(mp::trace(o.u), t));
    });
  });
}

TEST_CASE("einsum gradients: the other operand plain") {
  for_each_mesh([](const mesh_t& m) {
    const operands o(m);
    using bh = mp::shape<batch, hidden>;
    check("traced x, plain w", o.x,
          [&](const auto& t) { return weighted_sum(mp::einsum<bh>(t, o.w)); });
    check("plain x, traced w", o.w,
          [&](const auto& t) { return weighted_sum(mp::einsum<bh>(o.x, t)); });
    check("traced x, an expression of plain tensors", o.x,
          [&](const auto& t) { return weighted_sum(mp::einsum<bh>(t, o.w * o.v)); });
  });
}
