// Learning-rate schedules (optim/schedule.hpp): constant_rate, warmup_cosine and inverse_sqrt
// against their formulas written out here; warmup_cosine against the schedule the Transformer
// example computed itself before it used the library's, bit for bit (its losses are unchanged);
// apply_schedule setting the rate of opt.steps() + 1 before each step, which SGD then uses;
// arguments out of range and steps below 1 throw meshpp::error naming the value.
#include <meshpp/optim/schedule.hpp>
#include <meshpp/optim/sgd.hpp>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <string_view>

#include "optim_check.hpp"

namespace mp = meshpp;
using namespace optim_check;
using meshpp_test::world;

namespace {

// The Transformer example's own schedule before the library had one
// (examples/transformer/transformer.hpp), as it was: step counted from 1, warmup < steps (or
// steps 0)
double example_rate(double learning_rate, std::size_t steps, std::size_t warmup, std::size_t step) {
  if (warmup > 0 && step <= warmup)
    return learning_rate * static_cast<double>(step) / static_cast<double>(warmup);
  const double span = static_cast<double>(std::max<std::size_t>(1, steps - warmup));
  const double t = std::min(1.0, static_cast<double>(step - warmup) / span);
  return learning_rate * (0.1 + 0.9 * 0.5 * (1.0 + std::cos(3.141592653589793 * t)));
}

bool about_equal(double a, double b) {
  return std::abs(a - b) <= 1e-15 * std::max(1.0, std::abs(b));
}

}  // namespace

TEST_CASE("constant_rate") {
  const mp::constant_rate s(0.25);
  CHECK(s.rate() == 0.25);
  for (std::int64_t t : {1, 2, 1000, 1 << 30}) CHECK(s(t) == 0.25);
  CHECK(mp::constant_rate(0)(1) == 0);
}

TEST_CASE("warmup_cosine: linear warmup, cosine decay to the final fraction, then constant") {
  const mp::warmup_cosine s(0.01, 10, 110, 0.2);
  CHECK(s.peak() == 0.01);
  CHECK(s.warmup_steps() == 10);
  CHECK(s.total_steps() == 110);
  CHECK(s.final_fraction() == 0.2);
  for (std::int64_t t = 1; t <= 10; ++t)
    CHECK(about_equal(s(t), 0.01 * static_cast<double>(t) / 10));
  CHECK(s(10) == 0.01);  // the peak at the end of the warmup
  for (std::int64_t t = 11; t <= 110; ++t) {
    const double u = static_cast<double>(t - 10) / 100;
    CHECK(about_equal(s(t), 0.01 * (0.2 + 0.8 * 0.5 * (1 + std::cos(std::acos(-1.0) * u)))));
    CHECK(s(t) <= s(t - 1));  // decreasing
  }
  CHECK(about_equal(s(60), 0.01 * 0.6));  // halfway: the mean of peak and final
  CHECK(about_equal(s(110), 0.002));      // the final rate at total_steps, and after it
  CHECK(s(111) == s(110));
  CHECK(s(1000000) == s(110));
  // no warmup: the decay starts at step 1; final_fraction 0 by default: down to 0
  const mp::warmup_cosine cosine(1.0, 0, 4);
  CHECK(about_equal(cosine(1), 0.5 * (1 + std::cos(std::acos(-1.0) / 4))));
  CHECK(about_equal(cosine(2), 0.5));
  CHECK(cosine(4) == 0);
  // total_steps == warmup_steps: warmup, then the final rate at once
  const mp::warmup_cosine short_run(1.0, 4, 4, 0.5);
  CHECK(short_run(4) == 1.0);
  CHECK(short_run(5) == 0.5);
  // no steps at all (a run of --steps 0): the final rate, at any step asked
  CHECK(mp::warmup_cosine(1.0, 0, 0, 0.1)(1) == 0.1);
}

TEST_CASE("warmup_cosine gives the Transformer example's former rates, bit for bit") {
  struct setting {
    double rate;
    std::size_t steps, warmup;
  };
  // the example's defaults and the settings its tests run with
  for (const setting r :
       {setting{2e-3, 3000, 100}, setting{2e-3, 50, 10}, setting{2e-3, 300, 30},
        setting{2e-3, 80, 8}, setting{2e-3, 4, 1}, setting{1e-2, 7, 0}, setting{3e-4, 1, 0}}) {
    CAPTURE(r.steps);
    CAPTURE(r.warmup);
    const mp::warmup_cosine s(r.rate, static_cast<std::int64_t>(r.warmup),
                              static_cast<std::int64_t>(r.steps), 0.1);
    bool all_equal = true;
    for (std::size_t step = 1; step <= r.steps; ++step)
      all_equal = all_equal && s(static_cast<std::int64_t>(step)) ==
                                   example_rate(r.rate, r.steps, r.warmup, step);
    CHECK(all_equal);
  }
}

TEST_CASE("inverse_sqrt: the Transformer paper's schedule") {
  // lrate = d_model^-0.5 * min(step^-0.5, step * warmup_steps^-1.5), d_model 512, warmup 4000
  const double scale = 1 / std::sqrt(512.0);
  const mp::inverse_sqrt s(scale, 4000);
  CHECK(s.scale() == scale);
  CHECK(s.warmup_steps() == 4000);
  for (std::int64_t t : {1, 2, 100, 3999, 4000, 4001, 10000, 100000}) {
    CAPTURE(t);
    const auto step = static_cast<double>(t);
    CHECK(about_equal(s(t), scale * std::min(std::pow(step, -0.5), step * std::pow(4000.0, -1.5))));
  }
  CHECK(about_equal(s(4000), scale / std::sqrt(4000.0)));  // the peak
  CHECK(s(3999) < s(4000));
  CHECK(s(4001) < s(4000));
  const mp::inverse_sqrt no_warmup(2.0, 0);
  CHECK(no_warmup(1) == 2.0);
  CHECK(about_equal(no_warmup(4), 1.0));
}

TEST_CASE("schedules: arguments out of range and steps below 1 throw meshpp::error") {
  const double nan = std::nan("");
  const double inf = HUGE_VAL;
  using parts = std::initializer_list<std::string_view>;
  auto throws = [](auto make, parts p) { CHECK(meshpp_test::throws_with<mp::error>(make, p)); };
  throws([] { (void)mp::constant_rate(-0.1); },
         {"meshpp::constant_rate: rate must be finite and >= 0, got -0.1"});
  throws([&] { (void)mp::constant_rate{nan}; }, {"meshpp::constant_rate: rate", "got nan"});
  throws([&] { (void)mp::warmup_cosine(inf, 1, 2); }, {"meshpp::warmup_cosine: peak", "got inf"});
  throws([] { (void)mp::warmup_cosine(1e-3, -1, 2); },
         {"meshpp::warmup_cosine: warmup_steps must be >= 0, got -1"});
  throws([] { (void)mp::warmup_cosine(1e-3, 100, 50); },
         {"meshpp::warmup_cosine: total_steps must be >= warmup_steps (100), got 50"});
  throws([] { (void)mp::warmup_cosine(1e-3, 10, 50, 1.5); },
         {"meshpp::warmup_cosine: final_fraction must be in [0, 1], got 1.5"});
  throws([&] { (void)mp::warmup_cosine(1e-3, 10, 50, nan); },
         {"meshpp::warmup_cosine: final_fraction", "got nan"});
  throws([] { (void)mp::inverse_sqrt(-1, 10); },
         {"meshpp::inverse_sqrt: scale must be finite and >= 0, got -1"});
  throws([] { (void)mp::inverse_sqrt(1, -5); },
         {"meshpp::inverse_sqrt: warmup_steps must be >= 0, got -5"});
  // step 0: the rate of the first step is schedule(1) (opt.steps() + 1)
  throws([] { (void)mp::constant_rate(1)(0); },
         {"meshpp::constant_rate: the step must be >= 1", "got 0"});
  throws([] { (void)mp::warmup_cosine(1, 1, 2)(0); },
         {"meshpp::warmup_cosine: the step must be >= 1", "got 0"});
  throws([] { (void)mp::inverse_sqrt(1, 1)(-3); },
         {"meshpp::inverse_sqrt: the step must be >= 1", "got -3"});
}

TEST_CASE("apply_schedule sets the rate of the next step, which the step uses") {
  split_mesh m(meshpp_test::grid2(world().size()));
  using matrix_t = mp::tensor_of<double, mp::shape<rows, cols>, split_mesh>;
  tracked<matrix_t, sgd_reference> w(m, 1, sgd_reference{0, 0, false, 0});
  mp::sgd opt({.learning_rate = 0.5}, w.var);
  const mp::warmup_cosine schedule(0.1, 2, 6, 0.1);
  for (int k = 0; k < 8; ++k) {
    CAPTURE(k);
    w.set_gradient(k);
    const double rate = mp::apply_schedule(opt, schedule);
    CHECK(rate == schedule(k + 1));  // before step k + 1 (counted from 1)
    CHECK(opt.learning_rate() == rate);
    opt.step();
    CHECK(opt.steps() == k + 1);
    w.ref.lr = rate;
    w.reference_step(k);
    CHECK(w.error() < tol);
  }
  // any callable double(std::int64_t) is a schedule; its rate out of range throws from
  // set_learning_rate, as a rate set by hand would
  CHECK(mp::apply_schedule(opt, [](std::int64_t t) { return 1.0 / static_cast<double>(t); }) ==
        1.0 / 9);
  CHECK_ALL_RANKS(meshpp_test::throws_with<mp::error>(
      [&] { mp::apply_schedule(opt, [](std::int64_t) { return -1.0; }); },
      {"learning_rate", "got -1"}));
}
