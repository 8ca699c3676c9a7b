// Named expressions, part 2: comparisons give bool expressions (ties included), bool tensors
// gather, bool expressions feed where(), and scalars in where() take the other branch's type
// or, both scalars, their common type.
//
// Every result is gathered and compared with a reference computed on one rank without any
// mesh, by plain loops over the gathered inputs. The tensors are split over a 1-D mesh of
// every rank (hidden:all).
#include <meshpp/core/create.hpp>
#include <meshpp/expr/functions.hpp>
#include <meshpp/ops/scatter_gather.hpp>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <type_traits>
#include <utility>

#include "reference.hpp"
#include "testing.hpp"

namespace mp = meshpp;
using meshpp_test::map;
using meshpp_test::matches;
using meshpp_test::world;
using meshpp_test::zip;

MESHPP_DIM(batch);
MESHPP_DIM(hidden);
MESHPP_DIM(seq);
MESHPP_DIM(all);

namespace {
constexpr std::size_t nb = 8, nh = 12;
const auto sizes = mp::extents{batch{} = nb, hidden{} = nh, seq{} = 4};
using mesh_t = mp::mesh<mp::axes<all>, mp::layout<mp::split<hidden, all>>>;
using tensor_t = mp::tensor_of<float, mp::shape<batch, hidden>, mesh_t>;
constexpr double tol = 1e-6;

template <class E>
using value_of = typename std::remove_cvref_t<E>::value_type;

template <class E>
auto result(const E& e) {
  return mp::gather(mp::eval(e));
}

// Small integers in [-2, 2], from the global index: two such tensors tie often.
auto small_ints(std::uint64_t salt) {
  return [salt](const auto& g) {
    return static_cast<float>(static_cast<int>((g[0] * 7 + g[1] * 3 + salt * g[0] * g[1]) % 5) - 2);
  };
}

struct inputs {
  mesh_t m{mesh_t::coordinates_type{world().size()}};
  tensor_t a = mp::random_normal<float, batch, hidden>(m, sizes, 1);
  tensor_t b = mp::random_normal<float, batch, hidden>(m, sizes, 2);
  tensor_t ia = mp::generate<float, batch, hidden>(m, sizes, small_ints(1));
  tensor_t ib = mp::generate<float, batch, hidden>(m, sizes, small_ints(2));
  xt::xtensor<float, 2> A = mp::gather(a), Bm = mp::gather(b);
  xt::xtensor<float, 2> IA = mp::gather(ia), IB = mp::gather(ib);
};
}  // namespace

TEST_CASE("comparisons give bool expressions; bool tensors gather") {
  inputs in;
  const auto& [m, a, b, ia, ib, A, Bm, IA, IB] = in;
  static_assert(std::is_same_v<value_of<decltype(a < b)>, bool>);
  static_assert(std::is_same_v<value_of<decltype(mp::equal(a, b))>, bool>);
  static_assert(std::is_same_v<value_of<decltype(a >= 0)>, bool>);
  // the inputs tie somewhere and differ somewhere, so < and <= (and == and !=) differ
  std::size_t ties = 0;
  for (std::size_t i = 0; i < IA.size(); ++i) ties += IA.data()[i] == IB.data()[i];
  REQUIRE(ties > 0);
  REQUIRE(ties < IA.size());

  const auto lt = mp::eval(ia < ib);
  static_assert(std::is_same_v<typename decltype(lt)::value_type, bool>);
  const xt::xtensor<bool, 2> LT = mp::gather(lt);
  CHECK_ALL_RANKS(matches(LT, zip(IA, IB, std::less<>()), 0));
  CHECK_ALL_RANKS(matches(result(ia <= ib), zip(IA, IB, std::less_equal<>()), 0));
  CHECK_ALL_RANKS(matches(result(ia > ib), zip(IA, IB, std::greater<>()), 0));
  CHECK_ALL_RANKS(matches(result(ia >= ib), zip(IA, IB, std::greater_equal<>()), 0));
  CHECK_ALL_RANKS(matches(result(mp::equal(ia, ib)), zip(IA, IB, std::equal_to<>()), 0));
  CHECK_ALL_RANKS(matches(result(mp::not_equal(ia, ib)), zip(IA, IB, std::not_equal_to<>()), 0));
  // with a scalar on either side
  CHECK_ALL_RANKS(matches(result(0.5 < a), map(A, [](double v) { return 0.5f < v; }), 0));
  CHECK_ALL_RANKS(matches(result(mp::equal(ia, 1)), map(IA, [](double v) { return v == 1; }), 0));
}

TEST_CASE("bool expressions feed where") {
  inputs in;
  const auto& [m, a, b, ia, ib, A, Bm, IA, IB] = in;
  CHECK_ALL_RANKS(matches(result(mp::where(a > b, a, b)),
                          zip(A, Bm, [](double u, double v) { return u > v ? u : v; }), 0));
  xt::xtensor<double, 2> want(A.shape());
  for (std::size_t i = 0; i < A.size(); ++i) {
    want.data()[i] = IA.data()[i] <= IB.data()[i] ? A.data()[i] : -Bm.data()[i];
  }
  CHECK_ALL_RANKS(matches(result(mp::where(ia <= ib, a, -b)), want, 0));
  // an evaluated bool tensor as the condition
  const auto mask = mp::eval(mp::not_equal(ia, ib));
  CHECK_ALL_RANKS(matches(result(mp::where(mask, ia, -ib)),
                          zip(IA, IB, [](double u, double v) { return u != v ? u : -v; }), 0));
}

TEST_CASE("where with scalar branches") {
  inputs in;
  const auto& [m, a, b, ia, ib, A, Bm, IA, IB] = in;
  // one scalar: it takes the other branch's value type
  static_assert(std::is_same_v<value_of<decltype(mp::where(a > 0, 0, a))>, float>);
  static_assert(std::is_same_v<value_of<decltype(mp::where(a > 0, a, 0.5))>, float>);
  CHECK_ALL_RANKS(
      matches(result(mp::where(a > 0, 0, a)), map(A, [](double v) { return v > 0 ? 0.0 : v; }), 0));
  // two scalars: their common type, never the condition's bool
  static_assert(std::is_same_v<value_of<decltype(mp::where(a > 0, 1.0, -1.0))>, double>);
  static_assert(std::is_same_v<value_of<decltype(mp::where(a > 0, 2.5f, 0.5f))>, float>);
  static_assert(std::is_same_v<value_of<decltype(mp::where(a > 0, 3, -2))>, int>);
  CHECK_ALL_RANKS(matches(result(mp::where(mp::equal(ia, ib), 1.0, -1.0)),
                          zip(IA, IB, [](double u, double v) { return u == v ? 1.0 : -1.0; }), 0));
  CHECK_ALL_RANKS(matches(result(mp::where(ia < 0, 3, -2)),
                          map(IA, [](double v) { return v < 0 ? 3.0 : -2.0; }), 0));
}
