// meshpp/nn/layer_norm.hpp — layer normalisation over a named dim, as one recorded node.
//
//   auto y = mp::layer_norm<d_model>(x, gamma, beta);   // x [batch, seq, d_model], traced
//   mp::layer_norm_layer<float, d_model, mesh_t> norm(mesh, sizes);   // gamma 1, beta 0
//   auto z = norm(x);
//
//   y = (x - mean) * rsqrt(var + epsilon) * gamma + beta,   mean, var over Dim (biased var)
//
// Forward, for x[batch/rows, d_model/cols] and gamma, beta [d_model/cols]:
//   mean = reduce_mean<d_model>(x)              [batch/rows]   allreduce over cols
//   var  = reduce_mean<d_model>((x - mean)^2)   [batch/rows]   allreduce over cols
//   y    = one fused pass, no communication
// (two passes for the variance, not E[x^2] - mean^2, which cancels catastrophically.)
// Backward, from the output's gradient g, with xhat = (x - mean) * r, r = rsqrt(var + eps):
//   dx     = r * (g gamma - mean_d(g gamma) - xhat * mean_d(g gamma xhat))
//            two reduce_means over d_model [batch/rows]: allreduce over cols each; one pass
//   dgamma = sum over batch of g * xhat      allreduce over rows (conform's reduce_sum)
//   dbeta  = sum over batch of g             allreduce over rows
// When Dim is whole (not split), the reductions over it communicate nothing. Only the mean and
// r ([batch]) are kept for the backward pass; xhat is recomputed from x.
//
// Bad input: epsilon must be finite and > 0 (else meshpp::error on every rank, before any
// communication: at 0, a constant row would give 0 / 0). A NaN or an infinity in x makes its
// whole row along Dim NaN in y (the row's mean and variance are NaN); other rows are exactly
// as without it. A Dim of size 0 throws (reduce_mean's mean of nothing).
#pragma once

#include <cmath>
#include <cstdint>
#include <memory>
#include <sstream>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>

#include "meshpp/autodiff/record.hpp"
#include "meshpp/autodiff/traced.hpp"
#include "meshpp/core/create.hpp"
#include "meshpp/core/error.hpp"
#include "meshpp/core/shape.hpp"
#include "meshpp/core/tensor.hpp"
#include "meshpp/expr/evaluate.hpp"
#include "meshpp/expr/functions.hpp"
#include "meshpp/ops/reduce.hpp"

namespace meshpp {

namespace detail {
// check_layer_norm_epsilon(who, epsilon): throws meshpp::error unless epsilon is finite and > 0
inline void check_layer_norm_epsilon(const std::string& who, double epsilon) {
  if (std::isfinite(epsilon) && epsilon > 0) return;
  std::ostringstream text;
  text << epsilon;
  throw error(who + ": epsilon must be finite and > 0, got " + text.str());
}
}  // namespace detail

// layer_norm<Dim>(x, gamma, beta, epsilon = 1e-5): x normalised over Dim, scaled by gamma and
// shifted by beta (gamma, beta of dims [Dim]); each a traced tensor, variable or plain tensor
template <class Dim, class X, class G, class B>
requires detail::traced_or_tensor<X> && detail::traced_or_tensor<G> && detail::traced_or_tensor<B>
auto layer_norm(const X& x, const G& gamma, const B& beta, double epsilon = 1e-5) {
  using XT = std::remove_cvref_t<decltype(stop_gradient(x))>;
  using GT = std::remove_cvref_t<decltype(stop_gradient(gamma))>;
  using BT = std::remove_cvref_t<decltype(stop_gradient(beta))>;
  using T = typename XT::value_type;
  static_assert(contains_v<typename XT::shape_type, Dim>,
                "meshpp::layer_norm<Dim>(x, gamma, beta): x has no dim Dim");
  static_assert(std::is_same_v<typename GT::shape_type, shape<Dim>> &&
                    std::is_same_v<typename BT::shape_type, shape<Dim>>,
                "meshpp::layer_norm<Dim>(x, gamma, beta): gamma and beta must have the dims [Dim]");
  detail::check_layer_norm_epsilon(
      "meshpp::layer_norm<" + std::string(Dim::name()) + ">(x, gamma, beta, epsilon)", epsilon);
  const XT& xv = stop_gradient(x);
  auto mean = reduce_mean<Dim>(xv);
  auto r = eval(rsqrt(reduce_mean<Dim>((xv - mean) * (xv - mean)) + static_cast<T>(epsilon)));
  XT y(xv.mesh(), xv.sizes(), XT::uninitialized);
  assign_expression(y, (xv - mean) * r * stop_gradient(gamma) + stop_gradient(beta));
  return record(
      std::move(y),
      [mean = std::move(mean), r = std::move(r)](const XT&, const XT& g, const auto& in,
                                                 const auto& scale, const auto& shift) {
        const auto xhat = (in.value() - mean) * r;
        if (scale.wants_grad()) scale.add_grad(g * xhat);  // summed over the dims gamma lacks
        if (shift.wants_grad()) shift.add_grad(g);
        if (in.wants_grad()) {
          const auto dxhat = g * scale.value();
          const auto m1 = reduce_mean<Dim>(dxhat);
          const auto m2 = reduce_mean<Dim>(dxhat * xhat);
          in.add_grad(r * (dxhat - m1 - xhat * m2));
        }
      },
      x, gamma, beta);
}

/// @brief A layer normalisation layer over Dim: trainable gamma[Dim] (ones) and beta[Dim]
/// (zeros); see layer_norm<Dim> for what it computes and communicates.
/// @tparam T    element type
/// @tparam Dim  the dim normalised over
/// @tparam Mesh the mesh; gamma and beta are laid out by its rules
template <class T, class Dim, class Mesh>
class layer_norm_layer {
 public:
  using value_type = T;
  using parameter_type = tensor_of<T, shape<Dim>, Mesh>;

  // layer_norm_layer(mesh, sizes, epsilon = 1e-5, name = "layer_norm")
  template <class... E>
  layer_norm_layer(const Mesh& m, const extents<E...>& sizes, double epsilon = 1e-5,
                   std::string name = "layer_norm")
      : gamma_((detail::check_layer_norm_epsilon("meshpp::layer_norm_layer(mesh, sizes, epsilon)",
                                                 epsilon),
                ones<parameter_type>(m, sizes)),
               name + "/gamma"),
        beta_(zeros<parameter_type>(m, sizes), name + "/beta"),
        epsilon_(epsilon) {}

  // layer(x): layer_norm<Dim>(x, gamma, beta, epsilon)
  template <class X>
  auto operator()(const X& x) const {
    return layer_norm<Dim>(x, gamma_, beta_, epsilon_);
  }

  const variable<parameter_type>& gamma() const { return gamma_; }
  variable<parameter_type>& gamma() { return gamma_; }
  const variable<parameter_type>& beta() const { return beta_; }
  variable<parameter_type>& beta() { return beta_; }
  double epsilon() const { return epsilon_; }

  // variables(): (gamma, beta), handles sharing the layer's values and gradients
  auto variables() const {
    return std::tuple<variable<parameter_type>, variable<parameter_type>>(gamma_, beta_);
  }

 private:
  variable<parameter_type> gamma_;
  variable<parameter_type> beta_;
  double epsilon_;
};

}  // namespace meshpp
