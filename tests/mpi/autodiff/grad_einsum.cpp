// Gradients of two-operand einsums that contract (grad_einsum_check.hpp: central differences,
// every mesh shape): a matmul contracting a split dim, its transposed output, a batch dim, and
// a dim that one operand alone has and the output lacks (summed out of that operand: its
// gradient is broadcast back over it). Each operand's gradient is checked with the other
// operand traced too.
#include "grad_einsum_check.hpp"

using namespace grad_einsum;

TEST_CASE("einsum gradients: matmul contracting a split dim, and its transposed output") {
  for_each_mesh([](const mesh_t& m) {
    const operands o(m);
    using bh = mp::shape<batch, hidden>;
    using hb = mp::shape<hidden, batch>;
    // y[batch, hidden] = x[batch, io] w[io, hidden]: io contracted (split over cols)
    check("[batch, io] x [io, hidden] -> [batch, hidden], d/dx", o.x,
          [&](const auto& t) { return weighted_sum(mp::einsum<bh>(t, mp::trace(o.w))); });
    check("[batch, io] x [io, hidden] -> [batch, hidden], d/dw", o.w,
          [&](const auto& t) { return weighted_sum(mp::einsum<bh>(mp::trace(o.x), t)); });
    check("[batch, io] x [io, hidden] -> [hidden, batch], d/dx", o.x,
          [&](const auto& t) { return weighted_sum(mp::einsum<hb>(t, mp::trace(o.w))); });
    check("[io, hidden] x [batch, io] -> [hidden, batch], d/dw", o.w,
          [&](const auto& t) { return weighted_sum(mp::einsum<hb>(t, mp::trace(o.x))); });
  });
}

TEST_CASE("einsum<Out, OutRules> gradients: the sums reduce_scattered over a split dim") {
  for_each_mesh([](const mesh_t& m) {
    const operands o(m);
    using bh = mp::shape<batch, hidden>;
    // io (contracted) is split over cols; hidden (3: uneven over 2 and 4 cols) takes cols
    using scattered = mp::layout<mp::split<batch, rows>, mp::split<hidden, cols>>;
    check("[batch, io] x [io, hidden] -> [batch, hidden/cols], d/dx", o.x, [&](const auto& t) {
      return weighted_sum(mp::einsum<bh, scattered>(t, mp::trace(o.w)));
    });
    check("[batch, io] x [io, hidden] -> [batch, hidden/cols], d/dw", o.w, [&](const auto& t) {
      return weighted_sum(mp::einsum<bh, scattered>(mp::trace(o.x), t));
    });
  });
}

TEST_CASE("einsum gradients: a batch dim in both operands and the output") {
  for_each_mesh([](const mesh_t& m) {
    const operands o(m);
    // y[batch, io, hidden] = sum over extra of p[batch, io, extra] q[batch, extra, hidden]
    using bih = mp::shape<batch, io, hidden>;
    check("[batch, io, extra] x [batch, extra, hidden] -> [batch, io, hidden], d/dp", o.p,
          [&](const auto& t) { return weighted_sum(mp::einsum<bih>(t, mp::trace(o.q))); });
    check("[batch, io, extra] x [batch, extra, hidden] -> [batch, io, hidden], d/dq", o.q,
          [&](const auto& t) { return weighted_sum(mp::einsum<bih>(mp::trace(o.p), t)); });
  });
}

TEST_CASE("einsum gradients: a dim of one operand only, summed out of it") {
  for_each_mesh([](const mesh_t& m) {
    const operands o(m);
    // y[batch, hidden] = sum over io, extra of p[batch, io, extra] w[io, hidden]: extra (split
    // over planes) is p's alone
    using bh = mp::shape<batch, hidden>;
    check("[batch, io, extra] x [io, hidden] -> [batch, hidden], d/dp", o.p,
          [&](const auto& t) { return weighted_sum(mp::einsum<bh>(t, mp::trace(o.w))); });
    check("[batch, io, extra] x [io, hidden] -> [batch, hidden], d/dw", o.w,
          [&](const auto& t) { return weighted_sum(mp::einsum<bh>(mp::trace(o.p), t)); });
    // y[io] = sum over batch, extra, hidden of p[batch, io, extra] v[hidden]: each operand has
    // dims of its own that are summed out, and nothing is contracted between them
    check("[batch, io, extra] x [hidden] -> [io], d/dp", o.p, [&](const auto& t) {
      return weighted_sum(mp::einsum<mp::shape<io>>(t, mp::trace(o.v)));
    });
    check("[batch, io, extra] x [hidden] -> [io], d/dv", o.v, [&](const auto& t) {
      return weighted_sum(mp::einsum<mp::shape<io>>(mp::trace(o.p), t));
    });
  });
}
