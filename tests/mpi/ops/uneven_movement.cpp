// Uneven splits (2 of 2): data movement on dims of sizes 1, 7 and 13 that the mesh dims do not
// divide (uneven_fixture.hpp states the convention), on the squarest grid, one row and one
// column of all the ranks:
//   - relayout between every pair of the 7 layouts of [i, j] (k whole) on [r, c]: slices,
//     allgathers, alltoalls ([i/c, j] -> [i, j/c]) and the cycle (i:r, j:c -> i:c, j:r), also
//     with the alltoall staged a few elements at a time, and the alltoalls and the cycle of
//     [k, i, j], whose blocks are strided on both sides;
//   - reshape merging [i, j, k] into [ij, k] and splitting it back, and rename, under rules that
//     split i, ij and j;
//   - slice, pad, concat, shift and halo_exchange (zero and wrap) along a split and a whole dim,
//     halos wider than the stripes included;
//   - take<vocab> and one_hot<vocab> with vocab (13, 7 and 1) split over 2 and 4 ranks, and their
//     agreement with einsum over the one-hot tensor.
// Every result bit for bit (or to rounding, for einsum) against a single-rank reference in plain
// loops: this rank's slice where the convention puts it, and the whole gathered.
#include "small_pieces.hpp"
#include "uneven_fixture.hpp"

using namespace uneven;

namespace {
using index3 = std::array<std::size_t, 3>;
constexpr double exact = 0.0;

// The 7 layouts of [i, j, k] with k whole (matrix_layouts restricted to [i, j, k])
template <class From, class... To>
void from_one(const mesh_t& m, const sizes3& s, const xt::xtensor<double, 3>& G, list<To...>) {
  const auto t = mp::scatter<tensor_t<From, double, i, j, k>>(m, extents_of(s), G);
  (check("relayout from [" + mp::to_string(From{}) + "]", mp::relayout<To>(t), G, exact), ...);
}

// The same for [k, i, j]: k whole and outermost, so an alltoall's blocks are strided on both
// sides (packed to be sent and unpacked when received)
template <class From, class... To>
void from_one_k_outer(const mesh_t& m, const sizes3& s, list<To...>) {
  const auto G = reference_input(index3{s.k, s.i, s.j}, 12);
  const auto t = mp::scatter<tensor_t<From, double, k, i, j>>(m, extents_of(s), G);
  (check("relayout of [k, i, j] from [" + mp::to_string(From{}) + "]", mp::relayout<To>(t), G,
         exact),
   ...);
}

using meshpp_test::small_pieces;  // (tests/support/small_pieces.hpp)
}  // namespace

TEST_CASE("uneven: relayout between every pair of layouts, alltoalls and the cycle included") {
  on_every_case([](const mesh_t& m, const sizes3& s) {
    auto G = reference_input(index3{s.i, s.j, s.k}, 11);
    G.data()[0] = -0.0;  // a bit that a sum would lose
    for_each_layout(matrix_layouts{},
                    [&]<class From>() { from_one<From>(m, s, G, matrix_layouts{}); });
    from_one_k_outer<i_c>(m, s, list<j_c>{});
    from_one_k_outer<j_c>(m, s, list<i_c>{});
    from_one_k_outer<i_r_j_c>(m, s, list<i_c_j_r>{});
    // the alltoalls again, 3 doubles at a time: pieces of the largest block, cut short or
    // empty in the shorter ones
    const small_pieces guard(3 * sizeof(double));
    from_one<i_c>(m, s, G, list<j_c, i_r_j_c, i_c_j_r>{});
    from_one<i_r_j_c>(m, s, G, list<i_c_j_r, j_r, i_c>{});
    from_one_k_outer<i_c>(m, s, list<j_c>{});
    from_one_k_outer<j_c>(m, s, list<i_c>{});
  });
}

namespace {
// The mesh of the reshapes and lookups: rules, so the results' layouts come from them. On
// [1, n] only j, j2 and vocab are split, on [n, 1] only i and ij.
using rules = layout<split<i, r>, split<ij, r>, split<j, c>, split<j2, c>, split<vocab, c>>;
using rmesh_t = mp::mesh<mp::axes<r, c>, rules>;
template <class T, class... Dims>
using rtensor_t = mp::tensor_of<T, mp::shape<Dims...>, rmesh_t>;

// reshaped(a, shape): the same row-major data under another shape
template <std::size_t N, std::size_t M>
xt::xtensor<double, M> reshaped(const xt::xtensor<double, N>& a,
                                const std::array<std::size_t, M>& shape) {
  xt::xtensor<double, M> out(shape);
  for (std::size_t f = 0; f < a.size(); ++f) out.data()[f] = a.data()[f];
  return out;
}
}  // namespace

TEST_CASE("uneven: reshape (merge and split) and rename under rules that split i, ij and j") {
  for (const auto& shape : mesh_shapes()) {
    const rmesh_t m(shape);
    for (const auto& s : size_cases) {
      CAPTURE(text(s));
      const auto sizes = mp::extents{i{} = s.i, j{} = s.j, k{} = s.k, ij{} = s.i * s.j, j2{} = s.j};
      const auto G = reference_input(index3{s.i, s.j, s.k}, 12);
      const auto x = input<rtensor_t<double, i, j, k>>(m, sizes, 12);
      check("input [i/r, j/c, k]", x, G, exact);
      // [i/r, j/c, k] -> [ij/r, k]
      const auto merged = mp::reshape<mp::shape<ij, k>>(x, sizes);
      const auto want_merged = reshaped(G, std::array<std::size_t, 2>{s.i * s.j, s.k});
      check("reshape to [ij, k]", merged, want_merged, exact);
      // and back: [ij/r, k] -> [i/r, j/c, k]
      check("reshape back to [i, j, k]", mp::reshape<mp::shape<i, j, k>>(merged, sizes), G, exact);
      // [ij, k] made directly (not from a reshape), split into [i, j, k]
      const auto direct = input<rtensor_t<double, ij, k>>(m, sizes, 13);
      const auto D = reference_input(std::array<std::size_t, 2>{s.i * s.j, s.k}, 13);
      check("reshape [ij, k] to [i, j, k]", mp::reshape<mp::shape<i, j, k>>(direct, sizes),
            reshaped(D, index3{s.i, s.j, s.k}), exact);
      // rename j -> j2 (both over c)
      check("rename<j, j2>", mp::rename<j, j2>(x), G, exact);
    }
  }
}

namespace {
// remapped(G, axis, n, src, fill): along axis, out[o] = G[src(o)], fill where src(o) < 0
xt::xtensor<double, 3> remapped(const xt::xtensor<double, 3>& G, std::size_t axis, std::size_t n,
                                long (*src)(long, long, long), long p1, long p2, double fill) {
  index3 shape{G.shape()[0], G.shape()[1], G.shape()[2]};
  shape[axis] = n;
  xt::xtensor<double, 3> out(shape);
  for (std::size_t f = 0; f < out.size(); ++f) {
    auto at = index_of(f, shape);
    const long from = src(static_cast<long>(at[axis]), p1, p2);
    if (from < 0) {
      out.data()[f] = fill;
    } else {
      at[axis] = static_cast<std::size_t>(from);
      out.data()[f] = G(at[0], at[1], at[2]);
    }
  }
  return out;
}
long slice_src(long o, long begin, long) { return o + begin; }
long pad_src(long o, long before, long n) {
  return o < before || o >= before + n ? -1 : o - before;
}
long shift_zero_src(long o, long offset, long n) {
  const long from = o - offset;
  return from < 0 || from >= n ? -1 : from;
}
long shift_wrap_src(long o, long offset, long n) { return ((o - offset) % n + n) % n; }

template <class Dim, class L>
void check_along(const mesh_t& m, const sizes3& s) {
  constexpr std::size_t axis = mp::index_of_v<mp::shape<i, j, k>, Dim>;
  const auto sizes = extents_of(s);
  const auto G = reference_input(index3{s.i, s.j, s.k}, 21);
  const auto t = input<tensor_t<L, double, i, j, k>>(m, sizes, 21);
  const long n = static_cast<long>(G.shape()[axis]);
  const std::string along = " along " + std::string(mp::dim_name_v<Dim>);
  // slices: the whole, the first, the last, from 1 to the end, the middle (at even sizes,
  // results of sizes the mesh dims divide: 4 and n - 4)
  const auto slices = even_sizes
                          ? std::vector<std::array<long, 2>>{{0, n}, {0, 4}, {n - 4, 4}, {4, n - 4}}
                          : std::vector<std::array<long, 2>>{
                                {0, n}, {0, 1}, {n - 1, 1}, {1, n - 1}, {n / 3, n - n / 3 - n / 4}};
  for (const auto& [begin, size] : slices) {
    if (size <= 0) continue;
    check("slice " + std::to_string(begin) + "+" + std::to_string(size) + along,
          mp::slice<Dim>(t, static_cast<std::size_t>(begin), static_cast<std::size_t>(size)),
          remapped(G, axis, static_cast<std::size_t>(size), slice_src, begin, 0, 0.0), exact);
  }
  // pad and concat
  const long after = even_sizes ? 2 : 3, end = even_sizes ? 4 : 1;
  check("pad 2, " + std::to_string(after) + along, mp::pad<Dim>(t, 2, after, 7.5),
        remapped(G, axis, static_cast<std::size_t>(n + 2 + after), pad_src, 2, n, 7.5), exact);
  check("pad 0, " + std::to_string(end) + along, mp::pad<Dim>(t, 0, end),
        remapped(G, axis, static_cast<std::size_t>(n + end), pad_src, 0, n, 0.0), exact);
  {
    const auto tt = mp::concat<Dim>(t, t);
    const auto want = remapped(
        G, axis, static_cast<std::size_t>(2 * n), [](long o, long nn, long) { return o % nn; }, n,
        0, 0.0);
    check("concat(t, t)" + along, tt, want, exact);
  }
  // shifts
  for (const long offset : {0L, 1L, -1L, 3L, -5L, n + 2}) {
    check("shift zero " + std::to_string(offset) + along, mp::shift<Dim>(t, offset),
          remapped(G, axis, static_cast<std::size_t>(n), shift_zero_src, offset, n, 0.0), exact);
    check("shift wrap " + std::to_string(offset) + along,
          mp::shift<Dim>(t, offset, mp::boundary::wrap),
          remapped(G, axis, static_cast<std::size_t>(n), shift_wrap_src, offset, n, 0.0), exact);
  }
}
// halo_exchange along Dim under L: this rank's block with w more elements each side along Dim
template <class Dim, class L>
void check_halos(const mesh_t& m, const sizes3& s) {
  constexpr std::size_t axis = mp::index_of_v<mp::shape<i, j, k>, Dim>;
  const auto G = reference_input(index3{s.i, s.j, s.k}, 21);
  const auto t = input<tensor_t<L, double, i, j, k>>(m, extents_of(s), 21);
  const long n = static_cast<long>(G.shape()[axis]);
  const std::string along = " along " + std::string(mp::dim_name_v<Dim>);
  // from the neighbours, and from further ranks where stripes are shorter than w or empty
  for (const long w : {1L, 2L, 5L}) {
    for (const auto b : {mp::boundary::zero, mp::boundary::wrap}) {
      if (b == mp::boundary::wrap && w > n) continue;  // wider than the dim: an error
      const auto h = mp::halo_exchange<Dim>(t, static_cast<std::size_t>(w), b);
      index3 offsets{}, block{};
      convention_block(t, index3{s.i, s.j, s.k}, offsets, block);
      index3 shape = block;
      shape[axis] += static_cast<std::size_t>(2 * w);
      xt::xtensor<double, 3> want(shape);
      for (std::size_t f = 0; f < want.size(); ++f) {
        auto at = index_of(f, shape);
        for (std::size_t d = 0; d < 3; ++d) at[d] += d == axis ? 0 : offsets[d];
        long g = static_cast<long>(offsets[axis] + at[axis]) - w;
        if (b == mp::boundary::wrap) g = (g % n + n) % n;
        at[axis] = static_cast<std::size_t>(g);
        want.data()[f] = g < 0 || g >= n ? 0.0 : G(at[0], at[1], at[2]);
      }
      INFO("halo_exchange of " << w << (b == mp::boundary::wrap ? " (wrap)" : " (zero)") << along
                               << " [" << mp::to_string(L{}) << "] on " << m.describe());
      CHECK_ALL_RANKS(h.width == static_cast<std::size_t>(w) && h.axis == axis);
      CHECK_ALL_RANKS(meshpp_test::matches(meshpp_test::to_double(h.data), want, exact));
    }
  }
}

// along_cases(f): f.operator()<Dim, Layout>() for each dim moved along and layout of the
// movement cases: Dim split over r or c, and whole
template <class F>
void along_cases(F&& f) {
  f.template operator()<i, replicated>();
  f.template operator()<i, i_r>();
  f.template operator()<i, i_r_j_c>();
  f.template operator()<i, i_c_j_r>();
  f.template operator()<j, j_c>();
  f.template operator()<j, i_r_j_c>();
  f.template operator()<j, i_r>();  // j whole
}
}  // namespace

TEST_CASE("uneven: slice, pad, concat and shift along split and whole dims") {
  on_every_case([](const mesh_t& m, const sizes3& s) {
    along_cases([&]<class D, class L>() { check_along<D, L>(m, s); });
  });
}

TEST_CASE("uneven: halo_exchange along split and whole dims, halos wider than the stripes") {
  on_every_case([](const mesh_t& m, const sizes3& s) {
    along_cases([&]<class D, class L>() { check_halos<D, L>(m, s); });
  });
}

TEST_CASE("uneven: take<vocab> and one_hot<vocab>, vocab split over c (13, 7 and 1)") {
  for (const auto& shape : mesh_shapes()) {
    const rmesh_t m(shape);
    for (const std::size_t nv : {s13, s7, s1}) {
      for (const auto& s : size_cases) {
        CAPTURE(text(s));
        CAPTURE(nv);
        const auto sizes = mp::extents{i{} = s.i, k{} = s.k, vocab{} = nv};
        auto id = [nv](std::size_t a) { return (a * 5 + 3) % nv; };
        // table [vocab/c, k], ids [i/r]
        const auto table = input<rtensor_t<double, vocab, k>>(m, sizes, 31);
        const auto T = reference_input(std::array<std::size_t, 2>{nv, s.k}, 31);
        const auto ids = mp::generate<rtensor_t<std::int32_t, i>>(
            m, sizes, [&](const auto& g) { return static_cast<std::int32_t>(id(g[0])); });
        xt::xtensor<double, 2> want({s.i, s.k});
        for (std::size_t a = 0; a < s.i; ++a)
          for (std::size_t q = 0; q < s.k; ++q) want(a, q) = T(id(a), q);
        const auto looked_up = mp::take<vocab>(table, ids);
        check("take<vocab>", looked_up, want, exact);
        // one_hot [i/r, vocab/c]
        xt::xtensor<double, 2> want_hot({s.i, nv}, 0.0);
        for (std::size_t a = 0; a < s.i; ++a) want_hot(a, id(a)) = 1.0;
        const auto hot = mp::one_hot<vocab, double>(ids, sizes);
        check("one_hot<vocab>", hot, want_hot, exact);
        // einsum over the one-hot tensor: the lookup again (a sum of one term and zeros)
        check("einsum(one_hot, table)", mp::einsum<mp::shape<i, k>>(hot, table), want, exact);
        // the table's dense gradient of a lookup: einsum(one_hot, dy) -> [vocab, k]
        const auto dy = input<rtensor_t<double, i, k>>(m, sizes, 32);
        const auto DY = reference_input(std::array<std::size_t, 2>{s.i, s.k}, 32);
        xt::xtensor<double, 2> want_grad({nv, s.k}, 0.0);
        for (std::size_t a = 0; a < s.i; ++a)
          for (std::size_t q = 0; q < s.k; ++q) want_grad(id(a), q) += DY(a, q);
        check("einsum<vocab, k>(one_hot, dy)", mp::einsum<mp::shape<vocab, k>>(hot, dy), want_grad,
              1e-12);
      }
    }
  }
}
