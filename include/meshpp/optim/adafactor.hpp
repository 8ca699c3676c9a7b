// meshpp/optim/adafactor.hpp — Adafactor (Shazeer & Stern 2018), as Mesh-TensorFlow's
// optimize.py implements it for T5: a second-moment estimate factored into row and column
// statistics, relative step sizes, update clipping.
//
//   mp::adafactor opt({}, w1, w2);                          // Mesh-TensorFlow's defaults
//   mp::adafactor opt({.learning_rate = 1e-2, .beta1 = 0.9});
//
// For a variable p with gradient g, t the number of updates it has received (this one
// included), R and C its last two dims and "..." the dims before them:
//   beta2_t = decay_rate, or 1 - t^(-decay_exponent) (0 at t = 1: the first update sees g^2)
//   rate    = learning_rate, or min(1e-2, 1 / sqrt(t)) (times 0.05 without parameter scale)
//   rate   *= max(RMS(p), epsilon2)                       if multiply_by_parameter_scale
//   factored (rank >= 2 and the sizes of R and C both >= min_dim_size_to_factor):
//     v_r[..., R] = beta2_t v_r + (1 - beta2_t) mean_C(g^2 + epsilon1)
//     v_c[..., C] = beta2_t v_c + (1 - beta2_t) mean_R(g^2 + epsilon1)
//     x = g / sqrt(v_r v_c / mean_R(v_r))                 (v_r v_c / mean_R(v_r) estimates v)
//   otherwise:
//     v = beta2_t v + (1 - beta2_t) (g^2 + epsilon1);  x = g / sqrt(v)
//   x /= max(1, RMS(x) / clipping_threshold)              if clipping_threshold is given
//   u = rate x;  with beta1 > 0:  m = beta1 m + (1 - beta1) u;  u = m
//   p -= u
// RMS(y) = sqrt(mean of y^2 over all of y's elements). A learning_rate, decay_exponent or
// epsilon2 must be finite and >= 0, beta1 and decay_rate in [0, 1), clipping_threshold and
// epsilon1 finite and > 0 (else meshpp::error from the constructor or set_learning_rate).
// Mesh-TensorFlow factors the two largest dims; dims are types here, so the factored dims are the
// last two, chosen at compile time (put R and C last); whether to factor is decided from their
// sizes at the first update. t and the schedules count this variable's own updates
// (Mesh-TensorFlow's global step, when every step has a gradient for it).
//
// Memory: factored, v_r and v_c hold R + C numbers per matrix (per index of "...") instead of
// v's R * C; on a rank holding [R/a, C/b], R/a + C/b. Unfactored, v is laid out as p. With
// beta1 > 0, m is laid out as p too (Mesh-TensorFlow's default, beta1 = 0, keeps no m).
//
// Communication of one update of p[..., R/a, C/b] (R split over mesh dim a, C over b; any
// split of "..." is never reduced over, so it costs nothing). Means over a split dim need the
// stripes the other ranks along its mesh dim hold; each is a meshpp reduction, so it is
// counted and is correct under every layout (a dim held whole needs no communication):
//   factored:  [..., R/a, C/b] |-> [..., R/a]   mean_C(g^2 + epsilon1): allreduce over b
//              [..., R/a, C/b] |-> [..., C/b]   mean_R(g^2 + epsilon1): allreduce over a
//              [..., R/a] |-> [...]             mean_R(v_r): allreduce over a
//   clipping:  [..., R/a, C/b] |-> []           RMS(x): allreduce of 1 number over a, b
//   scale:     [..., R/a, C/b] |-> []           RMS(p): allreduce of 1 number over a, b
// The statistics come out replicated along the mesh dims they were reduced over, so every
// rank holding a slice of p computes the same factors for it; all else is one pass over the
// local slices. A replicated p communicates nothing.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <utility>

#include "meshpp/autodiff/traced.hpp"
#include "meshpp/core/shape.hpp"
#include "meshpp/expr/evaluate.hpp"
#include "meshpp/expr/functions.hpp"
#include "meshpp/ops/reduce.hpp"
#include "meshpp/optim/optimizer.hpp"

namespace meshpp {

/// @brief Hyperparameters of adafactor (Mesh-TensorFlow's names and defaults, except
/// min_dim_size_to_factor as in T5's Tensor2Tensor version).
struct adafactor_options {
  std::optional<double> learning_rate = std::nullopt;  // none: the relative step above
  double beta1 = 0;                                    // 0: no first moment, no m
  std::optional<double> decay_rate = std::nullopt;     // a fixed beta2_t; none: 1 - t^-exponent
  double decay_exponent = 0.8;                         // of the default beta2_t
  std::optional<double> clipping_threshold = 1.0;      // none: no update clipping
  bool multiply_by_parameter_scale = true;             // rate relative to RMS(p)
  bool factored = true;                                // false: always keep the full v
  double epsilon1 = 1e-30;                             // added to g^2
  double epsilon2 = 1e-3;                              // least parameter scale
  std::size_t min_dim_size_to_factor = 128;            // R and C must both be this large
};

// visit_hyperparameters(v, o): for checkpoints (core/state.hpp)
inline void visit_hyperparameters(state_visitor& v, adafactor_options& o) {
  v.kind("adafactor");
  v.optional_number("learning_rate", o.learning_rate);
  v.number("beta1", o.beta1);
  v.optional_number("decay_rate", o.decay_rate);
  v.number("decay_exponent", o.decay_exponent);
  v.optional_number("clipping_threshold", o.clipping_threshold);
  visit_flag(v, "multiply_by_parameter_scale", o.multiply_by_parameter_scale);
  visit_flag(v, "factored", o.factored);
  v.number("epsilon1", o.epsilon1);
  v.number("epsilon2", o.epsilon2);
  visit_count(v, "min_dim_size_to_factor", o.min_dim_size_to_factor);
}

namespace detail {

// check_options(o): throws meshpp::error naming a hyperparameter out of range
inline void check_options(const adafactor_options& o) {
  if (o.learning_rate) check_non_negative("adafactor", "learning_rate", *o.learning_rate);
  check_below_one("adafactor", "beta1", o.beta1);
  if (o.decay_rate) check_below_one("adafactor", "decay_rate", *o.decay_rate);
  // beta2_t = 1 - t^(-c) lies in [0, 1) for every t >= 1 iff c >= 0
  check_non_negative("adafactor", "decay_exponent", o.decay_exponent);
  if (o.clipping_threshold)
    check_positive("adafactor", "clipping_threshold", *o.clipping_threshold);
  check_positive("adafactor", "epsilon1", o.epsilon1);  // 0: 0 / 0 where g is 0 throughout
  check_non_negative("adafactor", "epsilon2", o.epsilon2);
}

// adafactor_relative_step(t, scaled): the rate without a learning_rate, at update t
inline double adafactor_relative_step(double t, bool multiply_by_parameter_scale) {
  const double rate = std::min(1e-2, 1 / std::sqrt(t));
  return multiply_by_parameter_scale ? rate : rate * 0.05;
}

// root_mean_square(x): sqrt(reduce_mean(x^2)) of an expression, as a double; one allreduce
// of one number over the mesh dims x is split over
template <class E>
double root_mean_square(const E& x) {
  const auto mean = reduce_mean(x * x);
  return std::sqrt(static_cast<double>(*mean.local().data()));
}

// adafactor_factors<Tensor>: the row and column statistics of a variable of rank >= 2
// (none below)
template <class Tensor, bool = (Tensor::rank >= 2)>
struct adafactor_factors {};
template <class Tensor>
struct adafactor_factors<Tensor, true> {
  using S = typename Tensor::shape_type;
  using row_dim = dim_at_t<S, S::rank - 2>;  // R
  using col_dim = dim_at_t<S, S::rank - 1>;  // C
  // [..., R] and [..., C], laid out as the variable on those dims
  using row_stats = decltype(reduce_mean<col_dim>(std::declval<const Tensor&>()));
  using col_stats = decltype(reduce_mean<row_dim>(std::declval<const Tensor&>()));
  std::optional<row_stats> v_r;
  std::optional<col_stats> v_c;
};

// adafactor_slot<Tensor, Options>: a variable, its second-moment statistics (factored or
// full), its first moment (beta1 > 0) and its count of updates
template <class Tensor, class Options>
class adafactor_slot final : public optimizer_slot<Tensor> {
 public:
  using T = typename Tensor::value_type;

  adafactor_slot(variable<Tensor> v, std::shared_ptr<const Options> o)
      : optimizer_slot<Tensor>(std::move(v)), options_(std::move(o)) {}

  void update() override {
    const Options& o = *options_;
    Tensor& p = this->parameter();
    const Tensor& g = this->gradient();
    if (t_ == 0) factored_ = should_factor(p, o);
    ++t_;
    const double t = static_cast<double>(t_);
    const double decay = o.decay_rate ? *o.decay_rate : 1 - std::pow(t, -o.decay_exponent);
    double rate = o.learning_rate ? *o.learning_rate
                                  : adafactor_relative_step(t, o.multiply_by_parameter_scale);
    if (o.multiply_by_parameter_scale) rate *= std::max(root_mean_square(p), o.epsilon2);

    const T beta2 = static_cast<T>(decay);
    const T mixing = static_cast<T>(1 - decay);
    const T eps1 = static_cast<T>(o.epsilon1);
    auto clip = [&](double rms) {
      return o.clipping_threshold ? std::max(1.0, rms / *o.clipping_threshold) : 1.0;
    };

    if constexpr (Tensor::rank >= 2) {
      if (factored_) {
        using F = adafactor_factors<Tensor>;
        using R = typename F::row_dim;
        using C = typename F::col_dim;
        // each reduction: one local pass over g, then the allreduce of the header's table
        const auto row_mean = reduce_mean<C>(g * g + eps1);
        const auto col_mean = reduce_mean<R>(g * g + eps1);
        if (!factors_.v_r) {
          factors_.v_r.emplace(row_mean.mesh(), row_mean.sizes());
          factors_.v_c.emplace(col_mean.mesh(), col_mean.sizes());
        }
        blend(*factors_.v_r, row_mean, beta2, mixing);
        blend(*factors_.v_c, col_mean, beta2, mixing);
        // x = g r c with r = rsqrt(v_r / mean_R(v_r)) over [..., R], c = rsqrt(v_c) over
        // [..., C]: small tensors; x itself is never stored (RMS(x) and the update each
        // recompute it in their pass over g)
        const auto long_term_mean = reduce_mean<R>(*factors_.v_r);
        const typename F::row_stats r = rsqrt(*factors_.v_r / long_term_mean);
        const typename F::col_stats c = rsqrt(*factors_.v_c);
        const double denominator = o.clipping_threshold ? clip(root_mean_square(g * r * c)) : 1.0;
        apply_factored(p, g, r, c, static_cast<T>(rate / denominator), o);
        return;
      }
    }
    if (!v_) v_.emplace(this->zeros_like_parameter());
    // The __restrict pointers in this class each point into a different tensor: p (the
    // variable's value), g (its gradient, a tensor of its own), the statistics this slot owns
    // (v_, m_, factors_) and the fresh tensors computed here (row_mean, col_mean, r, c). A
    // tensor owns its slice (no two share one), so none of them aliases another.
    {
      T* __restrict v = v_->local().data();
      const T* __restrict gp = g.local().data();
      const std::size_t n = g.local().size();
      for (std::size_t i = 0; i < n; ++i) v[i] = beta2 * v[i] + mixing * (gp[i] * gp[i] + eps1);
    }
    const double denominator = o.clipping_threshold ? clip(root_mean_square(g * rsqrt(*v_))) : 1.0;
    const T scale = static_cast<T>(rate / denominator);
    const T* __restrict gp = g.local().data();
    const T* __restrict v = v_->local().data();
    const std::size_t n = p.local().size();
    apply(p, o, [&](auto&& sink) {
      for (std::size_t i = 0; i < n; ++i) sink(i, scale * (gp[i] * (T(1) / std::sqrt(v[i]))));
    });
  }

  std::size_t state_bytes() const override {
    std::size_t n = 0;
    const auto add = [&](const auto& t) {
      if (t) n += t->local().size() * sizeof(typename Tensor::value_type);
    };
    if constexpr (Tensor::rank >= 2) {
      add(factors_.v_r);
      add(factors_.v_c);
    }
    add(v_);
    add(m_);
    return n;
  }

  // the count of updates, whether factored, and the statistics that exist: v_r and v_c
  // (factored) or v, and m (beta1 > 0)
  void visit_state(state_visitor& v) override {
    v.integer("updates", t_);
    visit_flag(v, "factored", factored_);
    if constexpr (Tensor::rank >= 2) {
      using F = adafactor_factors<Tensor>;
      const Tensor& p = this->parameter();
      visit_optional_tensor(v, "v_r", factors_.v_r,
                            [&] { return typename F::row_stats(p.mesh(), p.sizes()); });
      visit_optional_tensor(v, "v_c", factors_.v_c,
                            [&] { return typename F::col_stats(p.mesh(), p.sizes()); });
    }
    visit_optional_tensor(v, "v", v_, [&] { return this->zeros_like_parameter(); });
    visit_optional_tensor(v, "m", m_, [&] { return this->zeros_like_parameter(); });
  }

 private:
  static bool should_factor(const Tensor& p, const Options& o) {
    if constexpr (Tensor::rank >= 2) {
      using F = adafactor_factors<Tensor>;
      return o.factored && p.template extent<typename F::row_dim>() >= o.min_dim_size_to_factor &&
             p.template extent<typename F::col_dim>() >= o.min_dim_size_to_factor;
    } else {
      return false;
    }
  }

  // blend(state, fresh, beta2, mixing): state = beta2 state + mixing fresh (same layouts)
  template <class S>
  static void blend(S& state, const S& fresh, T beta2, T mixing) {
    T* __restrict s = state.local().data();
    const T* __restrict f = fresh.local().data();
    const std::size_t n = state.local().size();
    for (std::size_t i = 0; i < n; ++i) s[i] = beta2 * s[i] + mixing * f[i];
  }

  // apply(p, o, updates): p -= u for each (i, u) that updates(sink) passes to sink(i, u),
  // through m when beta1 > 0: the one pass over the local slices
  template <class Updates>
  void apply(Tensor& p, const Options& o, Updates&& updates) {
    T* __restrict pp = p.local().data();
    if (o.beta1 == 0) {
      updates([&](std::size_t i, T u) { pp[i] -= u; });
      return;
    }
    if (!m_) m_.emplace(this->zeros_like_parameter());
    const T beta1 = static_cast<T>(o.beta1);
    T* __restrict m = m_->local().data();
    updates([&](std::size_t i, T u) {
      m[i] = flush_subnormal(beta1 * m[i] + (1 - beta1) * u);
      pp[i] -= m[i];
    });
  }

  // apply_factored(p, g, r, c, scale, o): apply() of u = scale g r c, the local slices of r
  // [..., R] and c [..., C] read at the row and column of each element of [..., R, C]
  template <class Rows, class Cols>
  void apply_factored(Tensor& p, const Tensor& g, const Rows& r, const Cols& c, T scale,
                      const Options& o) {
    const auto shape = p.local_shape();
    const std::size_t rows = shape[Tensor::rank - 2];
    const std::size_t cols = shape[Tensor::rank - 1];
    const std::size_t matrices = rows * cols == 0 ? 0 : p.local().size() / (rows * cols);
    const T* __restrict gp = g.local().data();
    const T* __restrict rp = r.local().data();
    const T* __restrict cp = c.local().data();
    apply(p, o, [&](auto&& sink) {
      for (std::size_t k = 0; k < matrices; ++k) {
        const T* __restrict ck = cp + k * cols;
        for (std::size_t j = 0; j < rows; ++j) {
          const std::size_t row = k * rows + j;
          const T rj = rp[row];
          for (std::size_t l = 0; l < cols; ++l) {
            const std::size_t i = row * cols + l;
            sink(i, scale * (gp[i] * rj * ck[l]));
          }
        }
      }
    });
  }

  std::shared_ptr<const Options> options_;
  adafactor_factors<Tensor> factors_;  // v_r, v_c when factored
  std::optional<Tensor> v_;            // the full second moment when not
  std::optional<Tensor> m_;            // the first moment when beta1 > 0
  bool factored_ = false;
  std::int64_t t_ = 0;
};

}  // namespace detail

/// @brief Adafactor (see the top of optim/adafactor.hpp for the rule and its communication).
class adafactor final : public basic_optimizer<adafactor_options, detail::adafactor_slot> {
 public:
  // adafactor(options, parts...): variables, or layers or models of them (autodiff/parameters.hpp)
  template <class... Vs>
  explicit adafactor(adafactor_options o = {}, const Vs&... vs)
      : basic_optimizer((detail::check_options(o), o)) {
    add(vs...);
  }

  // learning_rate(): the fixed rate, or the relative step of update steps() + 1 (before the
  // parameter scale)
  double learning_rate() const override {
    return options().learning_rate
               ? *options().learning_rate
               : detail::adafactor_relative_step(static_cast<double>(steps() + 1),
                                                 options().multiply_by_parameter_scale);
  }
  // set_learning_rate(r): a fixed rate from now on (no relative step)
  void set_learning_rate(double rate) override {
    detail::check_non_negative("adafactor", "learning_rate", rate);
    mutable_options().learning_rate = rate;
  }
};

}  // namespace meshpp
