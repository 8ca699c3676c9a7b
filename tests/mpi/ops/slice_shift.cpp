// slice, pad, concat, split_along, shift and halo_exchange along a named dim of a tensor
// [x, y, z], along x (split over r) and along y (split over c): with the dim whole (replicated,
// or only the other dim split) and with it split (alone, or with the other dim split over the
// other mesh dim). Every result is compared, bit for bit, with a single-rank reference computed
// here in plain loops on the global array; halos are compared exactly, ends included.
//
// Counters: no collective at all when the dim is whole; when it is split, one permute per
// remapped input over the dim's mesh dim, whose values (what this rank sends to others) are
// exactly the elements that must cross ranks, counted here from the stripes: for every other
// member q of the group, the elements of q's output range whose source lies in this rank's
// input stripe.
//
// Bad arguments (a slice outside the dim, split sizes that do not add up, a result size the
// mesh dim does not divide, a wrapping halo wider than the dim) throw meshpp::error on every
// rank with nothing communicated.
//
// Meshes are grid2(n), [1, n] and [n, 1] for n ranks, so the file runs at 1, 2 and 4 ranks.
#include <meshpp/core/counters.hpp>
#include <meshpp/core/random.hpp>
#include <meshpp/ops/scatter_gather.hpp>
#include <meshpp/ops/shift.hpp>
#include <meshpp/ops/slice.hpp>

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <limits>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <vector>

#include <xtensor/xtensor.hpp>
#include <xtensor/xview.hpp>

#include "testing.hpp"

namespace mp = meshpp;
using meshpp_test::world;

MESHPP_DIM(x);
MESHPP_DIM(y);
MESHPP_DIM(z);
MESHPP_DIM(r);
MESHPP_DIM(c);

namespace {
using mesh_t = mp::mesh<mp::axes<r, c>>;
using xyz = mp::shape<x, y, z>;
using global_t = xt::xtensor<double, 3>;
template <class Layout>
using tensor_t = mp::tensor<double, xyz, Layout, mesh_t>;
using index3 = std::array<std::size_t, 3>;

// x and y divide by 4, and every result size below does too; z is a whole inner dim, so a
// piece moved along x or y is more than one element.
constexpr index3 global_shape{12, 8, 3};

template <class Dim>
constexpr std::size_t axis_of = mp::index_of_v<xyz, Dim>;

std::vector<std::array<int, 2>> mesh_shapes() {
  const int n = world().size();
  return {meshpp_test::grid2(n), {1, n}, {n, 1}};
}

// The global arrays: distinct values (and a few whose bits matter), one per seed.
global_t global_array(std::uint64_t seed, index3 shape) {
  auto g = meshpp_test::filled<double>(shape, [seed](std::uint64_t n) {
    return mp::normal_at<double>(seed, n) * 100.0 + static_cast<double>(n);
  });
  g(0, 0, 1) = -0.0;
  g(shape[0] - 1, shape[1] - 1, 2) = std::numeric_limits<double>::denorm_min();
  return g;
}

template <class Layout>
tensor_t<Layout> make(const mesh_t& m, const global_t& g) {
  const auto s = g.shape();
  return mp::scatter<tensor_t<Layout>>(m, mp::extents{x{} = s[0], y{} = s[1], z{} = s[2]}, g);
}

// ---- single-rank references --------------------------------------------------------------

// remapped(g, axis, n, src, fill): along axis, out[o] = g[src(o)], or fill where src(o) < 0
global_t remapped(const global_t& g, std::size_t axis, std::size_t n,
                  const std::function<long(long)>& src, double fill) {
  index3 shape{g.shape()[0], g.shape()[1], g.shape()[2]};
  shape[axis] = n;
  global_t out(shape);
  for (std::size_t i = 0; i < shape[0]; ++i) {
    for (std::size_t j = 0; j < shape[1]; ++j) {
      for (std::size_t k = 0; k < shape[2]; ++k) {
        index3 at{i, j, k};
        const long s = src(static_cast<long>(at[axis]));
        if (s < 0) {
          out(i, j, k) = fill;
        } else {
          at[axis] = static_cast<std::size_t>(s);
          out(i, j, k) = g(at[0], at[1], at[2]);
        }
      }
    }
  }
  return out;
}

// joined_along(a, b, axis): a's elements, then b's, along axis
global_t joined_along(const global_t& a, const global_t& b, std::size_t axis) {
  const long na = static_cast<long>(a.shape()[axis]);
  const std::size_t n = a.shape()[axis] + b.shape()[axis];
  global_t out = remapped(
      a, axis, n, [na](long o) { return o < na ? o : -1; }, 0);
  const global_t tail = remapped(
      b, axis, n, [na](long o) { return o < na ? -1 : o - na; }, 0);
  for (std::size_t i = 0; i < out.shape()[0]; ++i) {
    for (std::size_t j = 0; j < out.shape()[1]; ++j) {
      for (std::size_t k = 0; k < out.shape()[2]; ++k) {
        if (static_cast<long>(index3{i, j, k}[axis]) >= na) out(i, j, k) = tail(i, j, k);
      }
    }
  }
  return out;
}

// source maps: the index along the dim that output index o reads, or -1
std::function<long(long)> within(long n, std::function<long(long)> f) {
  return [n, f](long o) {
    const long s = f(o);
    return s >= 0 && s < n ? s : -1;
  };
}
std::function<long(long)> wrapped(long n, std::function<long(long)> f) {
  return [n, f](long o) { return ((f(o) % n) + n) % n; };
}

// ---- the communication a remap needs -----------------------------------------------------

// One remapped input: its stripe length along the dim, each member's output range, the map.
struct remap_spec {
  long in_stripe;
  std::function<std::array<long, 2>(int)> out_range;
  std::function<long(long)> src;
};

// crossing(spec, p, me, inner): the elements this rank must send to the other members
std::uint64_t crossing(const remap_spec& s, int p, int me, std::uint64_t inner) {
  std::uint64_t n = 0;
  for (int q = 0; q < p; ++q) {
    if (q == me) continue;
    const auto range = s.out_range(q);
    for (long o = range[0]; o < range[1]; ++o) {
      const long from = s.src(o);
      if (from >= me * s.in_stripe && from < (me + 1) * s.in_stripe) ++n;
    }
  }
  return n * inner;
}

std::function<std::array<long, 2>(int)> stripes(long len) {
  return [len](int q) { return std::array<long, 2>{q * len, (q + 1) * len}; };
}

// The mesh dim Dim is split over under Layout: its axis index, or -1 when Dim is whole.
template <class Layout, class Dim>
constexpr int mesh_axis_of() {
  if constexpr (mp::is_split_in_v<Layout, Dim>) {
    return static_cast<int>(mesh_t::axis_v<mp::mesh_dim_of_t<Layout, Dim>>);
  } else {
    return -1;
  }
}

// What the counters must show after remapping `inputs` along Dim: nothing when Dim is whole,
// else one permute per input over Dim's mesh dim when anything crosses ranks at all, its
// values the elements this rank sends.
bool counters_ok(const mesh_t& m, int axis, const std::vector<remap_spec>& inputs,
                 std::uint64_t inner, std::string& seen) {
  std::array<std::array<mp::collective_count, 4>, mp::collective_kinds> want{};
  if (axis >= 0) {
    auto& e = want[static_cast<std::size_t>(mp::collective::permute)][1u << axis];
    for (const auto& s : inputs) {
      // a permute runs when anything crosses between any two ranks (all ranks skip it alike
      // otherwise); its values are what this rank sends
      bool anything_crosses = false;
      for (int c = 0; c < m.sizes()[axis]; ++c) {
        anything_crosses = anything_crosses || crossing(s, m.sizes()[axis], c, inner) > 0;
      }
      if (anything_crosses) ++e.calls;
      e.values += crossing(s, m.sizes()[axis], m.coordinates()[axis], inner);
    }
  }
  bool ok = true;
  for (std::size_t k = 0; k < mp::collective_kinds; ++k) {
    for (unsigned mask = 0; mask < 4; ++mask) {
      const auto& g = m.counters().at(static_cast<mp::collective>(k), mask);
      if (g.calls != 0) {
        seen += std::string(mp::collective_name(static_cast<mp::collective>(k))) + " mask " +
                std::to_string(mask) + ": " + std::to_string(g.calls) + " calls, " +
                std::to_string(g.values) + " values (want " + std::to_string(want[k][mask].calls) +
                ", " + std::to_string(want[k][mask].values) + "); ";
      }
      ok = ok && g.calls == want[k][mask].calls && g.values == want[k][mask].values;
    }
  }
  return ok;
}

bool no_collective(const mesh_t& m) {
  std::string seen;
  return counters_ok(m, -1, {}, 0, seen);
}

// ---- one case: what it computes, and how it is checked ----------------------------------

// Everything about the input a case needs that is not a type: the global array, the dim's
// position in the shape, the mesh axis it is split over (-1: whole), its size, stripe, and the
// elements of this rank's slice per index along it.
struct context {
  const mesh_t* m;
  global_t g;
  std::size_t a;
  int axis;
  long p, n, la;
  std::uint64_t inner;
  std::string dim, layout;
};

template <class Dim, class Layout>
context context_of(const mesh_t& m, const tensor_t<Layout>& t, const global_t& g) {
  context cx{&m,
             g,
             axis_of<Dim>,
             mesh_axis_of<Layout, Dim>(),
             1,
             0,
             0,
             0,
             std::string(Dim::name()),
             mp::to_string(Layout{})};
  cx.p = cx.axis >= 0 ? m.sizes()[cx.axis] : 1;
  cx.n = static_cast<long>(g.shape()[cx.a]);
  cx.la = cx.n / cx.p;
  const auto s = t.local_shape();
  cx.inner = static_cast<std::uint64_t>(s[0] * s[1] * s[2] / s[cx.a]);
  return cx;
}

// A case's reference result and the remapped inputs it sends (for the counters).
struct expectation {
  std::string what;
  global_t reference;
  std::vector<remap_spec> inputs;
};

void check_result(const context& cx, const expectation& e, bool counted_ok, const std::string& seen,
                  const global_t& local, const index3& offsets, const global_t& gathered) {
  INFO(e.what << " on mesh " << cx.m->describe() << ", layout " << cx.layout);
  INFO("counted: " << seen);
  CHECK_ALL_RANKS(counted_ok);
  index3 shape{local.shape()[0], local.shape()[1], local.shape()[2]};
  CHECK_ALL_RANKS(meshpp_test::bit_equal(local, meshpp_test::block(e.reference, offsets, shape)));
  CHECK_ALL_RANKS(meshpp_test::bit_equal(gathered, e.reference));
}

// check(cx, e, out): the counters first (gathering the result is a collective of its own)
template <class Tensor>
void check(const context& cx, const expectation& e, const Tensor& out) {
  std::string seen;
  const bool counted_ok = counters_ok(*cx.m, cx.axis, e.inputs, cx.inner, seen);
  check_result(cx, e, counted_ok, seen, out.local(), out.local_offsets(), mp::gather(out));
}

// The expectations, from the global arrays alone.
expectation slice_case(const context& cx, long begin, long size) {
  const auto src = within(cx.n, [begin](long o) { return o + begin; });
  return {"slice<" + cx.dim + ">(t, " + std::to_string(begin) + ", " + std::to_string(size) + ")",
          remapped(cx.g, cx.a, static_cast<std::size_t>(size), src, 0),
          {{cx.la, stripes(size / cx.p), src}}};
}
expectation pad_case(const context& cx, long before, long after, double value) {
  const long size = cx.n + before + after;
  const auto src = within(cx.n, [before](long o) { return o - before; });
  return {"pad<" + cx.dim + ">(t, " + std::to_string(before) + ", " + std::to_string(after) + ", " +
              std::to_string(value) + ")",
          remapped(cx.g, cx.a, static_cast<std::size_t>(size), src, value),
          {{cx.la, stripes(size / cx.p), src}}};
}
// concat of t and b (first_t) or of b and t; b is nb long along the dim
expectation concat_case(const context& cx, const global_t& gb, bool first_t) {
  const long nb = static_cast<long>(gb.shape()[cx.a]);
  const long size = cx.n + nb;
  const long n1 = first_t ? cx.n : nb;
  const auto from_first = within(n1, [](long o) { return o; });
  const auto from_second = within(size - n1, [n1](long o) { return o - n1; });
  const remap_spec t_spec{cx.la, stripes(size / cx.p), first_t ? from_first : from_second};
  const remap_spec b_spec{nb / cx.p, stripes(size / cx.p), first_t ? from_second : from_first};
  return {"concat<" + cx.dim + (first_t ? ">(t, b)" : ">(b, t)"),
          first_t ? joined_along(cx.g, gb, cx.a) : joined_along(gb, cx.g, cx.a),
          first_t ? std::vector{t_spec, b_spec} : std::vector{b_spec, t_spec}};
}
expectation shift_case(const context& cx, long offset, bool wrap) {
  const auto src = wrap ? wrapped(cx.n, [offset](long o) { return o - offset; })
                        : within(cx.n, [offset](long o) { return o - offset; });
  return {"shift<" + cx.dim + ">(t, " + std::to_string(offset) + (wrap ? ", wrap)" : ", zero)"),
          remapped(cx.g, cx.a, static_cast<std::size_t>(cx.n), src, 0),
          {{cx.la, stripes(cx.la), src}}};
}

// check_halo: this rank's slice extended by w along the dim, index j reading lo - w + j of
// the dim (zero beyond the ends, or the far end when wrapping); the ends are checked too
void check_halo(const context& cx, long w, bool wrap, const global_t& data, std::size_t width,
                std::size_t axis, const index3& offsets) {
  INFO("halo_exchange<" << cx.dim << ">(t, " << w << (wrap ? ", wrap)" : ", zero)") << " on mesh "
                        << cx.m->describe() << ", layout " << cx.layout);
  const auto src =
      wrap ? wrapped(cx.n, [](long o) { return o; }) : within(cx.n, [](long o) { return o; });
  const long lo = static_cast<long>(offsets[cx.a]);
  const global_t extended = remapped(
      cx.g, cx.a, static_cast<std::size_t>(cx.la + 2 * w), [&](long j) { return src(lo - w + j); },
      0);
  index3 at = offsets, shape{data.shape()[0], data.shape()[1], data.shape()[2]};
  at[cx.a] = 0;
  CHECK_ALL_RANKS(width == static_cast<std::size_t>(w));
  CHECK_ALL_RANKS(axis == cx.a);
  CHECK_ALL_RANKS(shape[cx.a] == static_cast<std::size_t>(cx.la + 2 * w));
  CHECK_ALL_RANKS(meshpp_test::bit_equal(data, meshpp_test::block(extended, at, shape)));
  const long la = cx.la;
  std::string seen;
  const bool counted_ok = counters_ok(*cx.m, cx.axis,
                                      {{la,
                                        [la, w](int q) {
                                          return std::array<long, 2>{q * la - w, (q + 1) * la + w};
                                        },
                                        src}},
                                      cx.inner, seen);
  INFO("counted: " << seen);
  CHECK_ALL_RANKS(counted_ok);
}

// ---- the ops along Dim, under Layout -----------------------------------------------------

template <class Dim, class Layout>
void check_slice_pad_concat_split(const mesh_t& m) {
  const global_t g = global_array(1, global_shape);
  const auto t = make<Layout>(m, g);
  const context cx = context_of<Dim, Layout>(m, t, g);
  const long n = cx.n;

  // slice: inside, whole, at the end, from 1
  for (const auto& [begin, size] :
       std::vector<std::array<long, 2>>{{n / 2 - 1, 4}, {0, n}, {n - 4, 4}, {1, n - 4}}) {
    m.counters().reset();
    const auto out =
        mp::slice<Dim>(t, static_cast<std::size_t>(begin), static_cast<std::size_t>(size));
    check(cx, slice_case(cx, begin, size), out);
  }
  // pad: with a value, with the default value (0), after only
  for (const auto& [before, after, value] :
       std::vector<std::tuple<long, long, double>>{{1, 3, 7.5}, {4, 0, 0.0}, {0, 4, -1.0}}) {
    m.counters().reset();
    const auto b = static_cast<std::size_t>(before), e = static_cast<std::size_t>(after);
    const auto out = value == 0.0 ? mp::pad<Dim>(t, b, e) : mp::pad<Dim>(t, b, e, value);
    check(cx, pad_case(cx, before, after, value), out);
  }
  // concat: t then a tensor 4 long along Dim, and the other way round
  index3 short_shape = global_shape;
  short_shape[cx.a] = 4;
  const global_t gb = global_array(2, short_shape);
  const auto b = make<Layout>(m, gb);
  m.counters().reset();
  const auto tb = mp::concat<Dim>(t, b);
  check(cx, concat_case(cx, gb, true), tb);
  m.counters().reset();
  const auto bt = mp::concat<Dim>(b, t);
  check(cx, concat_case(cx, gb, false), bt);

  // split_along: two ways, and one part; the counters cover every part
  const auto un = static_cast<std::size_t>(n);
  for (const auto& sizes : std::vector<std::vector<std::size_t>>{{4, un - 4}, {un - 4, 4}, {un}}) {
    m.counters().reset();
    const auto parts = mp::split_along<Dim>(t, sizes);
    CHECK_ALL_RANKS(parts.size() == sizes.size());
    expectation all{"split_along<" + cx.dim + ">", {}, {}};
    std::vector<expectation> each;
    long begin = 0;
    for (std::size_t s : sizes) {
      each.push_back(slice_case(cx, begin, static_cast<long>(s)));
      all.inputs.push_back(each.back().inputs.front());
      all.what += ' ';  // not `" " + std::to_string(s)`: a g++ 12 -Wrestrict false positive
      all.what += std::to_string(s);
      begin += static_cast<long>(s);
    }
    std::string seen;
    const bool counted_ok = counters_ok(m, cx.axis, all.inputs, cx.inner, seen);
    INFO(all.what << " on mesh " << m.describe() << ", layout " << cx.layout << ": " << seen);
    CHECK_ALL_RANKS(counted_ok);
    const context quiet{&m, g, cx.a, -1, cx.p, n, cx.la, 0, cx.dim, cx.layout};
    for (std::size_t i = 0; i < parts.size() && i < each.size(); ++i) {
      m.counters().reset();  // each part on its own: values only, the counters are checked above
      each[i].inputs.clear();
      check(quiet, each[i], parts[i]);
    }
  }
}

template <class Dim, class Layout>
void check_shift_halo(const mesh_t& m) {
  const global_t g = global_array(3, global_shape);
  const auto t = make<Layout>(m, g);
  const context cx = context_of<Dim, Layout>(m, t, g);
  const long n = cx.n;

  // offsets: none, one either way, more than a stripe (3 > 12/4 and 8/4), more than the dim
  for (const long offset : {0L, 1L, -1L, 3L, -5L, n + 2, -(2 * n + 1)}) {
    for (const auto b : {mp::boundary::zero, mp::boundary::wrap}) {
      m.counters().reset();
      const auto out = mp::shift<Dim>(t, offset, b);
      check(cx, shift_case(cx, offset, b == mp::boundary::wrap), out);
    }
  }
  // halos of 1 and 2 (a stencil's usual), of more than a stripe, and as wide as the dim
  for (const long w : {1L, 2L, 5L, n}) {
    for (const auto b : {mp::boundary::zero, mp::boundary::wrap}) {
      m.counters().reset();
      const auto h = mp::halo_exchange<Dim>(t, static_cast<std::size_t>(w), b);
      check_halo(cx, w, b == mp::boundary::wrap, h.data, h.width, h.axis, t.local_offsets());
    }
  }
}

using mp::layout;
using mp::split;
// Along x: whole (replicated; y split over c) and split (x over r; and y over c too).
using along_x = std::tuple<layout<>, layout<split<y, c>>, layout<split<x, r>>,
                           layout<split<x, r>, split<y, c>>>;
// Along y: whole (replicated; x split over r) and split (y over c; and x over r too).
using along_y = std::tuple<layout<>, layout<split<x, r>>, layout<split<y, c>>,
                           layout<split<x, r>, split<y, c>>>;

template <class Dim, class... Layouts>
void slice_pad_concat_split_all(std::tuple<Layouts...>*) {
  for (const auto& shape : mesh_shapes()) {
    const mesh_t m(shape);
    (check_slice_pad_concat_split<Dim, Layouts>(m), ...);
  }
}
template <class Dim, class... Layouts>
void shift_halo_all(std::tuple<Layouts...>*) {
  for (const auto& shape : mesh_shapes()) {
    const mesh_t m(shape);
    (check_shift_halo<Dim, Layouts>(m), ...);
  }
}
}  // namespace

TEST_CASE("slice, pad, concat and split_along along x") {
  slice_pad_concat_split_all<x>(static_cast<along_x*>(nullptr));
}
TEST_CASE("slice, pad, concat and split_along along y") {
  slice_pad_concat_split_all<y>(static_cast<along_y*>(nullptr));
}
TEST_CASE("shift and halo_exchange along x") { shift_halo_all<x>(static_cast<along_x*>(nullptr)); }
TEST_CASE("shift and halo_exchange along y") { shift_halo_all<y>(static_cast<along_y*>(nullptr)); }

TEST_CASE("bad arguments throw on every rank, with nothing communicated") {
  const global_t g = global_array(4, global_shape);
  for (const auto& shape : mesh_shapes()) {
    const mesh_t m(shape);
    CAPTURE(m.describe());
    const auto t = make<layout<split<x, r>, split<y, c>>>(m, g);
    m.counters().reset();
    auto throws = [&](auto f, std::initializer_list<std::string_view> parts) {
      return meshpp_test::throws_with<mp::error>(f, parts);
    };
    CHECK_ALL_RANKS(throws([&] { (void)mp::slice<x>(t, 10, 4); },
                           {"meshpp::slice<x>: [10, 14) is outside the dim of size 12"}));
    CHECK_ALL_RANKS(throws([&] { (void)mp::slice<x>(t, 13, 0); },
                           {"meshpp::slice<x>: [13, 13) is outside the dim of size 12"}));
    // begin + size wraps around in std::size_t: still outside
    CHECK_ALL_RANKS(
        throws([&] { (void)mp::slice<x>(t, std::numeric_limits<std::size_t>::max(), 2); },
               {"meshpp::slice<x>", "is outside the dim of size 12"}));
    CHECK_ALL_RANKS(throws(
        [&] {
          (void)mp::split_along<x>(t, {4, 4});
        },
        {"meshpp::split_along<x>: the sizes add up to 8, not the dim's size 12"}));
    CHECK_ALL_RANKS(throws(
        [&] {
          (void)mp::split_along<y>(t, {4, 5});
        },
        {"meshpp::split_along<y>: the sizes add up to 9, not the dim's size 8"}));
    CHECK_ALL_RANKS(throws([&] { (void)mp::halo_exchange<x>(t, 13, mp::boundary::wrap); },
                           {"meshpp::halo_exchange<x>: a halo of 13 is wider than the dim"}));
    CHECK_ALL_RANKS(no_collective(m));

    // result sizes the mesh dim does not divide: laid out in near-equal blocks, with the values
    // of the whole array's slices (the whole array: gathered from t, checked above)
    const global_t whole = mp::gather(t);
    const auto rows = [&](std::size_t b, std::size_t e) {
      return global_t(xt::view(whole, xt::range(b, e), xt::all(), xt::all()));
    };
    CHECK_ALL_RANKS(mp::gather(mp::slice<x>(t, 0, 5)) == rows(0, 5));
    global_t padded = xt::zeros<double>({whole.shape()[0] + 1, whole.shape()[1], whole.shape()[2]});
    xt::view(padded, xt::range(1, whole.shape()[0] + 1), xt::all(), xt::all()) = whole;
    CHECK_ALL_RANKS(mp::gather(mp::pad<x>(t, 1, 0)) == padded);
    const auto parts = mp::split_along<x>(t, {2, 3, 7});
    CHECK_ALL_RANKS(mp::gather(parts[0]) == rows(0, 2) && mp::gather(parts[1]) == rows(2, 5) &&
                    mp::gather(parts[2]) == rows(5, 12));

    // concat of tensors that disagree on another dim
    index3 other = global_shape;
    other[1] = 4;
    const auto u = make<layout<split<x, r>, split<y, c>>>(m, global_array(6, other));
    m.counters().reset();
    CHECK_ALL_RANKS(throws([&] { (void)mp::concat<x>(t, u); },
                           {"meshpp::concat<x>: the inputs disagree on the size of dim 'y'"}));
    CHECK_ALL_RANKS(no_collective(m));
  }
}
