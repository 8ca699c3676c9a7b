// meshpp/ops/rows.hpp — the reductions of one contiguous row that the row-by-row paths
// (softmax, its backward step, layer_norm) run while the row is in cache.
//
// Each keeps row_lanes lanes of partial results and combines them at the end, so that the
// compiler vectorizes it without licence to reorder floating-point sums (-ffast-math); each is
// the same for the same row on every rank and layout.
#pragma once

#include <cstddef>
#include <limits>

namespace meshpp::detail {

inline constexpr std::size_t row_lanes = 8;

// row_sum_of<T>(n, f): the sum of f(j) for j < n, in lanes (f(j) is added to lane j % 8 for
// the whole groups of 8, the rest to the lanes' total)
template <class T, class F>
T row_sum_of(std::size_t n, F&& f) {
  T lane[row_lanes] = {};
  std::size_t j = 0;
  for (; j + row_lanes <= n; j += row_lanes)
    for (std::size_t k = 0; k < row_lanes; ++k) lane[k] += f(j + k);
  T sum = 0;
  for (const T l : lane) sum += l;
  for (; j < n; ++j) sum += f(j);
  return sum;
}

// row_sum(x, n), row_dot(a, b, n), row_mean_of<T>(n, f): a row's sum, the sum of two rows'
// products, the mean of f(j) (the sum times 1 / n, as reduce_mean scales)
template <class T>
T row_sum(const T* x, std::size_t n) {
  return row_sum_of<T>(n, [x](std::size_t j) { return x[j]; });
}
template <class T>
T row_dot(const T* a, const T* b, std::size_t n) {
  return row_sum_of<T>(n, [a, b](std::size_t j) { return a[j] * b[j]; });
}
template <class T, class F>
T row_mean_of(std::size_t n, F&& f) {
  return row_sum_of<T>(n, f) * static_cast<T>(1.0 / static_cast<double>(n));
}

// row_max(x, n): the largest of a row's n values (-inf for an empty row or one of -inf; NaN
// is passed over)
template <class T>
T row_max(const T* x, std::size_t n) {
  T lane[row_lanes];
  for (auto& l : lane) l = -std::numeric_limits<T>::infinity();
  std::size_t j = 0;
  for (; j + row_lanes <= n; j += row_lanes)
    for (std::size_t k = 0; k < row_lanes; ++k) lane[k] = x[j + k] > lane[k] ? x[j + k] : lane[k];
  T m = -std::numeric_limits<T>::infinity();
  for (const T l : lane) m = l > m ? l : m;
  for (; j < n; ++j) m = x[j] > m ? x[j] : m;
  return m;
}

}  // namespace meshpp::detail
