// Helpers shared by meshpp's tests.
#pragma once

#include <doctest/doctest.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <exception>
#include <functional>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

#include <meshpp/core/mesh.hpp>

#include <boost/mpi/collectives/all_reduce.hpp>
#include <boost/mpi/communicator.hpp>
#include <boost/mpi/operations.hpp>
#include <xtensor/xstrided_view.hpp>
#include <xtensor/xtensor.hpp>

namespace meshpp_test {

inline boost::mpi::communicator world() { return {}; }

// ranks_in_step(): every rank is still in step (after an error, say): a sum over the world
// sees every rank once
inline bool ranks_in_step() {
  const int n = world().size();
  int sum = 0;
  boost::mpi::all_reduce(world(), world().rank() + 1, sum, std::plus<int>());
  return sum == n * (n + 1) / 2;
}

// all_ranks(ok): true on every rank iff ok is true on every rank. Checks that could differ
// between ranks go through it, so a failure on one rank fails the check on all of them.
inline bool all_ranks(bool ok) {
  bool all = false;
  boost::mpi::all_reduce(world(), ok, all, std::logical_and<bool>());
  return all;
}

// bit_equal(a, b): same shape and the same bytes in every element
template <class A, class B>
bool bit_equal(const A& a, const B& b) {
  if (a.shape().size() != b.shape().size()) return false;
  for (std::size_t i = 0; i < a.shape().size(); ++i) {
    if (a.shape()[i] != b.shape()[i]) return false;
  }
  // an empty xtensor's data() may be null, and memcmp's arguments must not be, even for 0 bytes
  return a.size() == 0 || std::memcmp(a.data(), b.data(), a.size() * sizeof(*a.data())) == 0;
}

// Mesh shapes used across tests: ranks n split into 2 or 3 factors, squarest first
// (meshpp::balanced_grid)
inline std::array<int, 2> grid2(int n) { return meshpp::balanced_grid<2>(n); }
inline std::array<int, 3> grid3(int n) { return meshpp::balanced_grid<3>(n); }

// mesh_shapes<N>(n): every shape of an N-dim mesh of n ranks (positive sizes whose product is
// n). One mesh type then runs under many layouts, compiled once: a mesh dim of size 1 splits
// nothing, so with rules batch:x, hidden:y over [x, y, rest], {1, 1, n} is replicated,
// {n, 1, 1} splits batch alone and {2, 2, 1} splits both.
template <std::size_t N>
std::vector<std::array<int, N>> mesh_shapes(int n) {
  std::vector<std::array<int, N>> out;
  std::array<int, N> s{};
  auto fill = [&](auto& self, std::size_t i, int rest) -> void {
    if (i + 1 == N) {
      s[i] = rest;
      out.push_back(s);
      return;
    }
    for (int f = 1; f <= rest; ++f) {
      if (rest % f == 0) {
        s[i] = f;
        self(self, i + 1, rest / f);
      }
    }
  };
  fill(fill, 0, n);
  return out;
}

// mesh_shapes<N>(n, limits): those whose size along each mesh dim divides the limit there (the
// size of the dim split over it; 1 where nothing is, so that mesh dim holds one rank)
template <std::size_t N>
std::vector<std::array<int, N>> mesh_shapes(int n, const std::array<int, N>& limits) {
  auto out = mesh_shapes<N>(n);
  std::erase_if(out, [&](const std::array<int, N>& s) {
    for (std::size_t i = 0; i < N; ++i) {
      if (limits[i] % s[i] != 0) return true;
    }
    return false;
  });
  return out;
}

// ranks_along(m, mask): the number of ranks of a group of mesh m along the mesh dims in mask
// (bit i: mesh dim i)
template <class Mesh>
std::uint64_t ranks_along(const Mesh& m, unsigned mask) {
  std::uint64_t p = 1;
  for (std::size_t i = 0; i < Mesh::ndims; ++i) {
    if (mask & (1u << i)) p *= static_cast<std::uint64_t>(m.sizes()[i]);
  }
  return p;
}

// throws_with<E>(f, {parts...}): f() throws an E whose message contains every part. Any other
// outcome (no exception, another type, a message lacking a part) is reported with MESSAGE and
// returns false, never escapes: a rank leaving the test case early would leave the others
// waiting in their next collective. Use it inside CHECK_ALL_RANKS.
template <class E, class F>
bool throws_with(F&& f, std::initializer_list<std::string_view> parts = {}) {
  std::string outcome;
  try {
    f();
    outcome = "no exception was thrown";
  } catch (const E& e) {
    const std::string what = e.what();
    for (std::string_view part : parts) {
      if (what.find(part) == std::string::npos) {
        outcome = "the message \"" + what + "\" lacks \"" + std::string(part) + "\"";
        break;
      }
    }
    if (outcome.empty()) return true;
  } catch (const std::exception& e) {
    outcome = std::string("an exception of another type was thrown: ") + e.what();
  } catch (...) {
    outcome = "an exception of unknown type was thrown";
  }
  MESSAGE("rank " << world().rank() << ": " << outcome);
  return false;
}

// filled<T>(shape, f): a row-major array whose element at flat index i is f(i). Single-rank
// references are built with it, without any mesh.
template <class T, std::size_t N, class F>
xt::xtensor<T, N> filled(const std::array<std::size_t, N>& shape, F&& f) {
  xt::xtensor<T, N> a(shape);
  for (std::size_t i = 0; i < a.size(); ++i) a.data()[i] = f(static_cast<std::uint64_t>(i));
  return a;
}

// block(a, offsets, shape): a copy of a[offsets : offsets + shape], one range per dim.
template <class T, std::size_t N>
xt::xtensor<T, N> block(const xt::xtensor<T, N>& a, const std::array<std::size_t, N>& offsets,
                        const std::array<std::size_t, N>& shape) {
  xt::xstrided_slice_vector ranges;
  for (std::size_t i = 0; i < N; ++i)
    ranges.push_back(xt::range(offsets[i], offsets[i] + shape[i]));
  return xt::strided_view(a, ranges);
}

}  // namespace meshpp_test

// CHECK_ALL_RANKS(expr): a doctest CHECK that fails on every rank if expr fails on any rank.
#define CHECK_ALL_RANKS(...) CHECK(::meshpp_test::all_ranks(static_cast<bool>(__VA_ARGS__)))
