// Shared by the relayout tests (relayout*.cpp): the 13 injective layouts of a tensor [x, y, z]
// on a 2-D mesh [r, c], a global array whose every bit matters, the collectives the paper's
// rules prescribe for a pair of layouts, and the check of one relayout against them.
//
// Per mesh dim m, from the dim a split over m before to the dim b split over it after
// (Mesh-TensorFlow paper 6.1):
//   a = b               nothing
//   a, none after       one allgather over m, its values the local size at that point
//   none before, b      no collective: a local slice
//   a, then b != a      one alltoall over m
// except a cycle, two dims trading mesh dims (x:r, y:c -> y:r, x:c), which relayout.hpp
// breaks with one allgather, then an alltoall, then a slice. Every collective kind and
// mesh-dim set is checked, so no extra collective can hide.
//
// "The local size at that point" follows the order relayout.hpp documents: free slices first,
// then alltoalls, then allgathers; the order of two allgathers is left open (either is
// accepted), as is the mesh dim that breaks a cycle.
//
// The pairs are split over three files (by source layout) to keep each one quick to compile.
#pragma once

#include <meshpp/core/counters.hpp>
#include <meshpp/core/random.hpp>
#include <meshpp/ops/relayout.hpp>
#include <meshpp/ops/scatter_gather.hpp>

#include "small_pieces.hpp"

#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include <xtensor/xtensor.hpp>

#include "testing.hpp"

MESHPP_DIM(x);
MESHPP_DIM(y);
MESHPP_DIM(z);
MESHPP_DIM(r);
MESHPP_DIM(c);

namespace relayout_test {

namespace mp = meshpp;

using mesh_t = mp::mesh<mp::axes<r, c>>;
using xyz = mp::shape<x, y, z>;
using global_t = xt::xtensor<double, 3>;

// Every size divides by every mesh dim of every mesh used at 1, 2 and 4 ranks, and the three
// differ, so a transposed block cannot pass.
constexpr std::array<std::size_t, 3> global_shape{4, 8, 12};
const auto sizes = mp::extents{x{} = global_shape[0], y{} = global_shape[1], z{} = global_shape[2]};
constexpr std::uint64_t total = global_shape[0] * global_shape[1] * global_shape[2];
constexpr std::array<const char*, 3> dim_names{"x", "y", "z"};
constexpr std::array<const char*, 2> mesh_dim_names{"r", "c"};
constexpr unsigned mask_r = 1u, mask_c = 2u;  // bit i is mesh axis i

// A layout, spelled independently of the library: on[m] is the index (0 x, 1 y, 2 z) of the
// tensor dim split over mesh dim m (0 r, 1 c), or -1.
struct layout_spec {
  std::array<int, 2> on;
};

inline std::string describe(const layout_spec& l) {
  std::string out;
  for (int m = 0; m < 2; ++m) {
    if (l.on[m] < 0) continue;
    out += out.empty() ? "" : ";";
    out += std::string(dim_names[l.on[m]]) + ":" + mesh_dim_names[m];
  }
  return out.empty() ? "(replicated)" : out;
}

template <int D>
using dim_t = std::conditional_t<D == 0, x, std::conditional_t<D == 1, y, z>>;
template <int D, class M>
using rule_t = std::conditional_t<(D < 0), mp::layout<>, mp::layout<mp::split<dim_t<D>, M>>>;
template <class A, class B>
struct joined;
template <class... A, class... B>
struct joined<mp::layout<A...>, mp::layout<B...>> {
  using type = mp::layout<A..., B...>;
};

// spec<OnR, OnC>: the layout as library rules and as a layout_spec
template <int OnR, int OnC>
struct spec {
  using rules = typename joined<rule_t<OnR, r>, rule_t<OnC, c>>::type;
  static constexpr layout_spec value{{OnR, OnC}};
};

template <class... Specs>
struct list {};
using replicated = list<spec<-1, -1>>;
using one_dim_layouts =
    list<spec<0, -1>, spec<1, -1>, spec<2, -1>, spec<-1, 0>, spec<-1, 1>, spec<-1, 2>>;
using two_dim_layouts =
    list<spec<0, 1>, spec<0, 2>, spec<1, 0>, spec<1, 2>, spec<2, 0>, spec<2, 1>>;
template <class... L>
struct joined_list;
template <class... A, class... B, class... C>
struct joined_list<list<A...>, list<B...>, list<C...>> {
  using type = list<A..., B..., C...>;
};
// all 13: every injective layout (at most one dim per mesh dim, never one dim on both)
using all_layouts = typename joined_list<replicated, one_dim_layouts, two_dim_layouts>::type;

// The global array: distinct values, and some whose bits matter (negative zero, a denormal,
// infinities, NaNs with payloads), so that only a bitwise copy passes.
inline global_t global_array() {
  auto g = meshpp_test::filled<double>(global_shape, [](std::uint64_t n) {
    return mp::normal_at<double>(11, n) * 1000.0 + static_cast<double>(n);
  });
  g(0, 0, 1) = -0.0;
  g(3, 7, 11) = std::numeric_limits<double>::denorm_min();
  g(1, 2, 3) = std::numeric_limits<double>::infinity();
  g(2, 5, 0) = -std::numeric_limits<double>::infinity();
  g(0, 7, 6) = std::bit_cast<double>(std::uint64_t{0x7ff8'0000'dead'beefu});
  g(3, 0, 9) = std::bit_cast<double>(std::uint64_t{0xfff0'0000'0000'0001u});  // signalling NaN
  return g;
}

// counted: calls and values of every collective kind over every mesh-dim set
using counted = std::array<std::array<mp::collective_count, 4>, mp::collective_kinds>;

inline counted snapshot(const mesh_t& m) {
  counted out{};
  for (std::size_t k = 0; k < mp::collective_kinds; ++k) {
    for (unsigned mask = 0; mask < 4; ++mask) {
      out[k][mask] = m.counters().at(static_cast<mp::collective>(k), mask);
    }
  }
  return out;
}

inline void expect(counted& e, mp::collective k, unsigned mask, std::uint64_t values) {
  auto& entry = e[static_cast<std::size_t>(k)][mask];
  ++entry.calls;
  entry.values += values;
}

inline bool same_calls_and_values(const counted& a, const counted& b) {
  for (std::size_t k = 0; k < mp::collective_kinds; ++k) {
    for (unsigned mask = 0; mask < 4; ++mask) {
      if (a[k][mask].calls != b[k][mask].calls || a[k][mask].values != b[k][mask].values) {
        return false;
      }
    }
  }
  return true;
}

inline std::string describe(const counted& e) {
  std::string out;
  for (std::size_t k = 0; k < mp::collective_kinds; ++k) {
    for (unsigned mask = 0; mask < 4; ++mask) {
      if (e[k][mask].calls == 0 && e[k][mask].values == 0) continue;
      out += std::string(mp::collective_name(static_cast<mp::collective>(k))) + " over {" +
             (mask & mask_r ? "r" : "") + (mask == 3 ? "," : "") + (mask & mask_c ? "c" : "") +
             "}: " + std::to_string(e[k][mask].calls) + " calls, " +
             std::to_string(e[k][mask].values) + " values; ";
    }
  }
  return out.empty() ? "no collective" : out;
}

// counted_by_rule(e, sizes): e as the counters keep it, a group of one rank counting nothing
inline counted counted_by_rule(counted e, const std::array<int, 2>& sizes) {
  for (unsigned mask = 1; mask < 4; ++mask) {
    const int group = (mask & mask_r ? sizes[0] : 1) * (mask & mask_c ? sizes[1] : 1);
    if (group == 1)
      for (auto& kind : e) kind[mask] = {};
  }
  return e;
}

constexpr bool is_cycle(const layout_spec& from, const layout_spec& to) {
  return from.on[0] >= 0 && from.on[1] >= 0 && to.on[0] == from.on[1] && to.on[1] == from.on[0];
}

// The counters the paper's rules give, run in relayout.hpp's documented order, every way the
// order is left open. cur is the layout so far; `local` the slice's size under it.
inline void paper_steps(std::array<int, 2> cur, const std::array<int, 2>& to,
                        const std::array<int, 2>& p, counted e, std::vector<counted>& out) {
  auto local = [&] {
    std::uint64_t n = total;
    for (int m = 0; m < 2; ++m) n /= cur[m] >= 0 ? static_cast<std::uint64_t>(p[m]) : 1u;
    return n;
  };
  auto mask = [](int m) { return m == 0 ? mask_r : mask_c; };
  auto split_on_other = [&](int m, int d) { return cur[1 - m] == d; };
  if (cur == to) {
    out.push_back(e);
    return;
  }
  // none before, b after: a local slice, as soon as b is not split over the other mesh dim
  bool sliced = false;
  for (int m = 0; m < 2; ++m) {
    if (cur[m] < 0 && to[m] >= 0 && !split_on_other(m, to[m])) {
      cur[m] = to[m];
      sliced = true;
    }
  }
  if (sliced) return paper_steps(cur, to, p, e, out);
  // a before, b after: one alltoall, as soon as b is not split over the other mesh dim
  for (int m = 0; m < 2; ++m) {
    if (cur[m] >= 0 && to[m] >= 0 && cur[m] != to[m] && !split_on_other(m, to[m])) {
      expect(e, mp::collective::alltoall, mask(m), local());
      cur[m] = to[m];
      return paper_steps(cur, to, p, e, out);
    }
  }
  // a before, none after: one allgather (either one first if both); with none to do, the dims
  // are in a cycle, and either mesh dim may be gathered to break it
  std::vector<int> gathers;
  for (int m = 0; m < 2; ++m) {
    if (cur[m] >= 0 && to[m] < 0) gathers.push_back(m);
  }
  if (gathers.empty()) gathers = {0, 1};
  for (int m : gathers) {
    counted branch = e;
    expect(branch, mp::collective::allgather, mask(m), local());
    auto next = cur;
    next[m] = -1;
    paper_steps(next, to, p, branch, out);
  }
}

// The collectives per mesh dim, by the paper's rule alone: calls only.
inline counted paper_calls(const layout_spec& from, const layout_spec& to) {
  counted e{};
  for (int m = 0; m < 2; ++m) {
    const int a = from.on[m], b = to.on[m];
    if (a >= 0 && b < 0) expect(e, mp::collective::allgather, m == 0 ? mask_r : mask_c, 0);
    if (a >= 0 && b >= 0 && a != b) {
      expect(e, mp::collective::alltoall, m == 0 ? mask_r : mask_c, 0);
    }
  }
  return e;
}

inline bool same_calls(const counted& a, const counted& b) {
  for (std::size_t k = 0; k < mp::collective_kinds; ++k) {
    for (unsigned mask = 0; mask < 4; ++mask) {
      if (a[k][mask].calls != b[k][mask].calls) return false;
    }
  }
  return true;
}

// The slice a layout gives this rank, worked out from the mesh coordinates.
inline void expected_slice(const mesh_t& m, const layout_spec& l,
                           std::array<std::size_t, 3>& offsets, std::array<std::size_t, 3>& shape) {
  shape = global_shape;
  offsets = {0, 0, 0};
  for (int a = 0; a < 2; ++a) {
    const int d = l.on[a];
    if (d < 0) continue;
    shape[d] = global_shape[d] / static_cast<std::size_t>(m.sizes()[a]);
    offsets[d] = shape[d] * static_cast<std::size_t>(m.coordinates()[a]);
  }
}

// Everything about one pair that needs no types: slice, gathered result, counters.
inline void check_result(const mesh_t& m, const layout_spec& from, const layout_spec& to,
                         const counted& got, const global_t& local,
                         const std::array<std::size_t, 3>& offsets, const global_t& gathered,
                         const global_t& global) {
  INFO(describe(from) << " -> " << describe(to) << " on mesh " << m.describe());
  std::array<std::size_t, 3> want_offsets{}, want_shape{};
  expected_slice(m, to, want_offsets, want_shape);
  CHECK_ALL_RANKS(offsets == want_offsets);
  CHECK_ALL_RANKS(
      meshpp_test::bit_equal(local, meshpp_test::block(global, want_offsets, want_shape)));
  CHECK_ALL_RANKS(meshpp_test::bit_equal(gathered, global));

  std::vector<counted> allowed;
  paper_steps(from.on, to.on, m.sizes(), counted{}, allowed);
  for (auto& e : allowed) e = counted_by_rule(e, m.sizes());
  bool match = false;
  for (const auto& e : allowed) match = match || same_calls_and_values(got, e);
  if (!is_cycle(from, to)) {
    // outside cycles, exactly the paper's one collective per mesh dim (of more than one rank)
    match = match && same_calls(got, counted_by_rule(paper_calls(from, to), m.sizes()));
  }
  INFO("counted: " << describe(got) << "; expected: " << describe(allowed.front())
                   << (allowed.size() > 1 ? " (or another order)" : ""));
  CHECK_ALL_RANKS(match);
}

// One pair: scatter the global array under From, relayout to To.
template <class From, class To>
void check_pair(const mesh_t& m, const global_t& global) {
  using from_t = mp::tensor<double, xyz, mp::layout_for_t<typename From::rules, xyz>, mesh_t>;
  const auto t = mp::scatter<from_t>(m, sizes, global);
  m.counters().reset();
  const auto u = mp::relayout<typename To::rules>(t);
  const counted got = snapshot(m);
  static_assert(
      std::is_same_v<typename decltype(u)::layout_type, mp::layout_for_t<typename To::rules, xyz>>);
  check_result(m, From::value, To::value, got, u.local(), u.local_offsets(), mp::gather(u), global);
}

template <class From, class... To>
void from_one(const mesh_t& m, const global_t& global, list<To...>) {
  (check_pair<From, To>(m, global), ...);
}

using meshpp_test::direct_copies;  // (tests/support/small_pieces.hpp)
using meshpp_test::small_pieces;

// The meshes every pair runs on: the squarest grid (2x2 at 4 ranks), one row, one column.
inline std::vector<std::array<int, 2>> mesh_shapes() {
  const int n = meshpp_test::world().size();
  return {meshpp_test::grid2(n), {1, n}, {n, 1}};
}

// every_pair(list<From...>{}): each source layout to each of the 13, on every mesh shape
template <class... From>
void every_pair(list<From...>) {
  const global_t global = global_array();
  for (const auto& shape : mesh_shapes()) {
    const mesh_t m(shape);
    CAPTURE(m.describe());
    (from_one<From>(m, global, all_layouts{}), ...);
  }
}

}  // namespace relayout_test
