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
//                      (bias_activation, nn/bias_activation.hpp)
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
#include "meshpp/autodiff/parameters.hpp"
#include "meshpp/autodiff/traced.hpp"
#include "meshpp/core/blocks.hpp"
#include "meshpp/core/create.hpp"
#include "meshpp/core/shape.hpp"
#include "meshpp/core/tensor.hpp"
#include "meshpp/nn/bias_activation.hpp"

namespace meshpp {

/// @brief A dense layer: y[Batch..., Out...] = Activation(sum over In of x[Batch..., In...]
/// w[In..., Out...] + b[Out...]), with w and b trainable variables.
/// @tparam T          element type (float, double)
/// @tparam In         shape<...>: the dims contracted away (x must have all of them)
/// @tparam Out        shape<...>: the dims the layer produces (x must have none of them)
/// @tparam Mesh       the mesh; w and b are laid out by its rules
/// @tparam Activation activation::identity, or an element functor with a gradient: those of
///                    meshpp::activation (relu, gelu, tanh, sigmoid), any of meshpp::fn
///                    (expr/functions.hpp), or one written like them
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
    return apply<void>(x);
  }

  // apply<OutRules>(x): the same, the product laid out by OutRules (void: as the mesh lays it
  // out; einsum<Out, OutRules>: a reduce_scatter where an output dim takes the mesh dim of a
  // split In dim), the bias and activation applied to that layout
  template <class OutRules, class X>
  auto apply(const X& x) const {
    using XS = typename std::remove_cvref_t<X>::shape_type;
    static_assert(contains_all_v<XS, In>,
                  "meshpp::dense<T, In, Out, Mesh>(x): x lacks a dim of In");
    static_assert(shape_intersection_t<XS, Out>::rank == 0,
                  "meshpp::dense<T, In, Out, Mesh>(x): x already has a dim of Out");
    using result_shape = shape_concat_t<shape_difference_t<XS, In>, Out>;
    if constexpr (contains_all_v<XS, In> && shape_intersection_t<XS, Out>::rank == 0) {
      auto z = [&] {
        if constexpr (std::is_void_v<OutRules>)
          return einsum<result_shape>(x, w_);
        else
          return einsum<result_shape, OutRules>(x, w_);
      }();
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
