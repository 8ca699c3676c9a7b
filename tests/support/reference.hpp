// Single-rank references for MPI tests of computations: the inputs are gathered whole
// (meshpp::gather), the reference is a plain loop over the gathered arrays in double, and
// `matches` compares a gathered result (or a rank's slice) with it element by element.
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <stdexcept>

#include <xtensor/xtensor.hpp>

#include "testing.hpp"

namespace meshpp_test {

// matches(got, want, tol): the same shape, and every element within tol * max(1, |want|)
// (tol 0: equal). Reports the first mismatch with MESSAGE; never throws.
template <class G, class W>
bool matches(const G& got, const W& want, double tol) {
  if (got.dimension() != want.dimension() || got.size() != want.size()) {
    MESSAGE("rank " << world().rank() << ": got " << got.dimension() << " dims and " << got.size()
                    << " values, want " << want.dimension() << " and " << want.size());
    return false;
  }
  for (std::size_t i = 0; i < got.dimension(); ++i) {
    if (got.shape()[i] != want.shape()[i]) {
      MESSAGE("rank " << world().rank() << ": dim " << i << " has size " << got.shape()[i]
                      << ", want " << want.shape()[i]);
      return false;
    }
  }
  for (std::size_t i = 0; i < got.size(); ++i) {
    const double g = static_cast<double>(got.data()[i]);
    const double w = static_cast<double>(want.data()[i]);
    if (!(std::abs(g - w) <= tol * std::max(1.0, std::abs(w)))) {
      MESSAGE("rank " << world().rank() << ": flat element " << i << " is " << g << ", want " << w);
      return false;
    }
  }
  return true;
}

// to_double(a): a, element by element, as double
template <class T, std::size_t N>
xt::xtensor<double, N> to_double(const xt::xtensor<T, N>& a) {
  xt::xtensor<double, N> out(a.shape());
  for (std::size_t i = 0; i < a.size(); ++i) out.data()[i] = static_cast<double>(a.data()[i]);
  return out;
}

// map(a, f): f(a[i]) for every element, in double
template <class T, std::size_t N, class F>
xt::xtensor<double, N> map(const xt::xtensor<T, N>& a, F f) {
  xt::xtensor<double, N> out(a.shape());
  for (std::size_t i = 0; i < a.size(); ++i) out.data()[i] = f(static_cast<double>(a.data()[i]));
  return out;
}

// zip(a, b, f): f(a[i], b[i]) for every element of two arrays of one shape, in double
template <class T, class U, std::size_t N, class F>
xt::xtensor<double, N> zip(const xt::xtensor<T, N>& a, const xt::xtensor<U, N>& b, F f) {
  if (a.shape() != b.shape()) throw std::logic_error("meshpp_test::zip: shapes differ");
  xt::xtensor<double, N> out(a.shape());
  for (std::size_t i = 0; i < a.size(); ++i) {
    out.data()[i] = f(static_cast<double>(a.data()[i]), static_cast<double>(b.data()[i]));
  }
  return out;
}

// slice_of(want, t): the block of the whole reference `want` that tensor t's slice holds
// (a plain loop: xt::strided_view costs seconds of compile time per use at -O3)
template <std::size_t N, class Tensor>
xt::xtensor<double, N> slice_of(const xt::xtensor<double, N>& want, const Tensor& t) {
  const auto offsets = t.local_offsets();
  const auto shape = t.local_shape();
  xt::xtensor<double, N> out(shape);
  for (std::size_t flat = 0; flat < out.size(); ++flat) {
    std::array<std::size_t, N> index{};
    std::size_t rest = flat;
    for (std::size_t d = N; d-- > 0;) {
      index[d] = rest % shape[d];
      rest /= shape[d];
    }
    std::size_t source = 0;
    for (std::size_t d = 0; d < N; ++d) source = source * want.shape()[d] + offsets[d] + index[d];
    out.data()[flat] = want.data()[source];
  }
  return out;
}

}  // namespace meshpp_test
