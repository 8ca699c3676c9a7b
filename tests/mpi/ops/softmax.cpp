// softmax<Dim>, log_softmax<Dim>, logsumexp<Dim> and argmax<Dim> (ops/softmax.hpp) forward,
// against plain loops over the gathered input, over a split dim and a whole one, by both of
// softmax's paths: row by row (Dim last and whole: [batch, hidden] over hidden, replicated or
// batch split) and the generic reduce (Dim split, or not last). Values near +-1000 stay exact,
// a row of -inf gives logsumexp -inf, argmax takes the lowest index on ties under every layout.
// Then what they communicate (mesh counters): over a split dim exactly two allreduces (the
// maximum, then the sum) of the reduced slice over the mesh dim it is split over, over a whole
// dim nothing.
// (iota, where's dim order, plain softmax_cross_entropy, item(), no_grad and stop_gradient:
// softmax_helpers.cpp; gradients: grad_softmax.cpp. The split keeps each file quick to compile.)
#include <meshpp/core/counters.hpp>
#include <meshpp/ops/softmax.hpp>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <type_traits>
#include <vector>

#include "softmax_check.hpp"

using namespace softmax_test;

namespace {

// The input of the value checks: normal, from the global index
template <class Mesh>
auto normal_input(const Mesh& m) {
  return mp::random_normal<double, batch, hidden>(m, sizes, 1);
}

// The input of the stability checks: about 1000 in rows 0 to 2 (differences of order 1 along
// both dims), about -1000 in row 3: exp of any of them overflows or underflows
template <class Mesh>
auto large_input(const Mesh& m) {
  return mp::generate<double, batch, hidden>(m, sizes, [](const auto& g) {
    const double noise = std::sin(1.7 * static_cast<double>(g[0] * nh + g[1])) * 3.0;
    return (g[0] == nb - 1 ? -1000.0 : 1000.0) + noise;
  });
}

// The input with infinities: row 1 has -inf at hidden 0, 5 and 6 (as a causal mask makes);
// row 2 is -inf throughout (logsumexp -inf, softmax NaN as 0/0); the rest normal
template <class Mesh>
auto input_with_infinities(const Mesh& m) {
  return mp::generate<double, batch, hidden>(m, sizes, [](const auto& g) {
    const double inf = std::numeric_limits<double>::infinity();
    if (g[0] == 2) return -inf;
    if (g[0] == 1 && (g[1] == 0 || g[1] == 5 || g[1] == 6)) return -inf;
    return std::cos(2.3 * static_cast<double>(g[0] * nh + g[1]));
  });
}

// check_values(x, tol): every function over both dims against the plain loops, x double
template <class X>
void check_values(const X& x, double tol) {
  const auto whole = mp::gather(x);
  for (std::size_t axis : {0, 1}) {
    CAPTURE(axis);
    const auto got_softmax =
        axis == 1 ? mp::gather(mp::softmax<hidden>(x)) : mp::gather(mp::softmax<batch>(x));
    CHECK_ALL_RANKS(agrees(got_softmax, reference::softmax(whole, axis), tol));
    const auto got_log =
        axis == 1 ? mp::gather(mp::log_softmax<hidden>(x)) : mp::gather(mp::log_softmax<batch>(x));
    CHECK_ALL_RANKS(agrees(got_log, reference::log_softmax(whole, axis), tol));
    const auto got_lse =
        axis == 1 ? mp::gather(mp::logsumexp<hidden>(x)) : mp::gather(mp::logsumexp<batch>(x));
    CHECK_ALL_RANKS(agrees(got_lse, reference::logsumexp(whole, axis), tol));
  }
}

template <class Mesh>
void check_forward(const Mesh& m) {
  CAPTURE(m.describe());
  using tensor_t = mp::tensor_of<double, mp::shape<batch, hidden>, Mesh>;
  // the result types: softmax and log_softmax keep x's dims and layout, logsumexp drops Dim
  const auto x = normal_input(m);
  static_assert(std::is_same_v<decltype(mp::softmax<hidden>(x)), tensor_t>);
  static_assert(std::is_same_v<decltype(mp::log_softmax<batch>(x)), tensor_t>);
  static_assert(std::is_same_v<decltype(mp::logsumexp<hidden>(x)),
                               mp::tensor_of<double, mp::shape<batch>, Mesh>>);
  static_assert(std::is_same_v<decltype(mp::logsumexp<batch>(x)),
                               mp::tensor_of<double, mp::shape<hidden>, Mesh>>);
  check_values(x, 1e-13);
  check_values(large_input(m), 1e-13);

  // an expression is evaluated once, then taken as a tensor
  const auto whole = mp::gather(x);
  const auto twice = reference::map(whole, [](double v) { return 2 * v - 1; });
  CHECK_ALL_RANKS(
      agrees(mp::gather(mp::softmax<hidden>(x * 2.0 - 1.0)), reference::softmax(twice, 1), 1e-13));
  CHECK_ALL_RANKS(
      agrees(mp::gather(mp::softmax<batch>(x * 2.0 - 1.0)), reference::softmax(twice, 0), 1e-13));
  CHECK_ALL_RANKS(agrees(mp::gather(mp::logsumexp<hidden>(x * 2.0 - 1.0)),
                         reference::logsumexp(twice, 1), 1e-13));

  // infinities: over hidden, row 2's logsumexp is -inf and its softmax NaN, row 1's masked
  // entries get probability 0 and log-probability -inf; the other rows are untouched
  const auto xi = input_with_infinities(m);
  const auto whole_inf = mp::gather(xi);
  const auto lse = mp::gather(mp::logsumexp<hidden>(xi));
  CHECK_ALL_RANKS(std::isinf(lse(2)) && lse(2) < 0);
  CHECK_ALL_RANKS(agrees(lse, reference::logsumexp(whole_inf, 1), 1e-13));
  CHECK_ALL_RANKS(
      agrees(mp::gather(mp::softmax<hidden>(xi)), reference::softmax(whole_inf, 1), 1e-13));
  CHECK_ALL_RANKS(
      agrees(mp::gather(mp::log_softmax<hidden>(xi)), reference::log_softmax(whole_inf, 1), 1e-13));
  // over batch every column has a finite entry
  CHECK_ALL_RANKS(
      agrees(mp::gather(mp::softmax<batch>(xi)), reference::softmax(whole_inf, 0), 1e-13));
  CHECK_ALL_RANKS(
      agrees(mp::gather(mp::logsumexp<batch>(xi)), reference::logsumexp(whole_inf, 0), 1e-13));

  // float: values near 1000 stay finite and right to float's precision
  const auto xf = mp::eval(mp::cast<float>(large_input(m)));
  const auto whole_f = reference::to_double(mp::gather(xf));
  CHECK_ALL_RANKS(
      agrees(mp::gather(mp::softmax<hidden>(xf)), reference::softmax(whole_f, 1), 1e-5));
  CHECK_ALL_RANKS(agrees(mp::gather(mp::softmax<batch>(xf)), reference::softmax(whole_f, 0), 1e-5));
  CHECK_ALL_RANKS(
      agrees(mp::gather(mp::logsumexp<hidden>(xf)), reference::logsumexp(whole_f, 1), 1e-6));
}

// small integers in {0, 1, 2} (ties everywhere), with rows made to tie across shards: row 0
// all 1 (argmax 0), row 1 its maximum 5 at hidden 7 and 3 (3), row 2 at 1 and 6 (1)
template <class Mesh>
auto tied_input(const Mesh& m) {
  return mp::generate<double, batch, hidden>(m, sizes, [](const auto& g) {
    if (g[0] == 0) return 1.0;
    if (g[0] == 1 && (g[1] == 7 || g[1] == 3)) return 5.0;
    if (g[0] == 2 && (g[1] == 1 || g[1] == 6)) return 5.0;
    return static_cast<double>((g[0] * 5 + g[1] * 3 + g[0] * g[1]) % 3);
  });
}

template <class Mesh>
void check_argmax(const Mesh& m) {
  CAPTURE(m.describe());
  const auto x = tied_input(m);
  const auto whole = mp::gather(x);
  const auto over_hidden = mp::argmax<hidden>(x);
  static_assert(std::is_same_v<decltype(over_hidden),
                               const mp::tensor_of<std::int32_t, mp::shape<batch>, Mesh>>);
  const auto got = mp::gather(over_hidden);
  CHECK_ALL_RANKS(agrees(got, reference::argmax(whole, 1), 0));
  CHECK_ALL_RANKS(got(0) == 0 && got(1) == 3 && got(2) == 1);
  CHECK_ALL_RANKS(agrees(mp::gather(mp::argmax<batch>(x)), reference::argmax(whole, 0), 0));
  // another index type, and an expression
  const auto wide = mp::argmax<hidden, std::int64_t>(x);
  static_assert(std::is_same_v<typename decltype(wide)::value_type, std::int64_t>);
  CHECK_ALL_RANKS(agrees(mp::gather(wide), reference::argmax(whole, 1), 0));
  CHECK_ALL_RANKS(agrees(mp::gather(mp::argmax<hidden>(-x)),
                         reference::argmax(reference::map(whole, [](double v) { return -v; }), 1),
                         0));
  // normal values: no ties
  const auto n = normal_input(m);
  CHECK_ALL_RANKS(agrees(mp::gather(mp::argmax<batch>(n)), reference::argmax(mp::gather(n), 0), 0));
}

// collectives_other_than_allreduce(c): calls of every other kind of collective
std::uint64_t collectives_other_than_allreduce(const mp::counters& c) {
  std::uint64_t calls = 0;
  for (std::size_t k = 0; k < mp::collective_kinds; ++k) {
    const auto kind = static_cast<mp::collective>(k);
    if (kind != mp::collective::allreduce) calls += c.total(kind).calls;
  }
  return calls;
}

// communicates(m, f, mask, values): f() makes exactly two allreduces over the mesh dims in mask
// (none when mask is 0), of `values` values each, and no other collective
template <class Mesh, class F>
bool communicates(const Mesh& m, F&& f, unsigned mask, std::uint64_t values) {
  m.counters().reset();
  f();
  const auto& c = m.counters();
  const auto all = c.total(mp::collective::allreduce);
  // a group of one rank counts nothing
  const std::uint64_t calls = mask == 0 || c.group_of_one(mask) ? 0 : 2;
  const bool ok = all.calls == calls && c.at(mp::collective::allreduce, mask).calls == calls &&
                  all.values == calls * values && collectives_other_than_allreduce(c) == 0;
  if (!ok) MESSAGE("rank " << world().rank() << ":\n" << c.report());
  return ok;
}
}  // namespace

TEST_CASE("softmax, log_softmax, logsumexp: values against plain loops, split layout") {
  for (const auto& shape : mesh_shapes()) check_forward(split_mesh(shape));
}
TEST_CASE("softmax, log_softmax, logsumexp: values against plain loops, replicated (row path)") {
  for (const auto& shape : mesh_shapes()) check_forward(replicated_mesh(shape));
}
TEST_CASE("softmax, log_softmax, logsumexp: values against plain loops, batch split (row path)") {
  for (const auto& shape : mesh_shapes()) check_forward(batch_split_mesh(shape));
}

TEST_CASE("argmax: the lowest index on ties, the same under every layout") {
  for (const auto& shape : mesh_shapes()) {
    check_argmax(split_mesh(shape));
    check_argmax(replicated_mesh(shape));
    check_argmax(batch_split_mesh(shape));
    // and bit for bit the same tensor between layouts
    const auto a = mp::gather(mp::argmax<hidden>(tied_input(split_mesh(shape))));
    CHECK_ALL_RANKS(meshpp_test::bit_equal(
        a, mp::gather(mp::argmax<hidden>(tied_input(replicated_mesh(shape))))));
  }
}

TEST_CASE("over a split dim: two allreduces of the reduced slice; over a whole dim: none") {
  for (const auto& shape : mesh_shapes()) {
    const std::uint64_t r = static_cast<std::uint64_t>(shape[0]),
                        c = static_cast<std::uint64_t>(shape[1]);
    constexpr unsigned over_rows = split_mesh::mask_v<rows>, over_cols = split_mesh::mask_v<cols>;
    {
      // hidden split over cols: the maximum and the sum of the [batch/rows] slice, over cols
      const split_mesh m(shape);
      CAPTURE(m.describe());
      const auto x = normal_input(m);
      CHECK_ALL_RANKS(communicates(
          m, [&] { (void)mp::softmax<hidden>(x); }, over_cols, nb / r));
      CHECK_ALL_RANKS(communicates(
          m, [&] { (void)mp::log_softmax<hidden>(x); }, over_cols, nb / r));
      CHECK_ALL_RANKS(communicates(
          m, [&] { (void)mp::logsumexp<hidden>(x); }, over_cols, nb / r));
      CHECK_ALL_RANKS(communicates(
          m, [&] { (void)mp::argmax<hidden>(x); }, over_cols, nb / r));
      // batch split over rows: the [hidden/cols] slice, over rows
      CHECK_ALL_RANKS(communicates(
          m, [&] { (void)mp::softmax<batch>(x); }, over_rows, nh / c));
      CHECK_ALL_RANKS(communicates(
          m, [&] { (void)mp::logsumexp<batch>(x); }, over_rows, nh / c));
    }
    {
      // hidden whole (the row path, batch split or not): nothing
      const batch_split_mesh m(shape);
      CAPTURE(m.describe());
      const auto x = normal_input(m);
      CHECK_ALL_RANKS(communicates(
          m, [&] { (void)mp::softmax<hidden>(x); }, 0, 0));
      CHECK_ALL_RANKS(communicates(
          m, [&] { (void)mp::log_softmax<hidden>(x); }, 0, 0));
      CHECK_ALL_RANKS(communicates(
          m, [&] { (void)mp::logsumexp<hidden>(x); }, 0, 0));
      CHECK_ALL_RANKS(communicates(
          m, [&] { (void)mp::argmax<hidden>(x); }, 0, 0));
      const replicated_mesh w(shape);
      const auto y = normal_input(w);
      CHECK_ALL_RANKS(communicates(
          w, [&] { (void)mp::softmax<hidden>(y); }, 0, 0));
      CHECK_ALL_RANKS(communicates(
          w, [&] { (void)mp::softmax<batch>(y); }, 0, 0));
    }
  }
}

TEST_CASE("exp_shifted: float exp within 1.5 ulp of exp on [-87.3, 88.3], 0 below, inf, NaN") {
  // a million points spread over the range and the neighbourhood of 0 on a log scale, against
  // exp in double rounded to float; shifted by 0 and by 1 (the shift is subtracted in float
  // first, as softmax does)
  std::vector<float> xs;
  constexpr std::size_t points = 1000003;
  for (std::size_t i = 0; i <= points; ++i)
    xs.push_back(-87.33f + (88.37f + 87.33f) * static_cast<float>(i) / float(points));
  for (float x = 1e-7f; x < 1.0f; x *= 1.001f) {
    xs.push_back(x);
    xs.push_back(-x);
  }
  xs.push_back(0.0f);
  for (const float shift : {0.0f, 1.0f}) {
    std::vector<float> got(xs.begin(), xs.end());
    mp::detail::exp_shifted(got.data(), got.size(), shift);
    double worst_ulps = 0;
    float worst_x = 0;
    for (std::size_t i = 0; i < xs.size(); ++i) {
      if (xs[i] - shift < -87.33f) continue;  // exp subnormal: 0 from xsimd, checked below
      const double want = std::exp(static_cast<double>(xs[i] - shift));
      const float rounded = static_cast<float>(want);
      const double ulp =
          static_cast<double>(std::nextafter(rounded, std::numeric_limits<float>::infinity())) -
          static_cast<double>(rounded);
      const double ulps = std::fabs(static_cast<double>(got[i]) - want) / ulp;
      if (!(ulps <= worst_ulps)) {
        worst_ulps = ulps;
        worst_x = xs[i];
      }
    }
    CAPTURE(shift);
    CAPTURE(worst_x);
    CHECK_ALL_RANKS(worst_ulps <= 1.5);
  }
  // the special values, each at every position of a batch and in the remainder
  constexpr float inf = std::numeric_limits<float>::infinity();
  const float specials[] = {-inf, -90.0f, 0.0f, inf, std::numeric_limits<float>::quiet_NaN()};
  for (std::size_t at = 0; at < 19; ++at) {
    for (const float x : specials) {
      std::vector<float> v(19, 0.5f);
      v[at] = x;
      mp::detail::exp_shifted(v.data(), v.size(), 0.0f);
      CAPTURE(at);
      CAPTURE(x);
      if (std::isnan(x))
        CHECK_ALL_RANKS(std::isnan(v[at]));
      else if (x == inf)
        CHECK_ALL_RANKS(v[at] == inf);
      else if (x == 0.0f)
        CHECK_ALL_RANKS(v[at] == 1.0f);
      else if (x == -inf)
        CHECK_ALL_RANKS(v[at] == 0.0f);
      else  // exp(-90) is subnormal: 0 from xsimd, the subnormal from std::exp in the remainder
        CHECK_ALL_RANKS((v[at] >= 0.0f && v[at] < std::numeric_limits<float>::min()));
    }
  }
  std::vector<double> d{-2.0, 0.0, 1.5};
  mp::detail::exp_shifted(d.data(), d.size(), 0.5);
  CHECK_ALL_RANKS((d[0] == std::exp(-2.5) && d[1] == std::exp(-0.5) && d[2] == std::exp(1.0)));
}

TEST_CASE(
    "softmax over float rows (the vectorized exp): within (4 + |x - max|) eps of a double "
    "reference") {
  // 37 per row: full lanes of 8 and a remainder; values up to +-30 and masked (-inf) entries
  const auto float_sizes = mp::extents{batch{} = 3, hidden{} = 37};
  for (const auto& shape : mesh_shapes()) {
    const replicated_mesh m(shape);
    const auto x = mp::generate<float, batch, hidden>(m, float_sizes, [](const auto& g) {
      if (g[1] % 5 == 3) return -std::numeric_limits<float>::infinity();
      return 30.0f * std::sin(0.7f * static_cast<float>(g[0] * 37 + g[1]));
    });
    const auto got = mp::gather(mp::softmax<hidden>(x));
    const auto in = mp::gather(x);
    double worst = 0;
    for (std::size_t b = 0; b < 3; ++b) {
      double m_row = -std::numeric_limits<double>::infinity(), sum = 0;
      for (std::size_t h = 0; h < 37; ++h) m_row = std::max(m_row, double(in(b, h)));
      for (std::size_t h = 0; h < 37; ++h) sum += std::exp(double(in(b, h)) - m_row);
      for (std::size_t h = 0; h < 37; ++h) {
        const double want = std::exp(double(in(b, h)) - m_row) / sum;
        // relative error in units of eps (4 + |x - max|): rounding x - max to float alone
        // moves exp's result by |x - max| eps / 2 relative, with std::exp as with exp_shifted
        const double shifted = std::fabs(double(in(b, h)) - m_row);
        const double err = std::fabs(double(got(b, h)) - want) /
                           std::max(want, double(std::numeric_limits<float>::min())) /
                           (double(std::numeric_limits<float>::epsilon()) * (4 + shifted));
        if (!(err <= worst)) worst = err;
        if (h % 5 == 3) CHECK_ALL_RANKS(got(b, h) == 0.0f);
      }
    }
    CAPTURE(worst);
    CHECK_ALL_RANKS(worst <= 1.0);
  }
}
