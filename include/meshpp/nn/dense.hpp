// meshpp/nn/dense.hpp — a dense (fully connected) layer over named dims: y = act(x w + b).
//
//   mp::dense<float, mp::shape<io>, mp::shape<hidden>, mesh_t, mp::activation::relu>
//       layer(mesh, sizes, /*seed*/ 1);
//   auto h = layer(x);           // x [batch, io], traced or plain -> traced [batch, hidden]
//   mp::add_variables(optimizer, layer);   // optimizer.add(w), optimizer.add(b)
//
// The weight w[In..., Out...] is Glorot-uniform, U(-l, l) with l = sqrt(6 / (fan_in + fan_out))
// (fan_in, fan_out: the products of In's and Out's sizes), generated from the global index: the
// same bit for bit under every layout and rank count. The bias b[Out...] starts at zero.
//
// Forward, for x[batch/rows, io] and w[io, hidden/cols] (the two-layer network's layout):
//   z = einsum(x, w)   [batch/rows, io] x [io, hidden/cols] |-> [batch/rows, hidden/cols]
//                      allreduce where io is split (here: none)
//   y = act(z + b)     one fused pass, recorded as ONE node; no communication
// Backward, from the output's gradient g:
//   dz = g * act'(z + b)   one pass (none for the identity); no communication
//   db = reduce_sum over batch of dz: allreduce over rows (the data-parallel gradient sum)
//   dx, dw                 the einsum's rules (autodiff/einsum.hpp): allreduce over cols for
//                          dx (hidden is contracted), over rows for dw (batch is contracted)
// so the layer communicates exactly what the einsum and the bias's broadcast imply.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>

#include "meshpp/autodiff/einsum.hpp"
#include "meshpp/autodiff/elementwise.hpp"
#include "meshpp/autodiff/traced.hpp"
#include "meshpp/core/blocks.hpp"
#include "meshpp/core/create.hpp"
#include "meshpp/core/shape.hpp"
#include "meshpp/core/tensor.hpp"
#include "meshpp/expr/evaluate.hpp"
#include "meshpp/expr/functions.hpp"
#include "meshpp/nn/variables.hpp"

namespace meshpp {

/// Activations for dense layers (and bias_activation): small functor types, usable as template
/// arguments. Each gives its value, `y = f(z)`, and the gradient through it,
/// `gradient(g, z, y) = g * f'(z)`; those whose gradient needs only the output y say so
/// (`reads_input = false`), so the backward pass need not recompute z.
namespace activation {

/// @brief f(z) = z.
struct identity {
  static constexpr bool reads_input = false;
  template <class A>
  A operator()(A z) const {
    return z;
  }
  template <class A>
  A gradient(A g, A, A) const {
    return g;
  }
};

/// @brief f(z) = max(z, 0); f' = 1 where the output is positive (g passes unscaled: no 0 * inf).
struct relu {
  static constexpr bool reads_input = false;
  template <class A>
  A operator()(A z) const {
    return fn::relu{}(z);
  }
  template <class A>
  A gradient(A g, A, A y) const {
    return y > A(0) ? g : A(0);
  }
};

/// @brief f(z) = z Phi(z) (exact GELU); f' = Phi(z) + z phi(z), from the input.
struct gelu {
  static constexpr bool reads_input = true;
  template <class A>
  A operator()(A z) const {
    return fn::gelu{}(z);
  }
  template <class A>
  A gradient(A g, A z, A) const {
    return g * detail::gelu_derivative{}(z);
  }
};

/// @brief f(z) = tanh(z); f' = 1 - y^2.
struct tanh {
  static constexpr bool reads_input = false;
  template <class A>
  A operator()(A z) const {
    return fn::tanh{}(z);
  }
  template <class A>
  A gradient(A g, A, A y) const {
    return g * (A(1) - y * y);
  }
};

/// @brief f(z) = 1 / (1 + exp(-z)); f' = y (1 - y).
struct sigmoid {
  static constexpr bool reads_input = false;
  template <class A>
  A operator()(A z) const {
    return fn::sigmoid{}(z);
  }
  template <class A>
  A gradient(A g, A, A y) const {
    return g * y * (A(1) - y);
  }
};

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
// g * act'(z) from the output y alone
template <class Act>
struct activation_gradient_from_output {
  template <class A>
  A operator()(A g, A y) const {
    return Act{}.gradient(g, y, y);
  }
};
// g * act'(z + b), recomputing z + b
template <class Act>
struct activation_gradient_from_input {
  template <class A>
  A operator()(A g, A y, A z, A b) const {
    return Act{}.gradient(g, A(z + b), y);
  }
};
template <class Act>
struct activation_gradient_from_unbiased_input {
  template <class A>
  A operator()(A g, A y, A z) const {
    return Act{}.gradient(g, z, y);
  }
};

}  // namespace detail

// bias_activation<Act>(z, b): Act(z + b) as ONE recorded node (z traced, b a variable, traced
// tensor or plain tensor over a subset of z's dims). Forward: one fused pass; backward: one pass
// dz = g * Act'(z + b), sent to z as is and to b summed over the dims b lacks (partial sums
// over the mesh dims they are split over, summed once, deferred). No other communication.
template <class Act, class Z, class B>
requires is_traced_v<Z> && detail::traced_or_tensor<B>
auto bias_activation(const Z& z, const B& b) {
  using ZT = typename Z::tensor_type;
  auto hz = z.node();
  auto hb = detail::node_of(b);
  using BT = detail::node_tensor_t<typename decltype(hb)::element_type>;
  static_assert(contains_all_v<typename ZT::shape_type, typename BT::shape_type>,
                "meshpp::bias_activation<Act>(z, b): b has a dim that z lacks");
  ZT y(hz->value.mesh(), hz->value.sizes(), ZT::uninitialized);
  assign_expression(y, make_function(detail::add_then_activate<Act>{}, hz->value, hb->value));
  return detail::record(
      std::move(y),
      [hz, hb](const ZT& out, const ZT& g) {
        if (!hz->wanted && !hb->wanted) return;
        auto send_both = [&](auto&& dz) {
          if (hb->wanted) hb->accumulate(dz);  // summed over the dims b was broadcast over
          if (hz->wanted) hz->accumulate(std::forward<decltype(dz)>(dz));
        };
        if constexpr (std::is_same_v<Act, activation::identity>) {
          send_both(g);
        } else {
          ZT dz(out.mesh(), out.sizes(), ZT::uninitialized);
          if constexpr (Act::reads_input) {
            assign_expression(dz, make_function(detail::activation_gradient_from_input<Act>{}, g,
                                                out, hz->value, hb->value));
          } else {
            assign_expression(
                dz, make_function(detail::activation_gradient_from_output<Act>{}, g, out));
          }
          send_both(std::move(dz));
        }
      },
      hz, hb);
}

// activate<Act>(z): Act(z) as one recorded node (the identity returns z itself)
template <class Act, class Z>
requires is_traced_v<Z>
auto activate(const Z& z) {
  using ZT = typename Z::tensor_type;
  if constexpr (std::is_same_v<Act, activation::identity>) {
    return traced<ZT>(z.node());
  } else {
    auto hz = z.node();
    ZT y(hz->value.mesh(), hz->value.sizes(), ZT::uninitialized);
    assign_expression(y, make_function(Act{}, hz->value));
    return detail::record(
        std::move(y),
        [hz](const ZT& out, const ZT& g) {
          if (!hz->wanted) return;
          ZT dz(out.mesh(), out.sizes(), ZT::uninitialized);
          if constexpr (Act::reads_input) {
            assign_expression(
                dz, make_function(detail::activation_gradient_from_unbiased_input<Act>{}, g, out,
                                  hz->value));
          } else {
            assign_expression(
                dz, make_function(detail::activation_gradient_from_output<Act>{}, g, out));
          }
          hz->accumulate(std::move(dz));
        },
        hz);
  }
}

/// @brief A dense layer: y[Batch..., Out...] = Activation(sum over In of x[Batch..., In...]
/// w[In..., Out...] + b[Out...]), with w and b trainable variables.
/// @tparam T          element type (float, double)
/// @tparam In         shape<...>: the dims contracted away (x must have all of them)
/// @tparam Out        shape<...>: the dims the layer produces (x must have none of them)
/// @tparam Mesh       the mesh; w and b are laid out by its rules
/// @tparam Activation a functor type of meshpp::activation (identity, relu, gelu, tanh,
///                    sigmoid) or one like them
/// @tparam UseBias    false: no bias (y = Activation(x w)), and variables() holds w alone
template <class T, class In, class Out, class Mesh, class Activation = activation::identity,
          bool UseBias = true>
class dense {
  static_assert(is_shape_v<In> && is_shape_v<Out>,
                "meshpp::dense<T, In, Out, Mesh>: In and Out must be shape<...>s");
  static_assert(shape_intersection_t<In, Out>::rank == 0,
                "meshpp::dense<T, In, Out, Mesh>: In and Out must not share a dim");

 public:
  using value_type = T;
  using weight_type = tensor_of<T, shape_concat_t<In, Out>, Mesh>;
  using bias_type = tensor_of<T, Out, Mesh>;
  using activation_type = Activation;

  // dense(mesh, sizes, seed, name = "dense"): w Glorot-uniform from seed, b zeros. sizes must
  // give every dim of In and Out.
  template <class... E>
  dense(const Mesh& m, const extents<E...>& sizes, std::uint64_t seed, std::string name = "dense")
      : w_(random_uniform<weight_type>(m, sizes, seed, -glorot_limit(sizes), glorot_limit(sizes)),
           name + "/w"),
        b_(make_bias(m, sizes, name)) {}

  // layer(x): x[Batch..., In...] (traced or plain) -> traced [Batch..., Out...]
  template <class X>
  auto operator()(const X& x) const {
    using XS = typename std::remove_cvref_t<X>::shape_type;
    static_assert(contains_all_v<XS, In>,
                  "meshpp::dense<T, In, Out, Mesh>(x): x lacks a dim of In");
    static_assert(shape_intersection_t<XS, Out>::rank == 0,
                  "meshpp::dense<T, In, Out, Mesh>(x): x already has a dim of Out");
    using result_shape = shape_concat_t<shape_difference_t<XS, In>, Out>;
    if constexpr (contains_all_v<XS, In> && shape_intersection_t<XS, Out>::rank == 0) {
      auto z = einsum<result_shape>(x, w_);
      if constexpr (UseBias)
        return bias_activation<Activation>(z, b_);
      else
        return activate<Activation>(z);
    }
  }

  // weight(), bias(): the variables (handles: copies share the value and the gradient)
  const variable<weight_type>& weight() const { return w_; }
  variable<weight_type>& weight() { return w_; }
  const variable<bias_type>& bias() const requires UseBias { return b_; }
  variable<bias_type>& bias() requires UseBias { return b_; }

  // variables(): (w, b), or (w) without a bias: handles sharing the layer's values and gradients
  auto variables() const {
    if constexpr (UseBias)
      return std::tuple<variable<weight_type>, variable<bias_type>>(w_, b_);
    else
      return std::tuple<variable<weight_type>>(w_);
  }

 private:
  struct no_bias {};

  template <class... E>
  static T glorot_limit(const extents<E...>& sizes) {
    const auto fan_in = static_cast<double>(detail::element_count(sizes.template sizes_of<In>()));
    const auto fan_out = static_cast<double>(detail::element_count(sizes.template sizes_of<Out>()));
    return static_cast<T>(std::sqrt(6.0 / (fan_in + fan_out)));
  }

  template <class... E>
  static auto make_bias(const Mesh& m, const extents<E...>& sizes, const std::string& name) {
    if constexpr (UseBias)
      return variable<bias_type>(zeros<bias_type>(m, sizes), name + "/b");
    else
      return no_bias{};
  }

  variable<weight_type> w_;
  [[no_unique_address]] std::conditional_t<UseBias, variable<bias_type>, no_bias> b_;
};

}  // namespace meshpp
