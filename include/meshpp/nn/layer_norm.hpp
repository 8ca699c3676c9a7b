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
// When Dim is whole (not split), the reductions over it communicate nothing; when it is also
// x's last dim (a Transformer's d_model), the forward step is one pass row by row (mean,
// variance and y while the row is in cache) and dx another, beside dgamma's and dbeta's
// reductions. Only the mean and r ([batch]) are kept for the backward pass; xhat is recomputed
// from x.
//
// Bad input: epsilon must be finite and > 0 (else meshpp::error on every rank, before any
// communication: at 0, a constant row would give 0 / 0). A NaN or an infinity in x makes its
// whole row along Dim NaN in y (the row's mean and variance are NaN); other rows are exactly
// as without it. A Dim of size 0 throws (reduce_mean's mean of nothing).
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
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
#include "meshpp/ops/rows.hpp"

namespace meshpp {

namespace detail {
// check_layer_norm_epsilon(who, epsilon): throws meshpp::error unless epsilon is finite and > 0
inline void check_layer_norm_epsilon(const std::string& who, double epsilon) {
  if (std::isfinite(epsilon) && epsilon > 0) return;
  std::ostringstream text;
  text << epsilon;
  throw error(who + ": epsilon must be finite and > 0, got " + text.str());
}

// rowwise_layer_norm_v<Dim, X, G, B>: layer_norm may run row by row: Dim is x's last dim
// (contiguous rows) and whole in x, gamma and beta (no collective within a row)
template <class Dim, class X, class G, class B>
inline constexpr bool rowwise_layer_norm_v =
    index_of_v<typename X::shape_type, Dim> + 1 == X::shape_type::rank &&
    !is_split_in_v<typename X::layout_type, Dim> && !is_split_in_v<typename G::layout_type, Dim> &&
    !is_split_in_v<typename B::layout_type, Dim>;

// check_layer_norm_parameters(x, gamma, beta): throws meshpp::error, on every rank alike (the
// sizes are global), unless gamma and beta live on x's mesh and have x's size of Dim: the row
// by row path reads them by index, where the expression of the other path checks them
template <class X, class G, class B>
void check_layer_norm_parameters(const X& x, const G& gamma, const B& beta) {
  using Dim = dim_at_t<typename G::shape_type, 0>;
  const std::string who = "meshpp::layer_norm<" + std::string(Dim::name()) + ">(x, gamma, beta)";
  if (!(gamma.mesh() == x.mesh()) || !(beta.mesh() == x.mesh()))
    throw error(who + ": gamma and beta must live on x's mesh");
  const auto n = x.template extent<Dim>();
  for (const auto& [name, size] : {std::pair{"gamma", gamma.template extent<Dim>()},
                                   std::pair{"beta", beta.template extent<Dim>()}}) {
    if (size != n) {
      throw error(who + ": " + name + " has " + std::string(Dim::name()) + " " +
                  std::to_string(size) + ", x has " + std::to_string(n));
    }
  }
}

// layer_norm_operation<Dim, X>(): the name of a row-by-row layer_norm's step in the counters,
// "layer_norm over <Dim> of [x's dims]": a plan prices it as a softmax over Dim (a split Dim
// costs two allreduces of the rows, as the mean and variance, or the backward's two means)
template <class Dim, class X>
operation_descriptor layer_norm_operation() {
  return row_operation(operation_kind::layer_norm, "layer_norm", Dim::name(),
                       dim_names_v<typename X::shape_type>);
}

// layer_norm_rows(x, gamma, beta, y, mean, r, rows, n, epsilon): each row of n of x normalised
// into y while it is in cache, its mean and r = rsqrt(var + epsilon) kept for the backward step
template <class T>
void layer_norm_rows(const T* x, const T* gamma, const T* beta, T* y, T* mean, T* r,
                     std::size_t rows, std::size_t n, T epsilon) {
  for (std::size_t i = 0; i < rows; ++i) {
    const T* xi = x + i * n;
    T* yi = y + i * n;
    const T m = row_mean_of<T>(n, [&](std::size_t j) { return xi[j]; });
    const T var = row_mean_of<T>(n, [&](std::size_t j) { return (xi[j] - m) * (xi[j] - m); });
    const T ri = T(1) / std::sqrt(var + epsilon);
    for (std::size_t j = 0; j < n; ++j) yi[j] = (xi[j] - m) * ri * gamma[j] + beta[j];
    mean[i] = m;
    r[i] = ri;
  }
}

// layer_norm_backward_rows(x, g, gamma, mean, r, dx, rows, n): dx = r (g gamma - mean_n(g gamma)
// - xhat mean_n(g gamma xhat)), xhat = (x - mean) r, row by row in cache
template <class T>
void layer_norm_backward_rows(const T* x, const T* g, const T* gamma, const T* mean, const T* r,
                              T* dx, std::size_t rows, std::size_t n) {
  for (std::size_t i = 0; i < rows; ++i) {
    const T *xi = x + i * n, *gi = g + i * n;
    T* di = dx + i * n;
    const T m = mean[i], ri = r[i];
    const T m1 = row_mean_of<T>(n, [&](std::size_t j) { return gi[j] * gamma[j]; });
    const T m2 =
        row_mean_of<T>(n, [&](std::size_t j) { return gi[j] * gamma[j] * ((xi[j] - m) * ri); });
    for (std::size_t j = 0; j < n; ++j) {
      di[j] = ri * (gi[j] * gamma[j] - m1 - (xi[j] - m) * ri * m2);
    }
  }
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
  constexpr bool by_rows = detail::rowwise_layer_norm_v<Dim, XT, GT, BT>;
  using MT = std::remove_cvref_t<decltype(reduce_mean<Dim>(xv))>;
  // y, and the mean and r = rsqrt(var + epsilon) over Dim kept for the backward step
  auto [y, mean, r] = [&] {
    if constexpr (by_rows) {
      const auto& gv = stop_gradient(gamma);
      const auto& bv = stop_gradient(beta);
      detail::check_layer_norm_parameters(xv, gv, bv);
      const std::size_t n = xv.local().shape()[XT::rank - 1];
      if (n == 0) (void)reduce_mean<Dim>(xv);  // throws, on every rank: the mean of nothing
      const auto scope = xv.mesh().counters().operation(detail::layer_norm_operation<Dim, XT>);
      XT out(xv.mesh(), xv.sizes(), XT::uninitialized);
      MT m(xv.mesh(), xv.sizes(), MT::uninitialized), s(xv.mesh(), xv.sizes(), MT::uninitialized);
      xv.mesh().counters().streamed([&] { return 2 * xv.local().size() * sizeof(T); });
      detail::layer_norm_rows(xv.local().data(), gv.local().data(), bv.local().data(),
                              out.local().data(), m.local().data(), s.local().data(),
                              xv.local().size() / n, n, static_cast<T>(epsilon));
      return std::tuple<XT, MT, MT>(std::move(out), std::move(m), std::move(s));
    } else {
      XT out(xv.mesh(), xv.sizes(), XT::uninitialized);
      MT m = reduce_mean<Dim>(xv);
      MT s = eval(rsqrt(reduce_mean<Dim>((xv - m) * (xv - m)) + static_cast<T>(epsilon)));
      assign_expression(out, (xv - m) * s * stop_gradient(gamma) + stop_gradient(beta));
      return std::tuple<XT, MT, MT>(std::move(out), std::move(m), std::move(s));
    }
  }();
  return record(
      std::move(y),
      [mean = std::move(mean), r = std::move(r)](const XT&, const XT& g, const auto& in,
                                                 const auto& scale, const auto& shift) {
        const auto xhat = (in.value() - mean) * r;
        if (scale.wants_grad()) scale.add_grad(g * xhat);  // summed over the dims gamma lacks
        if (shift.wants_grad()) shift.add_grad(g);
        if (!in.wants_grad()) return;
        if constexpr (by_rows) {
          const auto scope = g.mesh().counters().operation(detail::layer_norm_operation<Dim, XT>);
          XT dx(g.mesh(), g.sizes(), XT::uninitialized);
          g.mesh().counters().streamed([&] { return 3 * g.local().size() * sizeof(T); });
          const std::size_t n = g.local().shape()[XT::rank - 1];
          detail::layer_norm_backward_rows(
              in.value().local().data(), g.local().data(), scale.value().local().data(),
              mean.local().data(), r.local().data(), dx.local().data(), g.local().size() / n, n);
          in.add_grad(std::move(dx));
        } else {
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
