// meshpp/optim/adam.hpp — Adam (Kingma & Ba 2015) and AdamW, Adam with decoupled weight decay
// (Loshchilov & Hutter 2019).
//
//   mp::adam  opt({.learning_rate = 1e-3, .beta1 = 0.9, .beta2 = 0.999, .epsilon = 1e-8});
//   mp::adamw opt({.learning_rate = 1e-3, .weight_decay = 0.01});
//
// For each element, with g the gradient, p the parameter, m and v the moments (zeros at first),
// t the number of updates this variable has received, this one included:
//   m = beta1 m + (1 - beta1) g
//   v = beta2 v + (1 - beta2) g^2
//   m^ = m / (1 - beta1^t),  v^ = v / (1 - beta2^t)          (bias correction)
//   adam:   p -= lr m^ / (sqrt(v^) + epsilon)
//   adamw:  p -= lr (m^ / (sqrt(v^) + epsilon) + weight_decay p)
// lr and weight_decay must be finite and >= 0, the betas in [0, 1), epsilon finite and > 0
// (else meshpp::error from the constructor or set_learning_rate).
// AdamW's decay shrinks p directly instead of entering g (where Adam's normalisation would
// rescale it); scaled by lr, as torch.optim.AdamW does.
//
// [..., rows/a, cols/b] |-> [..., rows/a, cols/b]   one pass over the local slices of p, g, m,
// v in SIMD batches; element-wise, so replicas of p share the work (optim/optimizer.hpp,
// optimizer_slot::apply: one allgather of p over them). State: 2 tensors laid out as p.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "meshpp/autodiff/traced.hpp"
#include "meshpp/core/config.hpp"
#include "meshpp/core/lanes.hpp"
#include "meshpp/optim/optimizer.hpp"

namespace meshpp {

/// @brief Hyperparameters of adam.
struct adam_options {
  double learning_rate = 1e-3;
  double beta1 = 0.9;
  double beta2 = 0.999;
  double epsilon = 1e-8;
};

/// @brief Hyperparameters of adamw: adam's, and the decoupled decay.
struct adamw_options {
  double learning_rate = 1e-3;
  double beta1 = 0.9;
  double beta2 = 0.999;
  double epsilon = 1e-8;
  double weight_decay = 0.01;
};

// visit_hyperparameters(v, o): for checkpoints (core/state.hpp)
namespace detail {
// the hyperparameters Adam and AdamW share
template <class Options>
void visit_adam_numbers(state_visitor& v, Options& o) {
  v.number("learning_rate", o.learning_rate);
  v.number("beta1", o.beta1);
  v.number("beta2", o.beta2);
  v.number("epsilon", o.epsilon);
}
}  // namespace detail
inline void visit_hyperparameters(state_visitor& v, adam_options& o) {
  v.kind("adam");
  detail::visit_adam_numbers(v, o);
}
inline void visit_hyperparameters(state_visitor& v, adamw_options& o) {
  v.kind("adamw");
  detail::visit_adam_numbers(v, o);
  v.number("weight_decay", o.weight_decay);
}

namespace detail {

// check_adam_options(who, o): throws meshpp::error naming a hyperparameter out of range
template <class Options>
void check_adam_options(std::string_view who, const Options& o) {
  check_non_negative(who, "learning_rate", o.learning_rate);
  check_below_one(who, "beta1", o.beta1);
  check_below_one(who, "beta2", o.beta2);
  check_positive(who, "epsilon", o.epsilon);  // 0 would divide 0 by 0 where g has been 0
  if constexpr (requires { o.weight_decay; })
    check_non_negative(who, "weight_decay", o.weight_decay);
}

// adam_rule<T>: the coefficients adam_update reads (correct1, correct2: the bias corrections
// 1 / (1 - beta^t) of this update)
template <class T>
struct adam_rule {
  T learning_rate, beta1, beta2, epsilon, correct1, correct2, weight_decay;
};

// adam_update<T>(n, p, g, m, v, rule): Adam's rule over n elements of p from g, through the
// moments m and v; one pass in SIMD batches (core/lanes.hpp), compiled once per element type
template <class T>
MESHPP_KERNEL void adam_update(std::size_t n, T* p, const T* g, T* m, T* v,
                               const adam_rule<T>& rule) {
  const T lr = rule.learning_rate, beta1 = rule.beta1, beta2 = rule.beta2, eps = rule.epsilon;
  const T correct1 = rule.correct1, correct2 = rule.correct2, wd = rule.weight_decay;
  for_each_lane<T>(
      n,
      [&](auto& p, const auto& g, auto& m, auto& v) {
        using std::sqrt;
        using V = std::remove_cvref_t<decltype(p)>;
        m = flush_subnormal(V(beta1) * m + V(1 - beta1) * g);
        v = flush_subnormal(V(beta2) * v + V(1 - beta2) * g * g);
        const V m_hat = m * V(correct1);
        const V v_hat = v * V(correct2);
        p -= V(lr) * (m_hat / (sqrt(v_hat) + V(eps)) + V(wd) * p);
      },
      p, g, m, v);
}
#ifdef MESHPP_KERNEL_INSTANCE
MESHPP_KERNEL_INSTANCE void adam_update<float>(std::size_t, float*, const float*, float*, float*,
                                               const adam_rule<float>&);
MESHPP_KERNEL_INSTANCE void adam_update<double>(std::size_t, double*, const double*, double*,
                                                double*, const adam_rule<double>&);
#endif

// adam_slot<Tensor, Options>: a variable, its two moments and its count of updates; the
// decoupled decay when Options has a weight_decay
template <class Tensor, class Options>
class adam_slot final : public optimizer_slot<Tensor> {
 public:
  using T = typename Tensor::value_type;
  using state_array = typename optimizer_slot<Tensor>::state_array;

  adam_slot(variable<Tensor> v, std::shared_ptr<const Options> o)
      : optimizer_slot<Tensor>(std::move(v)), options_(std::move(o)) {}

  void update() override {
    const Options& o = *options_;
    if (!m_) {
      m_.emplace(this->zeros_like_state());
      v_.emplace(this->zeros_like_state());
    }
    ++t_;
    const double t = static_cast<double>(t_);
    const T lr = static_cast<T>(o.learning_rate);
    const T beta1 = static_cast<T>(o.beta1);
    const T beta2 = static_cast<T>(o.beta2);
    const T eps = static_cast<T>(o.epsilon);
    const T correct1 = static_cast<T>(1 / (1 - std::pow(o.beta1, t)));
    const T correct2 = static_cast<T>(1 / (1 - std::pow(o.beta2, t)));
    T wd = 0;
    if constexpr (requires { o.weight_decay; }) wd = static_cast<T>(o.weight_decay);
    const auto [begin, end] = this->shard();
    const std::size_t at = begin - this->state_range().begin;  // the state's index of begin
    this->count_passes(7);                                     // p, g, m, v read; p, m, v written
    adam_update<T>(end - begin, this->parameter().local().data() + begin,
                   std::as_const(this->gradient().local()).data() + begin, m_->data() + at,
                   v_->data() + at, {lr, beta1, beta2, eps, correct1, correct2, wd});
  }
  bool shardable() const override { return true; }
  std::vector<state_array*> state_arrays() override {
    if (!m_) return {};
    return {&*m_, &*v_};
  }

  // the count of updates and the two moments (absent before the first update)
  void visit_state(state_visitor& v) override {
    v.integer("updates", t_);
    this->visit_state_array(v, "m", m_);
    this->visit_state_array(v, "v", v_);
  }

 private:
  std::shared_ptr<const Options> options_;
  std::optional<state_array> m_, v_;  // the moments, created at the first update
  std::int64_t t_ = 0;
};

}  // namespace detail

/// @brief Adam (see the top of optim/adam.hpp for the rule).
class adam final : public basic_optimizer<adam_options, detail::adam_slot> {
 public:
  // adam(options, parts...): variables, or layers or models of them (autodiff/parameters.hpp)
  template <class... Vs>
  explicit adam(adam_options o = {}, const Vs&... vs)
      : basic_optimizer((detail::check_adam_options("adam", o), o)) {
    add(vs...);
  }

  double learning_rate() const override { return options().learning_rate; }
  void set_learning_rate(double rate) override {
    detail::check_non_negative("adam", "learning_rate", rate);
    mutable_options().learning_rate = rate;
  }
};

/// @brief AdamW: Adam with decoupled weight decay (see the top of optim/adam.hpp).
class adamw final : public basic_optimizer<adamw_options, detail::adam_slot> {
 public:
  // adamw(options, parts...): variables, or layers or models of them (autodiff/parameters.hpp)
  template <class... Vs>
  explicit adamw(adamw_options o = {}, const Vs&... vs)
      : basic_optimizer((detail::check_adam_options("adamw", o), o)) {
    add(vs...);
  }

  double learning_rate() const override { return options().learning_rate; }
  void set_learning_rate(double rate) override {
    detail::check_non_negative("adamw", "learning_rate", rate);
    mutable_options().learning_rate = rate;
  }
};

}  // namespace meshpp
