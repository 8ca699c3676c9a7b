// meshpp/optim/schedule.hpp — learning-rate schedules: the rate of each step as a function of
// the step's number, and apply_schedule() to set it on an optimizer before its step.
//
//   const mp::warmup_cosine schedule(2e-3, 100, 3000, 0.1);   // peak, warmup, total, final/peak
//   for (...) {
//     mp::backward(loss);
//     mp::apply_schedule(opt, schedule);   // opt.set_learning_rate(schedule(opt.steps() + 1))
//     opt.step();
//   }
//
// Steps count from 1: schedule(t) is the rate of the optimizer's t-th step, so before step() the
// rate to set is schedule(opt.steps() + 1), which apply_schedule does (a checkpoint restores
// opt.steps(), so a resumed run goes on where it stopped). A step below 1 throws meshpp::error.
//
//   constant_rate(r)          r
//   warmup_cosine(peak, w, T, f)
//                             t <= w:  peak t / w                        (linear warmup)
//                             t > w:   peak (f + (1 - f) (1 + cos(pi u)) / 2),
//                                      u = min(1, (t - w) / max(1, T - w))
//                             (cosine decay from peak at step w to f peak at step T, then f
//                             peak; w = 0: no warmup)
//   inverse_sqrt(scale, w)    scale min(t^-1/2, t w^-3/2)
//                             (the Transformer paper's, "Attention Is All You Need" 5.3, with
//                             scale = d_model^-1/2: linear warmup to scale / sqrt(w) at step w,
//                             then decay as 1 / sqrt(t); w = 0: scale / sqrt(t) from step 1)
//
// Arguments out of range throw meshpp::error from the constructor naming the schedule, the
// argument and its value ("meshpp::warmup_cosine: final_fraction must be in [0, 1], got 2"); a
// rate a schedule gives is finite and >= 0, so set_learning_rate() accepts it. A schedule is any
// callable double(std::int64_t): apply_schedule takes one's own too. Nothing is communicated:
// every rank computes the same rate from the same step.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numbers>
#include <string>
#include <string_view>

#include "meshpp/core/error.hpp"
#include "meshpp/optim/optimizer.hpp"

namespace meshpp {

namespace detail {
// check_steps(who, name, value, ok, range): throws meshpp::error "meshpp::<who>: <name> must be
// <range>, got <value>" unless ok (check_option for a count of steps)
inline void check_steps(std::string_view who, std::string_view name, std::int64_t value, bool ok,
                        std::string_view range) {
  if (ok) return;
  throw error("meshpp::" + std::string(who) + ": " + std::string(name) + " must be " +
              std::string(range) + ", got " + std::to_string(value));
}
// check_step(who, t): a schedule's step, counted from 1
inline void check_step(std::string_view who, std::int64_t t) {
  check_steps(who, "the step", t, t >= 1, ">= 1 (steps count from 1: opt.steps() + 1)");
}
}  // namespace detail

/// @brief The same rate at every step.
class constant_rate {
 public:
  /// @param rate finite and >= 0
  explicit constant_rate(double rate) : rate_(rate) {
    detail::check_non_negative("constant_rate", "rate", rate);
  }
  /// the rate of step t (t >= 1)
  double operator()(std::int64_t t) const {
    detail::check_step("constant_rate", t);
    return rate_;
  }
  double rate() const { return rate_; }

 private:
  double rate_;
};

/// @brief Linear warmup from 0 to peak over the first warmup_steps steps, then cosine decay to
/// final_fraction * peak at step total_steps, and that rate after it (see the top of
/// optim/schedule.hpp).
class warmup_cosine {
 public:
  /// @param peak           the rate at step warmup_steps: finite and >= 0
  /// @param warmup_steps   >= 0 (0: the decay starts at step 1)
  /// @param total_steps    the step the decay ends at: >= warmup_steps
  /// @param final_fraction the final rate over the peak: in [0, 1]
  warmup_cosine(double peak, std::int64_t warmup_steps, std::int64_t total_steps,
                double final_fraction = 0)
      : peak_(peak), warmup_(warmup_steps), total_(total_steps), final_(final_fraction) {
    detail::check_non_negative("warmup_cosine", "peak", peak);
    detail::check_steps("warmup_cosine", "warmup_steps", warmup_steps, warmup_steps >= 0, ">= 0");
    detail::check_steps("warmup_cosine", "total_steps", total_steps, total_steps >= warmup_steps,
                        ">= warmup_steps (" + std::to_string(warmup_steps) + ")");
    detail::check_option("warmup_cosine", "final_fraction", final_fraction,
                         final_fraction >= 0 && final_fraction <= 1, "in [0, 1]");
  }
  /// the rate of step t (t >= 1)
  double operator()(std::int64_t t) const {
    detail::check_step("warmup_cosine", t);
    if (warmup_ > 0 && t <= warmup_)
      return peak_ * static_cast<double>(t) / static_cast<double>(warmup_);
    const double span = static_cast<double>(std::max<std::int64_t>(1, total_ - warmup_));
    const double u = std::min(1.0, static_cast<double>(t - warmup_) / span);
    return peak_ * (final_ + (1 - final_) * 0.5 * (1.0 + std::cos(std::numbers::pi * u)));
  }
  double peak() const { return peak_; }
  std::int64_t warmup_steps() const { return warmup_; }
  std::int64_t total_steps() const { return total_; }
  double final_fraction() const { return final_; }

 private:
  double peak_;
  std::int64_t warmup_, total_;
  double final_;
};

/// @brief The Transformer paper's schedule: scale * min(t^-1/2, t * warmup^-3/2) (see the top
/// of optim/schedule.hpp); scale = 1 / sqrt(d_model) is the paper's.
class inverse_sqrt {
 public:
  /// @param scale        finite and >= 0
  /// @param warmup_steps >= 0 (0: scale / sqrt(t) from step 1)
  inverse_sqrt(double scale, std::int64_t warmup_steps) : scale_(scale), warmup_(warmup_steps) {
    detail::check_non_negative("inverse_sqrt", "scale", scale);
    detail::check_steps("inverse_sqrt", "warmup_steps", warmup_steps, warmup_steps >= 0, ">= 0");
  }
  /// the rate of step t (t >= 1)
  double operator()(std::int64_t t) const {
    detail::check_step("inverse_sqrt", t);
    const auto step = static_cast<double>(t);
    const double decay = 1 / std::sqrt(step);
    if (warmup_ == 0) return scale_ * decay;
    const auto w = static_cast<double>(warmup_);
    return scale_ * std::min(decay, step / (w * std::sqrt(w)));
  }
  double scale() const { return scale_; }
  std::int64_t warmup_steps() const { return warmup_; }

 private:
  double scale_;
  std::int64_t warmup_;
};

/// @brief Sets opt's learning rate to schedule(opt.steps() + 1), the rate of its next step, and
/// returns it. Call it before each step(). Every rank alike (no communication).
/// @param schedule any callable double(std::int64_t): constant_rate, warmup_cosine,
///                 inverse_sqrt or one's own
template <class Schedule>
double apply_schedule(optimizer& opt, const Schedule& schedule) {
  const double rate = schedule(opt.steps() + 1);
  opt.set_learning_rate(rate);
  return rate;
}

}  // namespace meshpp
