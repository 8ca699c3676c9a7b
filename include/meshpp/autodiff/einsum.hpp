// meshpp/autodiff/einsum.hpp — einsum of traced tensors, and its gradient.
//
//   auto h = mp::einsum<mp::shape<batch, hidden>>(x, w);   // x traced or plain, w a variable
//
// The gradient of an einsum is an einsum of the output's gradient with the other operand:
//   y[batch, hidden] = x[batch, io] w[io, hidden]
//   dx = einsum<[batch, io]>(dy, w)     contracts hidden: allreduce where hidden is split
//   dw = einsum<[io, hidden]>(dy, x)    contracts batch: allreduce where batch is split (the
//                                       data-parallel gradient sum)
// so each gradient communicates what its own einsum implies and nothing more (for the
// paper's two layers: exactly Table 1's values). The allreduce is deferred: the operand keeps
// partial sums and sums them once with its other contributions, or in backward()'s bucket
// for a variable (autodiff/traced.hpp). A dim that only one operand has and the output lacks
// was summed out of that operand alone; its gradient is broadcast back over it. A plain operand
// gets no gradient (nor its einsum); one traced tensor used as both operands, einsum(x, x),
// receives both gradients, which add up.
#pragma once

#include <type_traits>

#include "meshpp/autodiff/elementwise.hpp"
#include "meshpp/autodiff/record.hpp"
#include "meshpp/autodiff/traced.hpp"
#include "meshpp/ops/einsum.hpp"
#include "meshpp/ops/relayout.hpp"

namespace meshpp {

namespace detail {
// send_einsum_grad(self, g, other): d/d self of einsum(self, other), given the output's
// gradient g (self: a recorded_input)
template <class Self, class G, class Other>
void send_einsum_grad(const Self& self, const G& g, const Other& other) {
  if (!self.wants_grad()) return;
  using S = typename Self::tensor_type::shape_type;
  using reach =
      shape_intersection_t<S, shape_union_t<typename G::shape_type, typename Other::shape_type>>;
  if constexpr (same_dims_v<reach, S>) {
    // partial sums where a contracted dim is split: self adds them up with its other
    // contributions and sums across ranks once (see "Deferred sums" in autodiff/traced.hpp)
    auto [partial, mask] = einsum_partial<S>(g, other);
    self.add_partial_grad(std::move(partial), mask);
  } else {
    const auto partial = einsum<reach>(g, other);
    self.add_grad(broadcast_like(partial, self.value()));
  }
}
}  // namespace detail

namespace detail {
// traced_einsum<Out, A, B>: einsum<Out>(a, b) is the traced one (a shape, tensors or
// expressions, at least one traced)
template <class Out, class A, class B>
concept traced_einsum =
    is_shape_v<Out> && traced_pair<A, B> && !std::is_arithmetic_v<A> && !std::is_arithmetic_v<B>;
}  // namespace detail

// einsum<Out>(a, b) with a traced operand (the other may be a plain tensor or expression)
template <class Out, class A, class B>
auto einsum(const A& a, const B& b) requires detail::traced_einsum<Out, A, B> {
  return record([](const auto& x, const auto& y) { return einsum<Out>(x, y); },
                [](const auto&, const auto& g, const auto& x, const auto& y) {
                  detail::send_einsum_grad(x, g, y.value());
                  detail::send_einsum_grad(y, g, x.value());
                },
                a, b);
}

// einsum<Out, OutRules>(a, b) with a traced operand: the result laid out by OutRules, which
// reduce_scatters the sums where an output dim is requested split over a mesh dim that a
// summed dim is split over (ops/einsum.hpp). Backward first brings the gradient to the layout
// einsum<Out>(a, b) would have given (that reduce_scatter's adjoint: an allgather over the same
// mesh dim; a free slice where OutRules left a dim whole), then sends it on as einsum<Out>'s
// backward does. A Megatron-style layer [b, l, d] x [d, f/all] -> ... -> [b/all, l, d] thus
// reduce_scatters forward and allgathers backward: the allreduce's bytes, in two halves.
template <class Out, class OutRules, class A, class B>
requires is_layout_v<OutRules> && detail::traced_einsum<Out, A, B>
auto einsum(const A& a, const B& b) {
  return record([](const auto& x, const auto& y) { return einsum<Out, OutRules>(x, y); },
                [](const auto&, const auto& g, const auto& x, const auto& y) {
                  using X = std::remove_cvref_t<decltype(x.value())>;
                  using Y = std::remove_cvref_t<decltype(y.value())>;
                  using natural =
                      typename detail::einsum_plan<Out, typename X::shape_type,
                                                   typename Y::shape_type, typename X::layout_type,
                                                   typename Y::layout_type>::out_layout;
                  const auto gn = relayout<natural>(g);
                  detail::send_einsum_grad(x, gn, y.value());
                  detail::send_einsum_grad(y, gn, x.value());
                },
                a, b);
}

// einsum<Out>(a) of a traced tensor: a transposed to Out, its other dims summed out
template <class Out, class A>
requires is_shape_v<Out>
auto einsum(const traced<A>& a) {
  return record([](const A& x) { return einsum<Out>(x); }, detail::broadcast_back, a);
}

}  // namespace meshpp
