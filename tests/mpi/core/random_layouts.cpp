// Random tensors are the same bit for bit under every layout and rank count: each element is
// drawn from (seed, global linear index). Each case builds a 3-dim tensor under the empty
// layout and under layouts over 1-D, 2-D and 3-D meshes of all the ranks, gathers it, and
// compares it with memcmp to a reference built on one rank without any mesh.
#include <meshpp/core/create.hpp>
#include <meshpp/core/random.hpp>
#include <meshpp/ops/scatter_gather.hpp>

#include <array>
#include <cstddef>
#include <cstdint>

#include "testing.hpp"

namespace mp = meshpp;
using meshpp_test::world;

MESHPP_DIM(i);
MESHPP_DIM(j);
MESHPP_DIM(k);
MESHPP_DIM(all);
MESHPP_DIM(rows);
MESHPP_DIM(cols);
MESHPP_DIM(x);
MESHPP_DIM(y);
MESHPP_DIM(z);

namespace {
// Every size divides by every mesh dim used at 1, 2 and 4 ranks; 12 keeps the strides from
// being powers of two.
const auto sizes = mp::extents{i{} = 8, j{} = 12, k{} = 4};
const std::array<std::size_t, 3> global_shape{8, 12, 4};
constexpr std::uint64_t seed = 20240611;

enum class kind { normal, uniform };

// The reference: element at flat row-major index n is drawn from (seed, n), with the same
// affine map as the library's documented formula (low + (high - low) * u, mean + stddev * z).
template <class T, kind K>
xt::xtensor<T, 3> reference(T p, T q) {
  return meshpp_test::filled<T>(global_shape, [&](std::uint64_t n) {
    if constexpr (K == kind::normal) {
      return static_cast<T>(p + q * mp::normal_at<T>(seed, n));
    } else {
      return static_cast<T>(p + (q - p) * mp::uniform_at<T>(seed, n));
    }
  });
}

template <class T, kind K, class Mesh>
auto make(const Mesh& m, T p, T q) {
  if constexpr (K == kind::normal) {
    return mp::random_normal<T, i, j, k>(m, sizes, seed, p, q);
  } else {
    return mp::random_uniform<T, i, j, k>(m, sizes, seed, p, q);
  }
}

// Checks the tensor made under Mesh's rules: its slice is the reference's block, and the
// gathered whole is the reference, bit for bit.
template <class T, kind K, class Mesh>
void check_layout(const Mesh& m, T p, T q, const xt::xtensor<T, 3>& ref) {
  const auto t = make<T, K>(m, p, q);
  CAPTURE(t.describe());
  CHECK_ALL_RANKS(meshpp_test::bit_equal(
      t.local(), meshpp_test::block(ref, t.local_offsets(), t.local_shape())));
  CHECK_ALL_RANKS(meshpp_test::bit_equal(mp::gather(t), ref));
}

template <class T, kind K>
void check_every_layout(T p, T q) {
  const int n = world().size();
  const auto ref = reference<T, K>(p, q);
  // the reference is not degenerate: its values differ
  CHECK(ref(0, 0, 0) != ref(7, 11, 3));
  CHECK(ref(0, 0, 1) != ref(0, 0, 2));

  SUBCASE("empty layout: every rank holds the whole reference, no gather needed") {
    using mesh_t = mp::mesh<mp::axes<all>>;
    mesh_t m({n});
    const auto t = make<T, K>(m, p, q);
    CHECK_ALL_RANKS(meshpp_test::bit_equal(t.local(), ref));
    check_layout<T, K>(m, p, q, ref);
    // the same on a 2-D mesh whose rules split none of the tensor's dims
    check_layout<T, K>(mp::mesh<mp::axes<rows, cols>>(meshpp_test::grid2(n)), p, q, ref);
  }
  SUBCASE("one dim split over a 1-D mesh of every rank") {
    check_layout<T, K>(mp::mesh<mp::axes<all>, mp::layout<mp::split<j, all>>>({n}), p, q, ref);
    check_layout<T, K>(mp::mesh<mp::axes<all>, mp::layout<mp::split<k, all>>>({n}), p, q, ref);
  }
  SUBCASE("two dims split on a 2-D mesh") {
    const auto g = meshpp_test::grid2(n);
    check_layout<T, K>(
        mp::mesh<mp::axes<rows, cols>, mp::layout<mp::split<i, rows>, mp::split<k, cols>>>(g), p, q,
        ref);
    check_layout<T, K>(
        mp::mesh<mp::axes<rows, cols>, mp::layout<mp::split<k, rows>, mp::split<j, cols>>>(g), p, q,
        ref);
  }
  SUBCASE("three dims split on a 3-D mesh") {
    const auto g = meshpp_test::grid3(n);
    check_layout<T, K>(
        mp::mesh<mp::axes<x, y, z>, mp::layout<mp::split<i, x>, mp::split<j, y>, mp::split<k, z>>>(
            g),
        p, q, ref);
    check_layout<T, K>(
        mp::mesh<mp::axes<x, y, z>, mp::layout<mp::split<i, z>, mp::split<j, x>, mp::split<k, y>>>(
            g),
        p, q, ref);
    // every rank on the middle mesh dim, which splits the middle tensor dim
    check_layout<T, K>(
        mp::mesh<mp::axes<x, y, z>, mp::layout<mp::split<i, x>, mp::split<j, y>, mp::split<k, z>>>(
            {1, n, 1}),
        p, q, ref);
  }
}
}  // namespace

TEST_CASE_TEMPLATE("random_normal is the same under every layout", T, float, double) {
  SUBCASE("standard") { check_every_layout<T, kind::normal>(T(0), T(1)); }
  SUBCASE("mean 0.5, stddev 2") { check_every_layout<T, kind::normal>(T(0.5), T(2)); }
}

TEST_CASE_TEMPLATE("random_uniform is the same under every layout", T, float, double) {
  SUBCASE("[0, 1)") { check_every_layout<T, kind::uniform>(T(0), T(1)); }
  SUBCASE("[-1, 3)") { check_every_layout<T, kind::uniform>(T(-1), T(3)); }
}

TEST_CASE("the default parameters are the standard distributions") {
  using mesh_t = mp::mesh<mp::axes<all>, mp::layout<mp::split<i, all>>>;
  mesh_t m({world().size()});
  CHECK_ALL_RANKS(
      meshpp_test::bit_equal(mp::gather(mp::random_normal<double, i, j, k>(m, sizes, seed)),
                             reference<double, kind::normal>(0, 1)));
  CHECK_ALL_RANKS(
      meshpp_test::bit_equal(mp::gather(mp::random_uniform<float, i, j, k>(m, sizes, seed)),
                             reference<float, kind::uniform>(0, 1)));
}

TEST_CASE("different seeds give different tensors, and the index is global") {
  using mesh_t = mp::mesh<mp::axes<all>, mp::layout<mp::split<j, all>>>;
  mesh_t m({world().size()});
  const auto a = mp::gather(mp::random_normal<float, i, j, k>(m, sizes, 1));
  const auto b = mp::gather(mp::random_normal<float, i, j, k>(m, sizes, 2));
  CHECK_FALSE(meshpp_test::bit_equal(a, b));
  int same = 0;
  for (std::size_t n = 0; n < a.size(); ++n) same += a.data()[n] == b.data()[n];
  CHECK(same == 0);
  // the counter is the element's flat index in its own tensor: a [1, 4, 4] tensor draws
  // counters 0..15, whatever other tensors share the seed
  const auto small =
      mp::gather(mp::random_normal<float, i, j, k>(m, mp::extents{i{} = 1, j{} = 4, k{} = 4}, 1));
  for (std::size_t n = 0; n < small.size(); ++n) {
    CHECK(small.data()[n] == mp::normal_at<float>(1, n));
  }
}
