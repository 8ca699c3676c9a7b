// Shared by uneven.cpp and uneven_movement.cpp (forward operations): tensors whose split dims the
// mesh dims do not divide (sizes 1, 7 and 13 on meshes of 1 to 4 ranks). The convention, restated
// here independently of the library: a dim of size n split over p ranks is cut into near-equal
// blocks in coordinate order, the first n % p of them one longer; the rank at coordinate c
// holds [c * (n / p) + min(c, n % p), that + n / p + (c < n % p ? 1 : 0)), none when n < p
// and c >= n.
//
// Inputs are functions of (seed, global index) alone (value_at), so the single-rank reference
// of an input is built here from the same function, without a mesh and without gather; every
// result is checked twice: this rank's slice (offsets, shape and values, against the block
// the convention gives) and the whole tensor gathered on every rank.
//
// MESHPP_UNEVEN_TEST_EVEN compiles the same tests at sizes every mesh dim of 1, 2 and 4 ranks
// divides (4, 8, 12 for 1, 7, 13): a check of the tests themselves on a tree without uneven
// splits. The committed sizes are the uneven ones.
#pragma once

#include <meshpp/meshpp.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include <xtensor/xtensor.hpp>

#include "reference.hpp"
#include "testing.hpp"

namespace mp = meshpp;
using meshpp_test::world;

MESHPP_DIM(i);   // the first dim of a matrix (batch-like)
MESHPP_DIM(j);   // the second (hidden-like)
MESHPP_DIM(k);   // a contracted dim, or a third dim
MESHPP_DIM(ij);  // i and j merged (reshape)
MESHPP_DIM(j2);  // j renamed
MESHPP_DIM(vocab);
MESHPP_DIM(r);  // mesh dims
MESHPP_DIM(c);

namespace uneven {

#ifdef MESHPP_UNEVEN_TEST_EVEN
inline constexpr bool even_sizes = true;
inline constexpr std::size_t s1 = 4, s7 = 8, s13 = 12;
#else
inline constexpr bool even_sizes = false;  // the committed sizes
inline constexpr std::size_t s1 = 1, s7 = 7, s13 = 13;
#endif

// The sizes of i, j and k each case runs at: every pair of 1, 7 and 13 that matters, mixed
struct sizes3 {
  std::size_t i, j, k;
};
inline const std::vector<sizes3> size_cases{
    {s7, s13, s1}, {s13, s7, s13}, {s1, s13, s7}, {s13, s1, s7}, {s7, s7, s7}};

inline auto extents_of(const sizes3& s) { return mp::extents{i{} = s.i, j{} = s.j, k{} = s.k}; }

inline std::string text(const sizes3& s) {
  return "i " + std::to_string(s.i) + ", j " + std::to_string(s.j) + ", k " + std::to_string(s.k);
}

// The meshes [r, c]: the squarest grid of the world, one row (1-D over all ranks along c) and
// one column (1-D over all ranks along r)
inline std::vector<std::array<int, 2>> mesh_shapes() {
  const int n = world().size();
  return {meshpp_test::grid2(n), {1, n}, {n, 1}};
}

using mesh_t = mp::mesh<mp::axes<r, c>>;  // no rules: each tensor names its layout

// tensor_t<Rules, T, Dims...>: a tensor [Dims...] on mesh_t laid out by Rules
template <class Rules, class T, class... Dims>
using tensor_t =
    mp::tensor<T, mp::shape<Dims...>, mp::layout_for_t<Rules, mp::shape<Dims...>>, mesh_t>;

// The layouts of a matrix [i, j] on [r, c]
using mp::layout;
using mp::split;
using replicated = layout<>;
using i_r = layout<split<i, r>>;
using i_c = layout<split<i, c>>;
using j_r = layout<split<j, r>>;
using j_c = layout<split<j, c>>;
using i_r_j_c = layout<split<i, r>, split<j, c>>;
using i_c_j_r = layout<split<i, c>, split<j, r>>;

template <class... L>
struct list {};
using matrix_layouts = list<replicated, i_r, i_c, j_r, j_c, i_r_j_c, i_c_j_r>;

template <class L>
std::string layout_text() {
  const std::string s = mp::to_string(L{});
  return s.empty() ? "(replicated)" : s;
}

// ---- the convention, independently of the library -----------------------------------------

inline std::size_t stripe_begin(std::size_t n, std::size_t p, std::size_t coord) {
  return coord * (n / p) + std::min(coord, n % p);
}
inline std::size_t stripe_size(std::size_t n, std::size_t p, std::size_t coord) {
  return n / p + (coord < n % p ? 1 : 0);
}

// axis_of<Layout, Dim>: the mesh axis (0 r, 1 c) Layout splits Dim over, or -1
template <class Dim, class... S>
constexpr int axis_of_impl(layout<S...>*) {
  int out = -1;
  ((std::is_same_v<typename S::tensor_dim, Dim>
        ? void(out = std::is_same_v<typename S::mesh_dim, r> ? 0 : 1)
        : void()),
   ...);
  return out;
}
template <class Layout, class Dim>
inline constexpr int axis_of = axis_of_impl<Dim>(static_cast<Layout*>(nullptr));

template <class Tensor>
struct axes_of;
template <class T, class... D, class L, class M>
struct axes_of<mp::tensor<T, mp::shape<D...>, L, M>> {
  static constexpr std::array<int, sizeof...(D)> value{axis_of<L, D>...};
};

// ---- values -------------------------------------------------------------------------------

// value_at(seed, global index): a hash of both in [-1, 1), 53 significant bits
template <class Index>
double value_at(std::uint64_t seed, const Index& g) {
  std::uint64_t h = (seed + 1) * 0x9E3779B97F4A7C15ull;
  for (std::size_t x : g) h = (h ^ (x + 1)) * 0x100000001B3ull, h ^= h >> 29;
  return static_cast<double>(h >> 11) * 0x1p-52 - 1.0;
}

// index_of(flat, shape): the row-major multi-index of a flat index
template <std::size_t N>
std::array<std::size_t, N> index_of(std::size_t flat, const std::array<std::size_t, N>& shape) {
  std::array<std::size_t, N> index{};
  for (std::size_t d = N; d-- > 0;) {
    index[d] = shape[d] ? flat % shape[d] : 0;
    flat = shape[d] ? flat / shape[d] : 0;
  }
  return index;
}

// input<Tensor>(m, sizes, seed): value_at(seed, global index) under Tensor's layout
template <class Tensor, class Sizes>
Tensor input(const typename Tensor::mesh_type& m, const Sizes& sizes, std::uint64_t seed) {
  return mp::generate<Tensor>(m, sizes, [seed](const auto& g) {
    return static_cast<typename Tensor::value_type>(value_at(seed, g));
  });
}

// reference_input(shape, seed): the same values, whole, without a mesh
template <std::size_t N>
xt::xtensor<double, N> reference_input(const std::array<std::size_t, N>& shape,
                                       std::uint64_t seed) {
  xt::xtensor<double, N> out(shape);
  for (std::size_t f = 0; f < out.size(); ++f) out.data()[f] = value_at(seed, index_of(f, shape));
  return out;
}

// ---- the check of a result ----------------------------------------------------------------

// block_of(want, offsets, shape): want[offsets : offsets + shape]
template <std::size_t N>
xt::xtensor<double, N> block_of(const xt::xtensor<double, N>& want,
                                const std::array<std::size_t, N>& offsets,
                                const std::array<std::size_t, N>& shape) {
  xt::xtensor<double, N> out(shape);
  for (std::size_t f = 0; f < out.size(); ++f) {
    const auto index = index_of(f, shape);
    std::size_t source = 0;
    for (std::size_t d = 0; d < N; ++d) source = source * want.shape()[d] + offsets[d] + index[d];
    out.data()[f] = want.data()[source];
  }
  return out;
}

// A result, as plain data: what the tensor says of its slice, the slice, the whole gathered,
// and what the convention says the slice must be
template <std::size_t N>
struct result {
  std::array<std::size_t, N> offsets, shape, want_offsets, want_shape;
  xt::xtensor<double, N> local, gathered;
};

template <std::size_t N>
void check_result(const std::string& what, const result<N>& got, const xt::xtensor<double, N>& want,
                  double tol) {
  INFO(what);
  CHECK_ALL_RANKS(got.offsets == got.want_offsets);
  CHECK_ALL_RANKS(got.shape == got.want_shape);
  bool slice_ok = got.shape == got.want_shape && got.offsets == got.want_offsets;
  slice_ok = slice_ok &&
             meshpp_test::matches(got.local, block_of(want, got.want_offsets, got.want_shape), tol);
  CHECK_ALL_RANKS(slice_ok);
  CHECK_ALL_RANKS(meshpp_test::matches(got.gathered, want, tol));
}

// convention_block(t, global, offsets, shape): the block of a tensor of t's type and mesh, of
// global sizes `global`, that this rank holds by the convention
template <class Tensor, std::size_t N>
void convention_block(const Tensor& t, const std::array<std::size_t, N>& global,
                      std::array<std::size_t, N>& offsets, std::array<std::size_t, N>& shape) {
  constexpr auto axes = axes_of<Tensor>::value;
  for (std::size_t d = 0; d < N; ++d) {
    offsets[d] = 0;
    shape[d] = global[d];
    if (axes[d] >= 0) {
      const auto p = static_cast<std::size_t>(t.mesh().sizes()[axes[d]]);
      const auto coord = static_cast<std::size_t>(t.mesh().coordinates()[axes[d]]);
      offsets[d] = stripe_begin(global[d], p, coord);
      shape[d] = stripe_size(global[d], p, coord);
    }
  }
}

// check(what, t, want, tol): t's slice is the convention's block of want (offsets, shape and
// values within tol; 0: equal), and t gathered is want
template <class Tensor, std::size_t N>
void check(const std::string& what, const Tensor& t, const xt::xtensor<double, N>& want,
           double tol) {
  static_assert(Tensor::rank == N);
  result<N> got;
  got.offsets = t.local_offsets();
  got.shape = t.local_shape();
  std::array<std::size_t, N> global{};
  std::copy_n(want.shape().begin(), N, global.begin());
  convention_block(t, global, got.want_offsets, got.want_shape);
  got.local = meshpp_test::to_double(xt::xtensor<typename Tensor::value_type, N>(t.local()));
  got.gathered = meshpp_test::to_double(mp::gather(t));
  check_result(
      what + " [" + mp::to_string(typename Tensor::layout_type{}) + "] on " + t.mesh().describe(),
      got, want, tol);
}

// for_each_layout(list<L...>{}, f): f.template operator()<L>() for each L
template <class... L, class F>
void for_each_layout(list<L...>, F&& f) {
  (f.template operator()<L>(), ...);
}

// on_every_case(f): f(mesh, sizes) on every mesh shape and every size case
template <class F>
void on_every_case(F&& f) {
  for (const auto& shape : mesh_shapes()) {
    const mesh_t m(shape);
    for (const auto& s : size_cases) {
      CAPTURE(text(s));
      f(m, s);
    }
  }
}

}  // namespace uneven
