// meshpp/nn/bias_activation.hpp — a layer's bias and activation, act(z + b), as one recorded
// node; and the activations layers take.
//
//   auto h = mp::bias_activation<mp::activation::relu>(z, b);   // z traced, b a variable
//   auto a = mp::activate<mp::activation::gelu>(z);             // no bias
//
// An activation is an element functor of expr/functions.hpp (its value and its derivative,
// written once there), or activation::identity. Forward: one fused pass y = act(z + b), no
// communication. Backward, from the output's gradient g: one pass dz = g act'(z + b), from y
// alone when the activation's derivative needs only y (relu, tanh, sigmoid), recomputing z + b
// otherwise (gelu); none for the identity. dz goes to z as is and to b summed over the dims b
// lacks: partial sums over the mesh dims those are split over, summed once, deferred
// (autodiff/traced.hpp). No other communication.
#pragma once

#include <type_traits>
#include <utility>

#include "meshpp/autodiff/elementwise.hpp"
#include "meshpp/autodiff/record.hpp"
#include "meshpp/autodiff/traced.hpp"
#include "meshpp/core/shape.hpp"
#include "meshpp/expr/evaluate.hpp"
#include "meshpp/expr/expression.hpp"
#include "meshpp/expr/functions.hpp"

namespace meshpp {

/// Activations for layers (dense, bias_activation, activate): functor types, usable as template
/// arguments. Each but identity is the element functor of expr/functions.hpp, so its value
/// and derivative are those of mp::relu(x), mp::gelu(x), ... on expressions and traced tensors.
namespace activation {

/// @brief f(z) = z (and no pass at all: the layer's output is z + b, or z itself).
struct identity {
  static constexpr bool gradient_reads_input = false;
  template <class A>
  A operator()(A z) const {
    return z;
  }
  template <class A>
  A gradient(A g, A, A) const {
    return g;
  }
};

using relu = fn::relu;        // max(z, 0)
using gelu = fn::gelu;        // z Phi(z), exact
using tanh = fn::tanh;        // tanh(z)
using sigmoid = fn::sigmoid;  // 1 / (1 + exp(-z))

}  // namespace activation

namespace detail {

// act(z + b), element-wise
template <class Act>
struct add_then_activate {
  template <class A, class B>
  auto operator()(A z, B b) const {
    return Act{}(z + b);
  }
};
// g * act'(z + b), recomputing z + b
template <class Act>
struct gradient_from_biased_input {
  template <class A>
  A operator()(A g, A y, A z, A b) const {
    return Act{}.gradient(g, A(z + b), y);
  }
};

}  // namespace detail

// bias_activation<Act>(z, b): Act(z + b) as ONE recorded node (z traced, b a variable, traced
// tensor or plain tensor over a subset of z's dims); see the top of this file
template <class Act, class Z, class B>
requires is_traced_v<Z> && detail::traced_or_tensor<B>
auto bias_activation(const Z& z, const B& b) {
  using ZT = typename Z::tensor_type;
  using BT = std::remove_cvref_t<decltype(stop_gradient(b))>;
  static_assert(contains_all_v<typename ZT::shape_type, typename BT::shape_type>,
                "meshpp::bias_activation<Act>(z, b): b has a dim that z lacks");
  ZT y(z.mesh(), z.sizes(), ZT::uninitialized);
  assign_expression(y,
                    make_function(detail::add_then_activate<Act>{}, z.value(), stop_gradient(b)));
  return record(
      std::move(y),
      [](const ZT& out, const ZT& g, const auto& hz, const auto& hb) {
        if (!hz.wants_grad() && !hb.wants_grad()) return;
        auto send_both = [&](auto&& dz) {
          hb.add_grad(dz);  // summed over the dims b was broadcast over
          hz.add_grad(std::forward<decltype(dz)>(dz));
        };
        if constexpr (std::is_same_v<Act, activation::identity>) {
          send_both(g);
        } else {
          ZT dz(out.mesh(), out.sizes(), ZT::uninitialized);
          if constexpr (Act::gradient_reads_input) {
            assign_expression(dz, make_function(detail::gradient_from_biased_input<Act>{}, g, out,
                                                hz.value(), hb.value()));
          } else {
            assign_expression(dz, make_function(detail::gradient_from_output<Act>{}, g, out));
          }
          send_both(std::move(dz));
        }
      },
      z, b);
}

// activate<Act>(z): Act(z) as one recorded node, componentwise(Act{}, z) (the identity returns
// z itself)
template <class Act, class Z>
requires is_traced_v<Z>
auto activate(const Z& z) {
  using ZT = typename Z::tensor_type;
  if constexpr (std::is_same_v<Act, activation::identity>)
    return traced<ZT>(z.node());
  else
    return componentwise(Act{}, z);
}

}  // namespace meshpp
