// meshpp/autodiff/record.hpp — defining a differentiable operation: its forward on tensors and
// its backward step (the vector-Jacobian product), recorded on the gradient graph.
//
//   // cube(x) = x^3, component-wise; d/dx = 3 x^2
//   template <class X>
//   auto cube(const X& x) {
//     return mp::record(
//         [](const auto& v) { return v * v * v; },            // forward: the inputs' values
//         [](const auto& y, const auto& g, const auto& in) {  // backward: y, g = dL/dy, inputs
//           if (in.wants_grad()) in.add_grad(g * 3.0 * in.value() * in.value());
//         },
//         x);
//   }
//
// Every differentiable operation of meshpp is written this way (autodiff/*.hpp, nn/*.hpp).
// Inputs may be traced tensors and variables (their gradients are wanted), plain tensors and
// expressions (constants of the graph: evaluated once) and arithmetic scalars (passed as they
// are, to forward and backward alike). The result is a traced tensor; its backward step is kept
// only when an input requires gradients and no no_grad scope is open (autodiff/traced.hpp), so
// record costs nothing beyond the forward where no gradient can flow.
//
// The backward step receives each tensor input as a recorded_input: its value, whether this
// pass wants its gradient, and add_grad(g), which conforms g to the input (dims it was
// broadcast over summed out, the sum over ranks deferred; relayouted and transposed by name:
// see "Deferred sums" and conform() in autodiff/traced.hpp). So a backward step written with
// named operations communicates what their layouts imply, like the forward, and no more.
#pragma once

#include <memory>
#include <type_traits>
#include <utility>

#include "meshpp/autodiff/traced.hpp"
#include "meshpp/expr/evaluate.hpp"
#include "meshpp/expr/expression.hpp"

namespace meshpp {

/// @brief An input of a recorded operation as its backward step sees it: its value, and its
/// gradient to add to. A handle on the input's graph node (copies share it).
/// @tparam Tensor the input's meshpp::tensor type
template <class Tensor>
class recorded_input {
 public:
  using tensor_type = Tensor;

  explicit recorded_input(std::shared_ptr<detail::node<Tensor>> n) : node_(std::move(n)) {}

  // value(): the input's value, as the forward step read it
  const Tensor& value() const { return node_->value; }
  // wants_grad(): this backward pass needs the input's gradient (compute one only then)
  bool wants_grad() const { return node_->wanted; }
  // add_grad(g): adds g, a tensor or expression over the input's dims and maybe more, in any
  // layout and dim order, to the input's gradient if this pass wants it. Dims the input lacks
  // (it was broadcast over them) are summed out, their sum over ranks deferred.
  template <class G>
  void add_grad(G&& g) const {
    if (node_->wanted) node_->accumulate(std::forward<G>(g));
  }
  // add_partial_grad(p, mesh_mask): adds p, whose values are partial sums over the mesh dims in
  // mesh_mask (bit i: mesh dim i) that still have to be summed across ranks; the sum is
  // deferred and shared with the input's other contributions (what an einsum contracting a
  // split dim sends, ops/einsum.hpp's einsum_partial)
  template <class P>
  void add_partial_grad(P&& p, unsigned mesh_mask) const {
    if (node_->wanted) node_->accumulate_partial(std::forward<P>(p), mesh_mask);
  }

  // node(): the graph node (autodiff/traced.hpp)
  const std::shared_ptr<detail::node<Tensor>>& node() const { return node_; }

 private:
  std::shared_ptr<detail::node<Tensor>> node_;
};

namespace detail {

// record_operand: what record() accepts as an input
template <class X>
concept record_operand =
    is_traced_operand_v<X> || is_expression_v<X> || std::is_arithmetic_v<std::remove_cvref_t<X>>;

// input_handle(x): a recorded_input for a traced tensor (its node), a plain tensor or an
// expression (a constant node holding its value); a scalar stays a scalar
template <class X>
auto input_handle(const X& x) {
  if constexpr (std::is_arithmetic_v<X>) {
    return x;
  } else if constexpr (is_traced_operand_v<X>) {
    return recorded_input<typename X::tensor_type>(x.node());
  } else if constexpr (is_tensor_v<X>) {
    return recorded_input<X>(std::make_shared<node<X>>(x));
  } else {
    using T = decltype(eval(x));
    return recorded_input<T>(std::make_shared<node<T>>(eval(x)));
  }
}

// handle_value(h): the value an input handle stands for (a scalar: itself)
template <class H>
decltype(auto) handle_value(const H& h) {
  if constexpr (std::is_arithmetic_v<H>)
    return h;
  else
    return h.value();
}

// handle_node(h): the graph node behind an input handle (a scalar: none)
template <class H>
std::shared_ptr<node_base> handle_node(const H& h) {
  if constexpr (std::is_arithmetic_v<H>)
    return nullptr;
  else
    return h.node();
}

// record_node(value, backward, handles...): the traced result; the node keeps backward(y, g,
// handles...) and the inputs gradients can flow into, only when one of them requires gradients
// and no no_grad scope is open (constants are held by the backward step alone)
template <class Tensor, class Backward, class... H>
traced<Tensor> record_node(Tensor value, Backward&& backward, const H&... handles) {
  auto n = std::make_shared<node<Tensor>>(std::move(value));
  const std::shared_ptr<node_base> inputs[] = {handle_node(handles)..., nullptr};
  for (const auto& in : inputs) n->requires_grad = n->requires_grad || (in && in->requires_grad);
  n->requires_grad = n->requires_grad && grad_enabled();
  if (n->requires_grad) {
    for (const auto& in : inputs) {
      if (in && in->requires_grad) n->inputs.push_back(in);
    }
    n->backward = [backward = std::forward<Backward>(backward), handles...](
                      const Tensor& y, const Tensor& g) { backward(y, g, handles...); };
  }
  return traced<Tensor>(std::move(n));
}

// broadcast_back(y, g, x): the backward step of a reduction or a transpose of x: g repeated
// over the dims of x that y lacks (no communication)
struct broadcast_back_step {
  template <class Y, class X>
  void operator()(const Y&, const Y& g, const X& x) const {
    x.add_grad(broadcast_like(g, x.value()));
  }
};
inline constexpr broadcast_back_step broadcast_back{};

}  // namespace detail

// record(forward, backward, inputs...): y = forward(the inputs' values...), a tensor or an
// expression (evaluated), as a traced tensor whose backward step is backward(y, g, inputs...):
// y and its gradient g (both y's tensor type), and each tensor input as a recorded_input
// (a scalar as itself). backward adds each wanted input's gradient with add_grad.
template <class Forward, class Backward, class... X>
auto record(Forward&& forward, Backward&& backward,
            const X&... inputs) requires(!is_tensor_v<std::remove_cvref_t<Forward>> &&
                                         (detail::record_operand<X> && ...)) {
  return [&](const auto&... handles) {
    using R = std::remove_cvref_t<decltype(forward(detail::handle_value(handles)...))>;
    if constexpr (is_tensor_v<R>) {
      R y = forward(detail::handle_value(handles)...);
      return detail::record_node(std::move(y), std::forward<Backward>(backward), handles...);
    } else {
      return detail::record_node(eval(forward(detail::handle_value(handles)...)),
                                 std::forward<Backward>(backward), handles...);
    }
  }(detail::input_handle(inputs)...);
}

// record(y, backward, inputs...): the same for a y already computed from the inputs' values
// (so that the forward can keep what the backward step needs beside it: statistics, indices).
// A plain expression input is evaluated again here: give it as a tensor, or use the form above.
template <class Tensor, class Backward, class... X>
traced<Tensor> record(Tensor y, Backward&& backward,
                      const X&... inputs) requires(is_tensor_v<Tensor> &&
                                                   (detail::record_operand<X> && ...)) {
  return detail::record_node(std::move(y), std::forward<Backward>(backward),
                             detail::input_handle(inputs)...);
}

}  // namespace meshpp
