// item(), where with traced branches, no_grad / grad_enabled and stop_gradient: the small
// autodiff pieces the Transformer added, each against a plain reference over the gathered
// whole arrays (no mesh), under the split layout (batch:rows, hidden:cols) and replicated, on
// every mesh shape (grid, 1xN, Nx1):
//   item()                 of a 0-d tensor and of a traced one: the reference sum, bit for bit
//                          the same on every rank, read without communication
//   where(c, a, b)         a bool tensor condition and a traced branch, the other a scalar: the
//                          value, and the exact gradient of its sum (1 where x was taken,
//                          counted over the dims the condition adds)
//   no_grad, grad_enabled  nothing is recorded in the scope (no backward step, no inputs kept,
//                          a loss from it gives x a zero gradient), scopes nest
//   stop_gradient(x)       x's value itself, through which no gradient flows
// (Forward of iota, where and the plain cross-entropy: softmax_helpers.cpp; gradients by
// central differences: grad_softmax.cpp.)
#include <meshpp/autodiff/elementwise.hpp>
#include <meshpp/autodiff/gradients.hpp>
#include <meshpp/autodiff/reduce.hpp>
#include <meshpp/autodiff/softmax.hpp>
#include <meshpp/core/counters.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <utility>

#include <boost/mpi/collectives/all_reduce.hpp>
#include <boost/mpi/operations.hpp>

#include "../ops/softmax_helpers.hpp"

using namespace softmax_test;

namespace {

// same_on_every_rank(v): every rank holds the same bits
bool same_on_every_rank(double v) {
  double lo = 0, hi = 0;
  boost::mpi::all_reduce(world(), v, lo, boost::mpi::minimum<double>());
  boost::mpi::all_reduce(world(), v, hi, boost::mpi::maximum<double>());
  return lo == v && hi == v;
}

// collective_calls(m): the collectives m has made since its counters were reset, of any kind
template <class Mesh>
std::uint64_t collective_calls(const Mesh& m) {
  std::uint64_t calls = 0;
  for (std::size_t k = 0; k < mp::collective_kinds; ++k)
    calls += m.counters().total(static_cast<mp::collective>(k)).calls;
  return calls;
}

template <class Mesh>
void check_item(const Mesh& m) {
  CAPTURE(m.describe());
  const auto x = mp::random_normal<double, batch, hidden>(m, sizes, 1);
  const auto whole = mp::gather(x);
  double want = 0;
  for (std::size_t i = 0; i < whole.size(); ++i) want += whole.data()[i];
  const auto total = mp::reduce_sum(x);
  static_assert(std::is_same_v<decltype(total.item()), double>);
  m.counters().reset();
  const double got = total.item();
  CHECK_ALL_RANKS(collective_calls(m) == 0);  // it is whole on every rank: nothing to send
  CHECK_ALL_RANKS(std::abs(got - want) <= 1e-13 * std::max(1.0, std::abs(want)));
  CHECK_ALL_RANKS(same_on_every_rank(got));
  // of a traced 0-d tensor: the same value
  const auto traced_total = mp::reduce_sum(mp::trace(x));
  static_assert(std::is_same_v<decltype(traced_total.item()), double>);
  CHECK_ALL_RANKS(traced_total.item() == got);
  // float, a mean
  const auto mean = mp::reduce_mean(mp::cast<float>(x));
  static_assert(std::is_same_v<decltype(mean.item()), float>);
  const float mean_got = mean.item();
  CHECK_ALL_RANKS(std::abs(mean_got - want / (nb * nh)) <= 1e-6);
  CHECK_ALL_RANKS(same_on_every_rank(mean_got));
}

// where with traced branches: the value, and the exact gradient of the sum (1 where the traced
// branch was taken, summed over the dims the result gained)
template <class Mesh>
void check_traced_where(const Mesh& m) {
  CAPTURE(m.describe());
  const where_operands o(m);
  // references, not a structured binding: lambdas below capture them, which C++20 allows of
  // bindings but clang before 16 rejects
  const auto& x = o.x;
  const auto& c = o.c;
  const auto& below = o.below;
  const auto& X = o.X;
  const auto& C = o.C;
  const auto& S = o.S;
  const auto xt = mp::trace(x);
  {
    const auto w = mp::where(c, xt, -1.0);
    static_assert(std::is_same_v<decltype(w), const mp::traced<double_t2<Mesh>>>);
    CHECK_ALL_RANKS(
        agrees(mp::gather(w.value()),
               tabulate<2>({nb, nh},
                           [&](std::size_t b, std::size_t h) { return C(h, b) ? X(b, h) : -1.0; }),
               0));
    const auto [g] = mp::gradients(mp::reduce_sum(w), xt);
    CHECK_ALL_RANKS(
        agrees(mp::gather(g),
               tabulate<2>({nb, nh}, [&](std::size_t b, std::size_t h) { return C(h, b); }), 0));
  }
  {
    const auto w = mp::where(c, 2.0, xt);
    const auto [g] = mp::gradients(mp::reduce_sum(w), xt);
    CHECK_ALL_RANKS(
        agrees(mp::gather(g),
               tabulate<2>({nb, nh}, [&](std::size_t b, std::size_t h) { return !C(h, b); }), 0));
  }
  {
    // the result gains seq from the condition; x's gradient sums it out: the number of s < b
    const auto w = mp::where(below, xt, 0.0);
    static_assert(std::is_same_v<shape_of<decltype(w.value())>, mp::shape<batch, hidden, seq>>);
    CHECK_ALL_RANKS(
        agrees(mp::gather(w.value()),
               tabulate<3>({nb, nh, ns}, [&](std::size_t b, std::size_t h,
                                             std::size_t s) { return S(s, b) ? X(b, h) : 0.0; }),
               0));
    const auto [g] = mp::gradients(mp::reduce_sum(w), xt);
    CHECK_ALL_RANKS(agrees(
        mp::gather(g),
        tabulate<2>({nb, nh}, [](std::size_t b, std::size_t) { return b < ns ? b : ns; }), 0));
  }
}

// is_zero(t): every element of the gathered t is 0
template <class T>
bool is_zero(const T& t) {
  const auto whole = mp::gather(t);
  for (std::size_t i = 0; i < whole.size(); ++i) {
    if (whole.data()[i] != 0) return false;
  }
  return true;
}

template <class Mesh>
void check_no_grad(const Mesh& m) {
  CAPTURE(m.describe());
  const auto x = mp::random_normal<double, batch, hidden>(m, sizes, 1);
  const auto whole = mp::gather(x);
  const auto xt = mp::trace(x);
  CHECK_ALL_RANKS(mp::grad_enabled());
  {
    const mp::no_grad outer;
    CHECK_ALL_RANKS(!mp::grad_enabled());
    {
      const mp::no_grad inner;
      CHECK_ALL_RANKS(!mp::grad_enabled());
    }
    CHECK_ALL_RANKS(!mp::grad_enabled());  // the outer scope is still open
    // computed as outside, but a value alone: no backward step, no inputs kept
    const auto p = mp::softmax<hidden>(xt * 2.0);
    CHECK_ALL_RANKS(!p.requires_grad() && !p.node()->backward && p.node()->inputs.empty());
    CHECK_ALL_RANKS(agrees(
        mp::gather(p.value()),
        reference::softmax(reference::map(whole, [](double v) { return 2 * v; }), 1), 1e-13));
    // so a loss computed in the scope does not reach x: its gradient is zero
    const auto loss = mp::reduce_sum(mp::exp(xt));
    CHECK_ALL_RANKS(!loss.requires_grad());
    const auto [g] = mp::gradients(loss, xt);
    CHECK_ALL_RANKS(is_zero(g));
  }
  CHECK_ALL_RANKS(mp::grad_enabled());
  // recorded again after the scope: d/dx sum(x * q) with q = x * x from a no_grad scope is q
  // (a constant), not 3 x^2
  const auto q = [&] {
    const mp::no_grad scope;
    return xt * xt;
  }();
  const auto product = xt * q;
  CHECK_ALL_RANKS(!q.requires_grad() && product.requires_grad() &&
                  product.node()->inputs.size() == 1);
  const auto [g] = mp::gradients(mp::reduce_sum(product), xt);
  CHECK_ALL_RANKS(agrees(mp::gather(g), reference::map(whole, [](double v) { return v * v; }), 0));
}

template <class Mesh>
void check_stop_gradient(const Mesh& m) {
  CAPTURE(m.describe());
  const auto x = mp::random_normal<double, batch, hidden>(m, sizes, 1);
  const auto whole = mp::gather(x);
  const auto xt = mp::trace(x);
  // x's value itself (no copy); a plain tensor is returned as is
  static_assert(std::is_same_v<decltype(mp::stop_gradient(xt)), const double_t2<Mesh>&>);
  CHECK_ALL_RANKS(&mp::stop_gradient(xt) == &xt.value() && &mp::stop_gradient(x) == &x);
  CHECK_ALL_RANKS(agrees(mp::gather(mp::stop_gradient(xt)), whole, 0));
  // of a temporary: the value by value, which a const reference keeps alive
  static_assert(std::is_same_v<decltype(mp::stop_gradient(mp::exp(xt))), double_t2<Mesh>>);
  static_assert(std::is_same_v<decltype(mp::stop_gradient(mp::eval(mp::exp(x)))), double_t2<Mesh>>);
  static_assert(std::is_same_v<decltype(mp::stop_gradient(std::declval<const double_t2<Mesh>&&>())),
                               double_t2<Mesh>>);  // a const temporary too
  {
    const auto& held = mp::stop_gradient(mp::exp(xt));
    const auto& plain = mp::stop_gradient(mp::eval(mp::exp(x)));
    CHECK_ALL_RANKS(agrees(mp::gather(held),
                           reference::map(whole, [](double v) { return std::exp(v); }), 1e-15));
    CHECK_ALL_RANKS(agrees(mp::gather(plain), mp::gather(held), 0));
  }
  // no gradient flows through it: the loss reaches x only through stop_gradient, so x's
  // gradient is zero while the other factor's is exp(x)
  const auto other = mp::trace(mp::random_normal<double, batch, hidden>(m, sizes, 5));
  const auto [gx, gother] =
      mp::gradients(mp::reduce_sum(other * mp::stop_gradient(mp::exp(xt))), xt, other);
  CHECK_ALL_RANKS(is_zero(gx));
  CHECK_ALL_RANKS(agrees(mp::gather(gother),
                         reference::map(whole, [](double v) { return std::exp(v); }), 1e-15));
  // beside x's own path: d/dx sum(x * stop_gradient(x)) = x, not 2x
  const auto [g] = mp::gradients(mp::reduce_sum(xt * mp::stop_gradient(xt)), xt);
  CHECK_ALL_RANKS(agrees(mp::gather(g), whole, 0));
}

}  // namespace

TEST_CASE("item(): the reference sum, the same bits on every rank, plain and traced") {
  on_every_mesh([](const auto& m) { check_item(m); });
}
TEST_CASE("where with a traced branch: the value and the exact gradient") {
  on_every_mesh([](const auto& m) { check_traced_where(m); });
}
TEST_CASE("no_grad: nothing recorded in the scope, scopes nest, recording resumes after") {
  on_every_mesh([](const auto& m) { check_no_grad(m); });
}
TEST_CASE("stop_gradient: x's value, no gradient through it") {
  on_every_mesh([](const auto& m) { check_stop_gradient(m); });
}
