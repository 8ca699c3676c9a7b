// Reductions over named dims, part 5: value types. Integer sums are exact; reduce_mean of
// integers divides as integers do (truncating); reduce_max of all-negative values and
// reduce_min of all-positive ones (an identity of 0 would show); a bool expression sums to
// an int count; double sums are as exact as double.
//
// Every result is gathered and compared with a reference computed on one rank without any
// mesh. The tensors are split on a 2-D mesh of every rank (batch:rows, hidden:cols).
#include <meshpp/core/create.hpp>
#include <meshpp/expr/functions.hpp>
#include <meshpp/ops/reduce.hpp>
#include <meshpp/ops/scatter_gather.hpp>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "reduction_reference.hpp"
#include "testing.hpp"

namespace mp = meshpp;
using namespace meshpp_test;

MESHPP_DIM(batch);
MESHPP_DIM(seq);
MESHPP_DIM(hidden);
MESHPP_DIM(rows);
MESHPP_DIM(cols);

namespace {
constexpr std::size_t nb = 8, ns = 4, nh = 12;
const auto sizes = mp::extents{batch{} = nb, seq{} = ns, hidden{} = nh};
using rules = mp::layout<mp::split<batch, rows>, mp::split<hidden, cols>>;
using mesh_t = mp::mesh<mp::axes<rows, cols>, rules>;
constexpr unsigned r = mesh_t::mask_v<rows>, c = mesh_t::mask_v<cols>;

// integers in [lo, lo + span) from the global index, well mixed
auto ints(int lo, int span) {
  return [lo, span](const auto& g) {
    return lo + static_cast<int>((g[0] * 131 + g[1] * 71 + g[2] * 37 + g[0] * g[2]) % span);
  };
}

template <class T>
using value_of = typename T::value_type;
}  // namespace

TEST_CASE("integer sums are exact; integer means truncate") {
  mesh_t m(grid2(world().size()));
  const auto a = mp::generate<int, batch, seq, hidden>(m, sizes, ints(-50, 101));
  const auto A = to_double(mp::gather(a));
  static_assert(std::is_same_v<value_of<decltype(mp::reduce_sum<batch>(a))>, int>);
  check_reduction(
      m, [&] { return mp::reduce_sum<batch>(a); }, reduction_reference<2>(kind::sum, A, {S, H}), 0,
      r);
  check_reduction(
      m, [&] { return mp::reduce_sum(a); }, reduction_reference<0>(kind::sum, A, {}), 0, r | c);
  // the mean of ints is an int: the sum divided as C++ divides ints (toward zero)
  static_assert(std::is_same_v<value_of<decltype(mp::reduce_mean<batch>(a))>, int>);
  auto want = reduction_reference<2>(kind::sum, A, {S, H});
  bool has_negative_fraction = false;
  for (auto& v : want) {
    has_negative_fraction = has_negative_fraction || (v < 0 && std::fmod(v, double(nb)) != 0);
    v = std::trunc(v / double(nb));
  }
  CHECK(has_negative_fraction);  // so truncation and flooring differ somewhere
  check_reduction(
      m, [&] { return mp::reduce_mean<batch>(a); }, want, 0, r);
}

TEST_CASE("max of all-negative values, min of all-positive values") {
  mesh_t m(grid2(world().size()));
  const auto neg = mp::random_uniform<float, batch, seq, hidden>(m, sizes, 1, -3.0f, -1.0f);
  const auto pos = mp::random_uniform<float, batch, seq, hidden>(m, sizes, 2, 1.0f, 3.0f);
  const auto ineg = mp::generate<int, batch, seq, hidden>(m, sizes, ints(-90, 80));
  const auto N = to_double(mp::gather(neg));
  const auto P = to_double(mp::gather(pos));
  const auto IN = to_double(mp::gather(ineg));
  const auto max_neg = reduction_reference<1>(kind::max, N, {S});
  for (double v : max_neg) REQUIRE(v < -1.0);
  check_reduction(
      m, [&] { return mp::reduce_max<batch, hidden>(neg); }, max_neg, 0, r | c);
  check_reduction(
      m, [&] { return mp::reduce_max(neg); }, reduction_reference<0>(kind::max, N, {}), 0, r | c);
  check_reduction(
      m, [&] { return mp::reduce_min<hidden>(pos); }, reduction_reference<2>(kind::min, P, {B, S}),
      0, c);
  // ints: the identity of max is the lowest int, not 0
  check_reduction(
      m, [&] { return mp::reduce_max<seq, hidden>(ineg); },
      reduction_reference<1>(kind::max, IN, {B}), 0, c);
  check_reduction(
      m, [&] { return mp::reduce_min(-ineg); },
      reduction_reference<0>(kind::min, xt::xtensor<double, 3>(IN * -1.0), {}), 0, r | c);
}

TEST_CASE("a bool expression sums to an int count") {
  mesh_t m(grid2(world().size()));
  const auto a = mp::random_normal<float, batch, seq, hidden>(m, sizes, 3);
  const auto b = mp::random_normal<float, batch, seq, hidden>(m, sizes, 4);
  const auto A = mp::gather(a), Bv = mp::gather(b);
  xt::xtensor<double, 3> greater(A.shape());
  for (std::size_t i = 0; i < A.size(); ++i) greater.data()[i] = A.data()[i] > Bv.data()[i];
  static_assert(std::is_same_v<value_of<decltype(mp::reduce_sum(a > b))>, int>);
  const auto count = reduction_reference<0>(kind::sum, greater, {});
  CHECK(count() > 0);
  CHECK(count() < double(nb * ns * nh));
  check_reduction(
      m, [&] { return mp::reduce_sum(a > b); }, count, 0, r | c);
  check_reduction(
      m, [&] { return mp::reduce_sum_to<mp::shape<hidden>>(a > b); },
      reduction_reference<1>(kind::sum, greater, {H}), 0, r);
}

TEST_CASE("double sums and means are as exact as double") {
  mesh_t m(grid2(world().size()));
  const auto a = mp::random_normal<double, batch, seq, hidden>(m, sizes, 5);
  const auto A = mp::gather(a);
  constexpr double tol = tolerance<double>(kind::sum);
  check_reduction(
      m, [&] { return mp::reduce_sum<seq>(a); }, reduction_reference<2>(kind::sum, A, {B, H}), tol,
      0);
  check_reduction(
      m, [&] { return mp::reduce_mean(a); }, reduction_reference<0>(kind::mean, A, {}), tol, r | c);
}
