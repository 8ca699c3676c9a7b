// The small operations the Transformer added, forward, without autodiff: each against a plain
// reference over the gathered whole arrays (no mesh), under the split layout (batch:rows,
// hidden:cols) and replicated, on every mesh shape (grid, 1xN, Nx1):
//   iota<D>, iota<Tensor>  each shard holds the global indices of its stripe, split or whole
//   where(c, a, b)         the result has a's dims, then b's new ones, then c's new ones (a bool
//                          tensor condition never transposes the result), checked by type and
//                          by value, with tensor and scalar branches and a 0-d condition
//   softmax_cross_entropy  the plain overload: a plain tensor, equal to the traced overload's
//                          value and to a reference loop, the class dim last or first; a
//                          label out of range throws on every rank
// (item(), where with traced branches, no_grad and stop_gradient: softmax_helpers_traced.cpp;
// gradients by central differences: grad_softmax.cpp. The split keeps each file quick to
// compile.)
#include <meshpp/autodiff/traced.hpp>
#include <meshpp/nn/softmax_cross_entropy.hpp>

#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "softmax_helpers.hpp"

using namespace softmax_test;

namespace {

// holds_its_indices(t): each element of this rank's slice of a one-dim t is its global index
template <class T>
bool holds_its_indices(const T& t) {
  for (std::size_t j = 0; j < t.local().size(); ++j) {
    if (static_cast<double>(t.local().data()[j]) != static_cast<double>(t.local_offsets()[0] + j))
      return false;
  }
  return true;
}

// counting(n): the reference 0, 1, ..., n - 1
xt::xtensor<double, 1> counting(std::size_t n) {
  return tabulate<1>({n}, [](std::size_t i) { return i; });
}

template <class Mesh>
void check_iota(const Mesh& m) {
  CAPTURE(m.describe());
  // by the mesh's rules: hidden over cols (split_mesh) or whole; int32 unless asked
  const auto h = mp::iota<hidden>(m, sizes);
  static_assert(
      std::is_same_v<decltype(h), const mp::tensor_of<std::int32_t, mp::shape<hidden>, Mesh>>);
  CHECK_ALL_RANKS(holds_its_indices(h));
  CHECK_ALL_RANKS(agrees(mp::gather(h), counting(nh), 0));
  const auto b = mp::iota<batch, double>(m, sizes);
  static_assert(std::is_same_v<typename decltype(b)::value_type, double>);
  CHECK_ALL_RANKS(holds_its_indices(b));
  CHECK_ALL_RANKS(agrees(mp::gather(b), counting(nb), 0));
  // iota<Tensor>: a layout of its own, hidden split over rows whatever the mesh's rules, and
  // whole
  using over_rows =
      mp::tensor<std::int64_t, mp::shape<hidden>, mp::layout<mp::split<hidden, rows>>, Mesh>;
  const auto r = mp::iota<over_rows>(m, sizes);
  CHECK_ALL_RANKS(r.local().size() == nh / static_cast<std::size_t>(m.sizes()[0]));
  CHECK_ALL_RANKS(holds_its_indices(r));
  CHECK_ALL_RANKS(agrees(mp::gather(r), counting(nh), 0));
  const auto w = mp::iota<mp::tensor<std::int64_t, mp::shape<seq>, mp::layout<>, Mesh>>(m, sizes);
  CHECK_ALL_RANKS(w.local().size() == ns && holds_its_indices(w));
  // a mask by name, as the causal mask is made: [hidden, batch], hidden <= batch + 1
  const auto mask = mp::eval(mp::iota<hidden>(m, sizes) <= mp::iota<batch>(m, sizes) + 1);
  static_assert(std::is_same_v<typename decltype(mask)::shape_type, mp::shape<hidden, batch>>);
  CHECK_ALL_RANKS(
      agrees(mp::gather(mask),
             tabulate<2>({nh, nb}, [](std::size_t i, std::size_t j) { return i <= j + 1; }), 0));
}

template <class Mesh>
void check_where(const Mesh& m) {
  CAPTURE(m.describe());
  const where_operands o(m);
  // references, not a structured binding: lambdas below capture them, which C++20 allows of
  // bindings but clang before 16 rejects
  const auto& x = o.x;
  const auto& y = o.y;
  const auto& bias = o.bias;
  const auto& c = o.c;
  const auto& below = o.below;
  const auto& X = o.X;
  const auto& Y = o.Y;
  const auto& B = o.B;
  const auto& C = o.C;
  const auto& S = o.S;
  // a's dims first: the condition [hidden, batch] leaves x's order alone, a scalar a adds none
  static_assert(std::is_same_v<shape_of<decltype(mp::where(c, x, 0.0))>, mp::shape<batch, hidden>>);
  CHECK_ALL_RANKS(agrees(
      mp::gather(mp::eval(mp::where(c, x, 0.0))),
      tabulate<2>({nb, nh}, [&](std::size_t b, std::size_t h) { return C(h, b) ? X(b, h) : 0.0; }),
      0));
  static_assert(
      std::is_same_v<shape_of<decltype(mp::where(c, -1.0, x))>, mp::shape<batch, hidden>>);
  CHECK_ALL_RANKS(agrees(
      mp::gather(mp::eval(mp::where(c, -1.0, x))),
      tabulate<2>({nb, nh}, [&](std::size_t b, std::size_t h) { return C(h, b) ? -1.0 : X(b, h); }),
      0));
  // two tensor branches in different orders: a's order
  static_assert(std::is_same_v<shape_of<decltype(mp::where(c, y, x))>, mp::shape<hidden, batch>>);
  static_assert(std::is_same_v<shape_of<decltype(mp::where(c, x, y))>, mp::shape<batch, hidden>>);
  CHECK_ALL_RANKS(
      agrees(mp::gather(mp::eval(mp::where(c, y, x))),
             tabulate<2>({nh, nb},
                         [&](std::size_t h, std::size_t b) { return C(h, b) ? Y(h, b) : X(b, h); }),
             0));
  // a broadcast branch: a's dims [hidden], then b's new one (batch)
  static_assert(
      std::is_same_v<shape_of<decltype(mp::where(c, bias, x))>, mp::shape<hidden, batch>>);
  static_assert(
      std::is_same_v<shape_of<decltype(mp::where(c, x, bias))>, mp::shape<batch, hidden>>);
  CHECK_ALL_RANKS(agrees(
      mp::gather(mp::eval(mp::where(c, bias, x))),
      tabulate<2>({nh, nb}, [&](std::size_t h, std::size_t b) { return C(h, b) ? B(h) : X(b, h); }),
      0));
  // scalar branches: the condition's dims, the scalars' common type
  static_assert(
      std::is_same_v<shape_of<decltype(mp::where(c, 1.0, -1.0))>, mp::shape<hidden, batch>>);
  static_assert(std::is_same_v<typename decltype(mp::where(c, 1.0f, 2.0f))::value_type, float>);
  CHECK_ALL_RANKS(agrees(
      mp::gather(mp::eval(mp::where(c, 1.0, -1.0))),
      tabulate<2>({nh, nb}, [&](std::size_t h, std::size_t b) { return C(h, b) ? 1.0 : -1.0; }),
      0));
  // the condition's own dims come last: a [hidden], b's batch, then below's seq
  static_assert(std::is_same_v<shape_of<decltype(mp::where(below, bias, 0.0))>,
                               mp::shape<hidden, seq, batch>>);
  CHECK_ALL_RANKS(
      agrees(mp::gather(mp::eval(mp::where(below, bias, 0.0))),
             tabulate<3>({nh, ns, nb}, [&](std::size_t h, std::size_t s,
                                           std::size_t b) { return S(s, b) ? B(h) : 0.0; }),
             0));
  static_assert(
      std::is_same_v<shape_of<decltype(mp::where(below, bias, x))>, mp::shape<hidden, batch, seq>>);
  CHECK_ALL_RANKS(
      agrees(mp::gather(mp::eval(mp::where(below, bias, x))),
             tabulate<3>({nh, nb, ns}, [&](std::size_t h, std::size_t b,
                                           std::size_t s) { return S(s, b) ? B(h) : X(b, h); }),
             0));
  // a condition of no dims: one branch or the other throughout
  for (const bool pick : {true, false}) {
    const auto c0 = mp::full<bool>(m, sizes, pick);
    static_assert(std::is_same_v<shape_of<decltype(c0)>, mp::shape<>>);
    CHECK_ALL_RANKS(
        agrees(mp::gather(mp::eval(mp::where(c0, x, y))),
               tabulate<2>({nb, nh},
                           [&](std::size_t b, std::size_t h) { return pick ? X(b, h) : Y(h, b); }),
               0));
  }
}

template <class Mesh>
void check_plain_cross_entropy(const Mesh& m) {
  CAPTURE(m.describe());
  const auto z = mp::eval(mp::random_normal<double, batch, hidden>(m, sizes, 1) * 3.0);
  const auto Z = mp::gather(z);
  // classes = hidden (split over cols on split_mesh), a label per example
  const auto labels = mp::generate<std::int32_t, batch>(
      m, sizes, [](const auto& g) { return static_cast<std::int32_t>((g[0] * 5 + 2) % nh); });
  const auto L = mp::gather(labels);
  const auto plain = mp::softmax_cross_entropy<hidden>(z, labels);
  static_assert(
      std::is_same_v<decltype(plain), const mp::tensor_of<double, mp::shape<batch>, Mesh>>);
  const auto lse = reference::logsumexp(Z, 1);
  const auto want = tabulate<1>(
      {nb}, [&](std::size_t b) { return lse(b) - Z(b, static_cast<std::size_t>(L(b))); });
  CHECK_ALL_RANKS(agrees(mp::gather(plain), want, 1e-13));
  const auto traced_loss = mp::softmax_cross_entropy<hidden>(mp::trace(z), labels);
  CHECK_ALL_RANKS(meshpp_test::bit_equal(mp::gather(plain), mp::gather(traced_loss.value())));
  // a label outside [0, nh): meshpp::error on every rank, as from the traced overload
  const auto bad = mp::generate<std::int32_t, batch>(
      m, sizes, [](const auto& g) { return static_cast<std::int32_t>(g[0] == nb - 1 ? nh : 0); });
  CHECK_ALL_RANKS(meshpp_test::throws_with<mp::error>(
      [&] { (void)mp::softmax_cross_entropy<hidden>(z, bad); }, {"meshpp"}));
  // logits given as an expression
  const auto half = reference::logsumexp(reference::map(Z, [](double v) { return v / 2; }), 1);
  CHECK_ALL_RANKS(agrees(
      mp::gather(mp::softmax_cross_entropy<hidden>(z / 2.0, labels)),
      tabulate<1>(
          {nb}, [&](std::size_t b) { return half(b) - Z(b, static_cast<std::size_t>(L(b))) / 2; }),
      1e-13));
  // the class dim first: classes = batch, a label per hidden index
  const auto by_hidden = mp::generate<std::int32_t, hidden>(
      m, sizes, [](const auto& g) { return static_cast<std::int32_t>((g[0] * 3 + 1) % nb); });
  const auto H = mp::gather(by_hidden);
  const auto lse0 = reference::logsumexp(Z, 0);
  CHECK_ALL_RANKS(agrees(
      mp::gather(mp::softmax_cross_entropy<batch>(z, by_hidden)),
      tabulate<1>({nh},
                  [&](std::size_t h) { return lse0(h) - Z(static_cast<std::size_t>(H(h)), h); }),
      1e-13));
}

}  // namespace

TEST_CASE("iota: the global index along the dim on every shard, split or whole") {
  on_every_mesh([](const auto& m) { check_iota(m); });
}
TEST_CASE("where: a's dims, then b's, then the condition's; values, bool tensor conditions") {
  on_every_mesh([](const auto& m) { check_where(m); });
}
TEST_CASE("plain softmax_cross_entropy: the traced one's value and the reference's") {
  on_every_mesh([](const auto& m) { check_plain_cross_entropy(m); });
}
