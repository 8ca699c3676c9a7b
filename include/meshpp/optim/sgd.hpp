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

// sgd_slot<Tensor, Options>: a variable and its momentum buffer
template <class Tensor, class Options>
class sgd_slot final : public optimizer_slot<Tensor> {
 public:
  using T = typename Tensor::value_type;

  sgd_slot(variable<Tensor> v, std::shared_ptr<const Options> o)
      : optimizer_slot<Tensor>(std::move(v)), options_(std::move(o)) {}

  void update() override {
    const Options& o = *options_;
    const T lr = static_cast<T>(o.learning_rate);
    const T wd = static_cast<T>(o.weight_decay);
    const T mu = static_cast<T>(o.momentum);
    const auto [begin, end] = this->shard();  // the whole slice: SGD does not shard
    T* p = this->parameter().local().data() + begin;
    const T* g = std::as_const(this->gradient().local()).data() + begin;
    const std::size_t n = end - begin;
    if (o.momentum == 0) {
      this->count_passes(3);  // p, g read; p written
      for_each_lane<T>(
          n,
          [&](auto& p, const auto& g) {
            using V = std::remove_cvref_t<decltype(p)>;
            p -= V(lr) * (g + V(wd) * p);
          },
          p, g);
      return;
    }
    if (!buffer_) buffer_.emplace(this->zeros_like_parameter());
    T* b = buffer_->local().data() + begin;
    this->count_passes(5);  // p, g, b read; p, b written
    const bool nesterov = o.nesterov;
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

  // the momentum buffer (absent without momentum, and before the first update)
  void visit_state(state_visitor& v) override {
    visit_optional_tensor(v, "momentum", buffer_, [&] { return this->zeros_like_parameter(); });
  }

 private:
  std::shared_ptr<const Options> options_;
  std::optional<Tensor> buffer_;  // momentum, created at the first update with momentum
};

}  // namespace detail

/// @brief Stochastic gradient descent (see the top of optim/sgd.hpp for the rule).
class sgd final : public basic_optimizer<sgd_options, detail::sgd_slot> {
 public:
  // sgd(options, variables...)
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
