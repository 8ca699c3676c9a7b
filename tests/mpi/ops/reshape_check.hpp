// Shared by the reshape tests (reshape*.cpp): the sizes and shapes of the cases ([batch, seq,
// d_model], [tokens, d_model], [batch, seq, heads, d_kv]), flat data every shape holds in the
// same global row-major order, and run<Rules, InDims...>(): a reshape on every mesh shape,
// checked against the flat data (gathered, bit for bit, and each rank's slice) and against the
// exact list of collectives the case expects.
//
// Meshes are grid2(n), [1, n] and [n, 1] for n ranks, so the tests run at 1, 2 and 4 ranks;
// every size divides by every mesh dim there.
#pragma once

#include <meshpp/core/counters.hpp>
#include <meshpp/core/random.hpp>
#include <meshpp/ops/reshape.hpp>
#include <meshpp/ops/scatter_gather.hpp>

#include <array>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include <xtensor/xtensor.hpp>

#include "testing.hpp"

MESHPP_DIM(batch);
MESHPP_DIM(seq);
MESHPP_DIM(d_model);
MESHPP_DIM(tokens);
MESHPP_DIM(heads);
MESHPP_DIM(d_kv);
MESHPP_DIM(hidden);
MESHPP_DIM(r);
MESHPP_DIM(c);

namespace reshape_test {

namespace mp = meshpp;
using meshpp_test::world;

// tokens = batch * seq and d_model = heads * d_kv; all divide by 4.
constexpr std::size_t nb = 4, ns = 4, nd = 16, nh = 4, nk = 4, nt = nb * ns;
constexpr std::uint64_t total = nb * ns * nd;
const auto bsd_sizes = mp::extents{batch{} = nb, seq{} = ns, d_model{} = nd};
const auto td_sizes = mp::extents{tokens{} = nt, d_model{} = nd};
const auto bshk_sizes = mp::extents{batch{} = nb, seq{} = ns, heads{} = nh, d_kv{} = nk};
constexpr std::array<std::size_t, 3> bsd{nb, ns, nd};
constexpr std::array<std::size_t, 2> td{nt, nd};
constexpr std::array<std::size_t, 4> bshk{nb, ns, nh, nk};
constexpr unsigned R = 1u, C = 2u;  // mesh-dim sets as bit sets: bit i is axis i

template <class Rules>
using mesh_of = mp::mesh<mp::axes<r, c>, Rules>;

inline std::vector<std::array<int, 2>> mesh_shapes() {
  const int n = world().size();
  return {meshpp_test::grid2(n), {1, n}, {n, 1}};
}

// The flat data every shape of the test holds, in global row-major order: distinct values
// and a few whose bits matter.
inline double value_at(std::uint64_t i) {
  if (i == 5) return -0.0;
  if (i == 77) return std::numeric_limits<double>::denorm_min();
  return mp::normal_at<double>(3, i) * 100.0 + static_cast<double>(i);
}
template <std::size_t N>
xt::xtensor<double, N> data_as(const std::array<std::size_t, N>& shape) {
  return meshpp_test::filled<double>(shape, value_at);
}

// One collective the case expects; a case expects a list of them and nothing else.
struct step {
  mp::collective kind;
  unsigned mask;
  std::uint64_t values;
};
using steps = std::vector<step>;

inline bool counters_are(const mp::counters& got, const steps& want, std::string& seen) {
  std::array<std::array<mp::collective_count, 4>, mp::collective_kinds> expected{};
  for (const auto& s : want) {
    if (got.group_of_one(s.mask)) continue;  // a group of one rank counts nothing
    auto& e = expected[static_cast<std::size_t>(s.kind)][s.mask];
    ++e.calls;
    e.values += s.values;
  }
  bool same = true;
  for (std::size_t k = 0; k < mp::collective_kinds; ++k) {
    for (unsigned mask = 0; mask < 4; ++mask) {
      const auto& g = got.at(static_cast<mp::collective>(k), mask);
      if (g.calls != 0) {
        seen += std::string(mp::collective_name(static_cast<mp::collective>(k))) + " mask " +
                std::to_string(mask) + ": " + std::to_string(g.calls) + " calls, " +
                std::to_string(g.values) + " values; ";
      }
      same = same && g.calls == expected[k][mask].calls && g.values == expected[k][mask].values;
    }
  }
  return same;
}

inline bool no_collective(const mp::counters& got) {
  std::string seen;
  return counters_are(got, {}, seen);
}

// The checks of one result that need no types beyond its rank.
template <std::size_t N>
void check_result(const char* what, const std::string& mesh, const xt::xtensor<double, N>& local,
                  const std::array<std::size_t, N>& offsets, const xt::xtensor<double, N>& gathered,
                  const std::array<std::size_t, N>& shape, const mp::counters& counted,
                  const steps& want) {
  INFO(std::string(what) << " on mesh " << mesh);
  const auto reference = data_as(shape);  // the same flat data, in the new shape
  CHECK_ALL_RANKS(meshpp_test::bit_equal(gathered, reference));
  std::array<std::size_t, N> local_shape{};
  for (std::size_t i = 0; i < N; ++i) local_shape[i] = local.shape()[i];
  CHECK_ALL_RANKS(
      meshpp_test::bit_equal(local, meshpp_test::block(reference, offsets, local_shape)));
  std::string seen;
  const bool ok = counters_are(counted, want, seen);
  INFO("counted: " << (seen.empty() ? "no collective" : seen));
  CHECK_ALL_RANKS(ok);
}

// run<Rules, InDims...>(what, in_sizes, in_shape, out_shape, op, want): on every mesh shape,
// scatter the flat data as [InDims...] under Rules, apply op (a reshape or rename), and check
// the result against the flat data in out_shape and the counters against want(pr, pc).
template <class Rules, class... InDims, class InSizes, std::size_t K, std::size_t N, class Op,
          class Want>
void run(const char* what, const InSizes& in_sizes, const std::array<std::size_t, K>& in_shape,
         const std::array<std::size_t, N>& out_shape, Op op, Want want) {
  for (const auto& shape : mesh_shapes()) {
    const mesh_of<Rules> m(shape);
    const auto t = mp::scatter<InDims...>(m, in_sizes, data_as(in_shape));
    m.counters().reset();
    const auto out = op(t);
    using out_t = std::decay_t<decltype(out)>;
    static_assert(std::is_same_v<typename out_t::layout_type,
                                 mp::layout_for_t<Rules, typename out_t::shape_type>>,
                  "the result is laid out by the mesh's rules");
    static_assert(out_t::rank == N);
    const mp::counters counted = m.counters();
    check_result(what, m.describe(), out.local(), out.local_offsets(), mp::gather(out), out_shape,
                 counted,
                 want(static_cast<std::uint64_t>(shape[0]), static_cast<std::uint64_t>(shape[1])));
  }
}

// The reshapes of the cases, as callables.
inline constexpr auto to_tokens = [](const auto& t) {
  return mp::reshape<mp::shape<tokens, d_model>>(t);  // tokens inferred: its run has one dim
};
inline constexpr auto to_tokens_sized = [](const auto& t) {
  return mp::reshape<mp::shape<tokens, d_model>>(t, mp::extents{tokens{} = nt});
};
inline constexpr auto from_tokens = [](const auto& t) {
  return mp::reshape<mp::shape<batch, seq, d_model>>(t, mp::extents{batch{} = nb, seq{} = ns});
};
inline constexpr auto to_heads = [](const auto& t) {
  return mp::reshape<mp::shape<batch, seq, heads, d_kv>>(t, mp::extents{heads{} = nh, d_kv{} = nk});
};
inline constexpr auto from_heads = [](const auto& t) {
  return mp::reshape<mp::shape<batch, seq, d_model>>(t);  // d_model inferred
};
inline constexpr auto to_hidden = [](const auto& t) { return mp::rename<d_model, hidden>(t); };

inline const auto nothing = [](std::uint64_t, std::uint64_t) { return steps{}; };

using mp::layout;
using mp::split;
using mp::collective::allgather;
using mp::collective::alltoall;

}  // namespace reshape_test
