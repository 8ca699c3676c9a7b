// meshpp/nn/dropout.hpp — dropout with a mask that is the same under every layout.
//
//   auto h = mp::dropout(x, 0.1, /*seed*/ 42, /*step*/ t);   // a new mask for every step t
//   mp::dropout_layer drop(0.1, 42);                         // counts its calls as steps
//   auto h2 = drop(x);          // drop.inference = true: the identity
//
//   [batch/rows, hidden/cols] |-> [batch/rows, hidden/cols]   one local pass, no communication
//
// Element i of x (i its global row-major index in x's dim order) is kept with probability
// 1 - rate, by Philox4x32-10 with key `seed` and counter (i, step), and scaled by
// 1 / (1 - rate): the mask depends on (seed, step, global index) alone, so it is identical bit
// for bit under every layout and rank count, and needs no communication. The backward pass
// recomputes the same mask (nothing is stored): dx = g * mask / (1 - rate), one local pass.
// rate 0 is the identity (x itself is returned: nothing recorded).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>

#include "meshpp/autodiff/record.hpp"
#include "meshpp/autodiff/traced.hpp"
#include "meshpp/core/create.hpp"
#include "meshpp/core/error.hpp"
#include "meshpp/core/random.hpp"
#include "meshpp/core/tensor.hpp"

namespace meshpp {

namespace detail {

// dropout_keep: the keep decision for an element: 32 random bits of Philox under key `seed`
// at counter (index, step), compared with rate * 2^32
struct dropout_keep {
  std::uint64_t threshold;  // keep iff the bits are >= threshold
  std::array<std::uint32_t, 2> key;
  std::uint32_t step_lo, step_hi;

  dropout_keep(double rate, std::uint64_t seed, std::uint64_t step)
      : threshold(static_cast<std::uint64_t>(rate * 4294967296.0)),
        key{static_cast<std::uint32_t>(seed), static_cast<std::uint32_t>(seed >> 32)},
        step_lo(static_cast<std::uint32_t>(step)),
        step_hi(static_cast<std::uint32_t>(step >> 32)) {}

  bool operator()(std::uint64_t index) const {
    const auto w = philox4x32({static_cast<std::uint32_t>(index),
                               static_cast<std::uint32_t>(index >> 32), step_lo, step_hi},
                              key);
    return w[0] >= threshold;
  }
};

// masked(in, keep, scale): in * scale where keep(global index), 0 elsewhere, as a new tensor of
// in's type (one pass over the local slice)
template <class Tensor>
Tensor masked(const Tensor& in, const dropout_keep& keep, typename Tensor::value_type scale) {
  using T = typename Tensor::value_type;
  Tensor out(in.mesh(), in.sizes(), Tensor::uninitialized);
  const T* source = in.local().data();
  std::size_t j = 0;  // for_each_element walks the slice in local row-major order
  for_each_element(out, [&](T& v, const auto&, std::uint64_t linear) {
    v = keep(linear) ? source[j] * scale : T(0);
    ++j;
  });
  return out;
}

inline void check_dropout_rate(double rate) {
  if (!(rate >= 0.0 && rate < 1.0)) {
    throw error("meshpp::dropout(x, rate, seed, step): rate must be in [0, 1), got " +
                std::to_string(rate));
  }
}

}  // namespace detail

// dropout(x, rate, seed, step = 0): each element of x kept with probability 1 - rate and scaled
// by 1 / (1 - rate), the mask keyed by (seed, step, global index); x traced (the result is
// traced, its gradient masked alike) or a plain tensor (the result is a plain tensor)
template <class X>
requires detail::traced_or_tensor<X>
auto dropout(const X& x, double rate, std::uint64_t seed, std::uint64_t step = 0) {
  detail::check_dropout_rate(rate);
  if constexpr (is_tensor_v<X>) {
    if (rate == 0.0) return x;
    using T = typename X::value_type;
    return detail::masked(x, detail::dropout_keep(rate, seed, step),
                          static_cast<T>(1.0 / (1.0 - rate)));
  } else {
    using XT = typename X::tensor_type;
    using T = typename XT::value_type;
    if (rate == 0.0) return traced<XT>(x.node());
    const detail::dropout_keep keep(rate, seed, step);
    const T scale = static_cast<T>(1.0 / (1.0 - rate));
    return record(
        detail::masked(x.value(), keep, scale),
        [keep, scale](const XT&, const XT& g, const auto& in) {
          if (in.wants_grad()) in.add_grad(detail::masked(g, keep, scale));
        },
        x);
  }
}

/// @brief A dropout layer: a rate and a seed, and a step counter that advances with every call
/// in training, so each call draws a new mask (the same on every rank and layout, as the ranks
/// make the same calls). `inference = true` (or rate 0) makes it the identity.
class dropout_layer {
 public:
  // dropout_layer(rate, seed): throws meshpp::error unless 0 <= rate < 1
  dropout_layer(double rate, std::uint64_t seed) : rate_(rate), seed_(seed) {
    detail::check_dropout_rate(rate);
  }

  // layer(x): dropout(x, rate, seed, step), then step + 1; x itself in inference
  template <class X>
  auto operator()(const X& x) {
    if (inference) return dropout(x, 0.0, seed_, step_);
    return dropout(x, rate_, seed_, step_++);
  }

  // true: the identity (evaluation, serving); set_inference(on) sets it
  bool inference = false;
  void set_inference(bool on) { inference = on; }

  double rate() const { return rate_; }
  std::uint64_t seed() const { return seed_; }
  // step(): the step the next call will use; set_step(s): resume at step s (from a checkpoint)
  std::uint64_t step() const { return step_; }
  void set_step(std::uint64_t s) { step_ = s; }

  // variables(): none (so add_variables(optimizer, layer) adds nothing)
  std::tuple<> variables() const { return {}; }

 private:
  double rate_;
  std::uint64_t seed_;
  std::uint64_t step_ = 0;
};

}  // namespace meshpp
