// meshpp/optim/sgd.hpp — stochastic gradient descent, with optional (Nesterov) momentum and
// L2 weight decay.
//
//   mp::sgd opt({.learning_rate = 0.1, .momentum = 0.9}, w1, w2);
//
// For each element, with g the gradient, p the parameter, b the momentum buffer (zeros at
// first), lr, mu, wd the options (the conventions of torch.optim.SGD, dampening 0):
//   d = g + wd p                                   (L2 decay, coupled: it enters b)
//   momentum 0:   p -= lr d                        (no buffer is kept)
//   momentum mu:  b = mu b + d;  p -= lr b
//   nesterov:     b = mu b + d;  p -= lr (d + mu b)
// lr and wd must be finite and >= 0, mu in [0, 1), and nesterov needs mu > 0 (else
// meshpp::error from the constructor or set_learning_rate).
//
// [..., rows/a, cols/b] |-> [..., rows/a, cols/b]   one pass over the local slices of p, g,
// b; no communication (each rank holding a slice of p holds the complete gradient of it). Not
// sharded among replicas: plain SGD's 3 arrays an element gained less than the allgather
// costs (optim/optimizer.hpp); with momentum (5) it was not measured.
#pragma once

#include <cstddef>
#include <memory>
#include <optional>
#include <type_traits>
#include <utility>

#include "meshpp/autodiff/traced.hpp"
#include "meshpp/core/config.hpp"
#include "meshpp/core/lanes.hpp"
#include "meshpp/optim/optimizer.hpp"

namespace meshpp {

/// @brief Hyperparameters of sgd.
struct sgd_options {
  double learning_rate = 0.01;
  double momentum = 0;  // 0: plain SGD, no state
  bool nesterov = false;
  double weight_decay = 0;
};

// visit_hyperparameters(v, o): for checkpoints (core/state.hpp)
inline void visit_hyperparameters(state_visitor& v, sgd_options& o) {
  v.kind("sgd");
  v.number("learning_rate", o.learning_rate);
  v.number("momentum", o.momentum);
  visit_flag(v, "nesterov", o.nesterov);
  v.number("weight_decay", o.weight_decay);
}

namespace detail {

// check_options(o): throws meshpp::error naming a hyperparameter out of range
inline void check_options(const sgd_options& o) {
  check_non_negative("sgd", "learning_rate", o.learning_rate);
  check_below_one("sgd", "momentum", o.momentum);
  check_non_negative("sgd", "weight_decay", o.weight_decay);
  if (o.nesterov && !(o.momentum > 0)) {
    throw error("meshpp::sgd: nesterov needs a momentum > 0, got momentum " +
                option_text(o.momentum));
  }
}

// sgd_rule: the hyperparameters sgd_update reads
struct sgd_rule {
  double learning_rate, weight_decay, momentum;
  bool nesterov;
};

// sgd_update<T>(n, p, g, b, rule): SGD's rule over n elements of p from g, through the momentum
// buffer b (null: no momentum); one pass in SIMD batches (core/lanes.hpp), compiled once per
// element type
template <class T>
MESHPP_KERNEL void sgd_update(std::size_t n, T* p, const T* g, T* b, const sgd_rule& rule) {
  const T lr = static_cast<T>(rule.learning_rate);
  const T wd = static_cast<T>(rule.weight_decay);
  const T mu = static_cast<T>(rule.momentum);
  if (b == nullptr) {
    for_each_lane<T>(
        n,
        [&](auto& p, const auto& g) {
          using V = std::remove_cvref_t<decltype(p)>;
          p -= V(lr) * (g + V(wd) * p);
        },
        p, g);
    return;
  }
  const bool nesterov = rule.nesterov;
  for_each_lane<T>(
      n,
      [&](auto& p, const auto& g, auto& b) {
        using V = std::remove_cvref_t<decltype(p)>;
        const V d = g + V(wd) * p;
        b = flush_subnormal(V(mu) * b + d);
        p -= V(lr) * (nesterov ? d + V(mu) * b : b);
      },
      p, g, b);
}
#ifdef MESHPP_KERNEL_INSTANCE
MESHPP_KERNEL_INSTANCE void sgd_update<float>(std::size_t, float*, const float*, float*,
                                              const sgd_rule&);
MESHPP_KERNEL_INSTANCE void sgd_update<double>(std::size_t, double*, const double*, double*,
                                               const sgd_rule&);
#endif

// sgd_slot<Tensor, Options>: a variable and its momentum buffer
template <class Tensor, class Options>
class sgd_slot final : public optimizer_slot<Tensor> {
 public:
  using T = typename Tensor::value_type;
  using state_array = typename optimizer_slot<Tensor>::state_array;

  sgd_slot(variable<Tensor> v, std::shared_ptr<const Options> o)
      : optimizer_slot<Tensor>(std::move(v)), options_(std::move(o)) {}

  void update() override {
    const Options& o = *options_;
    // the whole slice, or under shard_level::state this replica's share
    const auto [begin, end] = this->shard();
    T* p = this->parameter().local().data() + begin;
    const T* g = std::as_const(this->gradient().local()).data() + begin;
    T* b = nullptr;
    if (o.momentum != 0) {
      if (!buffer_) buffer_.emplace(this->zeros_like_state());
      b = buffer_->data() + (begin - this->state_range().begin);
    }
    this->count_passes(b ? 5 : 3);  // p, g (and b) read; p (and b) written
    sgd_update<T>(end - begin, p, g, b, {o.learning_rate, o.weight_decay, o.momentum, o.nesterov});
  }

  // element-wise, but sharing the update does not gain by default (the top of this header):
  // it shards under shard_level::state, its momentum buffer in shares
  bool elementwise() const override { return true; }
  bool keeps_state() const override { return options_->momentum != 0; }
  std::vector<state_array*> state_arrays() override {
    if (!buffer_) return {};
    return {&*buffer_};
  }

  // the momentum buffer (absent without momentum, and before the first update)
  void visit_state(state_visitor& v) override { this->visit_state_array(v, "momentum", buffer_); }

 private:
  std::shared_ptr<const Options> options_;
  std::optional<state_array> buffer_;  // momentum, created at the first update with momentum
};

}  // namespace detail

/// @brief Stochastic gradient descent (see the top of optim/sgd.hpp for the rule).
class sgd final : public basic_optimizer<sgd_options, detail::sgd_slot> {
 public:
  // sgd(options, parts...): variables, or layers or models of them (autodiff/parameters.hpp)
  template <class... Vs>
  explicit sgd(sgd_options o = {}, const Vs&... vs)
      : basic_optimizer((detail::check_options(o), o)) {
    add(vs...);
  }

  double learning_rate() const override { return options().learning_rate; }
  void set_learning_rate(double rate) override {
    detail::check_non_negative("sgd", "learning_rate", rate);
    mutable_options().learning_rate = rate;
  }
};

}  // namespace meshpp
