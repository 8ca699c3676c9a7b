// The single-rank reference for reduction tests, and the check every reduction goes through.
// Inputs are [batch, seq, hidden] tensors; the reference gathers them, reduces with a plain
// loop in double, and names dims by their position (B, S, H) in [batch, seq, hidden].
#pragma once

#include <meshpp/core/counters.hpp>
#include <meshpp/ops/reduce.hpp>
#include <meshpp/ops/scatter_gather.hpp>

#include <algorithm>
#include <array>
#include <cstddef>
#include <limits>
#include <type_traits>

#include "reference.hpp"
#include "source_location.hpp"
#include "testing.hpp"

namespace meshpp_test {

inline constexpr std::size_t B = 0, S = 1, H = 2;

enum class kind { sum, max, min, mean };

// Tolerances relative to max(1, |want|): float sums of up to 384 values of order 1, in any
// order, stay well within 1e-4 of the double reference (a lost or doubled slice is off by
// O(1)); max and min of exact inputs are exact.
template <class T>
constexpr double tolerance(kind k) {
  if (k == kind::max || k == kind::min || std::is_integral_v<T>) return 0;
  return std::is_same_v<T, float> ? 1e-4 : 1e-12;
}

// reduction_reference(k, X, out): X reduced by k to the dims at positions `out` of X (in
// output order), by a plain loop over every element of X. Mean divides by the number of
// elements reduced into each output element.
template <std::size_t K>
xt::xtensor<double, K> reduction_reference(kind k, const xt::xtensor<double, 3>& X,
                                           std::array<std::size_t, K> out) {
  std::array<std::size_t, K> shape{};
  for (std::size_t r = 0; r < K; ++r) shape[r] = X.shape()[out[r]];
  std::array<std::size_t, K> stride{};
  std::size_t count = 1;
  for (std::size_t r = K; r-- > 0;) {
    stride[r] = count;
    count *= shape[r];
  }
  xt::xtensor<double, K> acc(shape);
  const double start = k == kind::max   ? -std::numeric_limits<double>::infinity()
                       : k == kind::min ? std::numeric_limits<double>::infinity()
                                        : 0.0;
  for (std::size_t i = 0; i < acc.size(); ++i) acc.data()[i] = start;
  for (std::size_t i = 0; i < X.shape()[0]; ++i) {
    for (std::size_t j = 0; j < X.shape()[1]; ++j) {
      for (std::size_t l = 0; l < X.shape()[2]; ++l) {
        const std::array<std::size_t, 3> index{i, j, l};
        std::size_t flat = 0;
        for (std::size_t r = 0; r < K; ++r) flat += index[out[r]] * stride[r];
        double& a = acc.data()[flat];
        const double v = X(i, j, l);
        if (k == kind::max)
          a = std::max(a, v);
        else if (k == kind::min)
          a = std::min(a, v);
        else
          a += v;
      }
    }
  }
  if (k == kind::mean) {
    const double reduced = static_cast<double>(X.size() / acc.size());
    for (std::size_t i = 0; i < acc.size(); ++i) acc.data()[i] /= reduced;
  }
  return acc;
}

// check_counters(counts, mask, local_size): exactly one allreduce, of local_size values, over
// the mesh dims in the bit set `mask`, and no other collective; none at all when mask is 0.
// (Not a template: the checks compile once, not once per reduction.)
inline void check_counters(const meshpp::counters& counts, unsigned mask, std::size_t local_size) {
  for (std::size_t c = 0; c < meshpp::collective_kinds; ++c) {
    const auto other = static_cast<meshpp::collective>(c);
    if (other != meshpp::collective::allreduce) CHECK(counts.total(other).calls == 0);
  }
  const auto total = counts.total(meshpp::collective::allreduce);
  if (mask == 0 || counts.group_of_one(mask)) {  // no collective, or one that counts nothing
    CHECK(total.calls == 0);
    CHECK(total.values == 0);
  } else {
    CHECK(total.calls == 1);
    CHECK(counts.at(meshpp::collective::allreduce, mask).calls == 1);
    CHECK(counts.at(meshpp::collective::allreduce, mask).values == local_size);
  }
}
inline void check_slice_and_whole(bool slice_matches, bool whole_matches) {
  CHECK_ALL_RANKS(slice_matches);
  CHECK_ALL_RANKS(whole_matches);
}

// check_reduction(m, f, want, tol, mask): runs f() (one reduction) on freshly reset counters.
// The result is `want`, this rank's slice and gathered whole, and the counters are as
// check_counters says. Failures name the caller's line.
template <class Mesh, class F, std::size_t K>
void check_reduction(const Mesh& m, F&& f, const xt::xtensor<double, K>& want, double tol,
                     unsigned mask,
                     meshpp_test::source_location at = meshpp_test::source_location::current()) {
  INFO("check_reduction called from line " << at.line());
  m.counters().reset();
  const auto out = f();
  static_assert(decltype(out)::rank == K);
  check_counters(m.counters(), mask, out.local().size());
  check_slice_and_whole(matches(out.local(), slice_of(want, out), tol),
                        matches(meshpp::gather(out), want, tol));
}

// reduce<K, Ts...>(e): the reduction of kind K, spelled reduce_x<Ts...>(e), or
// reduce_x_to<shape<...>>(e) when Ts is one shape
template <kind K, class... Ts, class E>
auto reduce(const E& e) {
  if constexpr (sizeof...(Ts) == 1 && (meshpp::is_shape_v<Ts> && ...)) {
    if constexpr (K == kind::sum)
      return meshpp::reduce_sum_to<Ts...>(e);
    else if constexpr (K == kind::max)
      return meshpp::reduce_max_to<Ts...>(e);
    else if constexpr (K == kind::min)
      return meshpp::reduce_min_to<Ts...>(e);
    else
      return meshpp::reduce_mean_to<Ts...>(e);
  } else if constexpr (K == kind::sum) {
    return meshpp::reduce_sum<Ts...>(e);
  } else if constexpr (K == kind::max) {
    return meshpp::reduce_max<Ts...>(e);
  } else if constexpr (K == kind::min) {
    return meshpp::reduce_min<Ts...>(e);
  } else {
    return meshpp::reduce_mean<Ts...>(e);
  }
}

}  // namespace meshpp_test
