// The fixture of embedding.cpp and embedding_one_hot.cpp (split to keep each under the
// compile-time budget).
#pragma once

#include <meshpp/core/counters.hpp>
#include <meshpp/core/create.hpp>
#include <meshpp/expr/functions.hpp>
#include <meshpp/ops/einsum.hpp>
#include <meshpp/ops/embedding.hpp>
#include <meshpp/ops/scatter_gather.hpp>

#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <type_traits>
#include <vector>

#include <boost/mpi/collectives/all_reduce.hpp>
#include <xtensor/xtensor.hpp>

#include "testing.hpp"

namespace mp = meshpp;
using meshpp_test::ranks_in_step;
using meshpp_test::world;

MESHPP_DIM(batch);
MESHPP_DIM(seq);
MESHPP_DIM(vocab);
MESHPP_DIM(d_model);
MESHPP_DIM(x);
MESHPP_DIM(y);
MESHPP_DIM(z);

namespace {
constexpr std::size_t B = 4, S = 4, V = 8, D = 4;
const auto sizes = mp::extents{batch{} = B, seq{} = S, vocab{} = V, d_model{} = D};

// The inputs, as functions of the global index (exact in every value type used).
double table_value(std::size_t v, std::size_t d) { return double(v * 16 + d) + 0.25; }
[[maybe_unused]] double batched_table_value(std::size_t b, std::size_t v, std::size_t d) {
  return double(b * 1000 + v * 16 + d) + 0.5;
}
std::size_t id_value(std::size_t b, std::size_t s) { return (b * 5 + s * 3) % V; }  // every row

// Every mesh shape [x, y, z] of n ranks.
std::vector<std::array<int, 3>> mesh_shapes(int n) { return meshpp_test::mesh_shapes<3>(n); }

// The reference lookup: out[b, s, d] = table[ids[b, s], d]
template <class T>
xt::xtensor<T, 3> reference_lookup() {
  xt::xtensor<T, 3> r = xt::xtensor<T, 3>::from_shape({B, S, D});
  for (std::size_t b = 0; b < B; ++b)
    for (std::size_t s = 0; s < S; ++s)
      for (std::size_t d = 0; d < D; ++d)
        r(b, s, d) = static_cast<T>(table_value(id_value(b, s), d));
  return r;
}

// make_table<Table>(m): table[vocab, d_model] or table[d_model, vocab], by name
template <class Table, class Mesh>
Table make_table(const Mesh& m) {
  using TS = typename Table::shape_type;
  return mp::generate<Table>(m, sizes, [](const auto& g) {
    return table_value(g[mp::index_of_v<TS, vocab>], g[mp::index_of_v<TS, d_model>]);
  });
}
template <class Ids, class Mesh>
Ids make_ids(const Mesh& m) {
  return mp::generate<Ids>(m, sizes, [](const auto& g) { return id_value(g[0], g[1]); });
}

// The layouts tried: rules over the mesh axes<x, y, z>.
using replicated = mp::layout<>;
using vocab_split = mp::layout<mp::split<vocab, x>>;
using vocab_and_d_model_split = mp::layout<mp::split<vocab, x>, mp::split<d_model, y>>;
using vocab_and_batch_split = mp::layout<mp::split<vocab, x>, mp::split<batch, y>>;
using all_three_split = mp::layout<mp::split<vocab, x>, mp::split<d_model, y>, mp::split<batch, z>>;
using vocab_on_z_seq_on_x = mp::layout<mp::split<vocab, z>, mp::split<seq, x>>;
using vocab_whole_ids_split = mp::layout<mp::split<d_model, y>, mp::split<batch, z>>;
using vocab_whole_ids_split_twice =
    mp::layout<mp::split<batch, x>, mp::split<seq, y>, mp::split<d_model, z>>;

// What the mesh recorded is exactly one allreduce over vocab's mesh dim, of `values` values
// (no collective at all when vocab is whole).
template <class Rules, class Mesh>
bool recorded_lookup(const Mesh& m, std::size_t values) {
  const auto& c = m.counters();
  for (std::size_t k = 0; k < mp::collective_kinds; ++k) {
    const auto kind = static_cast<mp::collective>(k);
    std::uint64_t calls = 0;
    if constexpr (mp::is_split_in_v<Rules, vocab>) {
      if (kind == mp::collective::allreduce) {
        constexpr unsigned mask = Mesh::template mask_v<mp::mesh_dim_of_t<Rules, vocab>>;
        calls = c.group_of_one(mask) ? 0 : 1;  // a group of one rank counts nothing
        const auto& one = c.at(kind, mask);
        if (one.calls != calls || one.values != calls * values) return false;
      }
    }
    if (c.total(kind).calls != calls) return false;
  }
  return true;
}
[[maybe_unused]] bool recorded_nothing(const mp::counters& c) {
  for (std::size_t k = 0; k < mp::collective_kinds; ++k) {
    if (c.total(static_cast<mp::collective>(k)).calls != 0) return false;
  }
  return true;
}

// take<vocab>(table, ids) under Rules on every mesh shape: values, layout, counters.
template <class Rules, class T = float, class Id = int,
          class TableShape = mp::shape<vocab, d_model>>
void check_lookup() {
  using mesh_t = mp::mesh<mp::axes<x, y, z>, Rules>;
  const auto want = reference_lookup<T>();
  for (const auto& shape : mesh_shapes(world().size())) {
    const mesh_t m(shape);
    CAPTURE(m.describe());
    const auto table = make_table<mp::tensor_of<T, TableShape, mesh_t>>(m);
    const auto ids = make_ids<mp::tensor_of<Id, mp::shape<batch, seq>, mesh_t>>(m);
    m.counters().reset();
    const auto out = mp::take<vocab>(table, ids);
    using out_t = std::remove_cvref_t<decltype(out)>;
    static_assert(std::is_same_v<out_t, mp::tensor_of<T, mp::shape<batch, seq, d_model>, mesh_t>>);
    CAPTURE(out.describe());
    CHECK_ALL_RANKS(recorded_lookup<Rules>(m, out.local().size()));
    CHECK_ALL_RANKS(meshpp_test::bit_equal(
        out.local(), meshpp_test::block(want, out.local_offsets(), out.local_shape())));
  }
}

// An ids tensor on Mesh, laid out by IdsLayout, whose id at [bad_b, bad_s] is `bad` (the
// others are good): only the ranks holding that index see the bad id.
template <class Id, class IdsLayout, class Mesh>
auto ids_with_one_bad(const Mesh& m, std::size_t bad_b, std::size_t bad_s, Id bad) {
  using ids_t = mp::tensor<Id, mp::shape<batch, seq>, IdsLayout, Mesh>;
  return mp::generate<ids_t>(m, sizes, [=](const auto& g) {
    return g[0] == bad_b && g[1] == bad_s ? bad : static_cast<Id>(id_value(g[0], g[1]));
  });
}
template <class Ids>
bool holds(const Ids& ids, std::size_t b, std::size_t s) {
  const auto& off = ids.local_offsets();
  const auto shape = ids.local_shape();
  return b >= off[0] && b < off[0] + shape[0] && s >= off[1] && s < off[1] + shape[1];
}
// f() throws meshpp::error on every rank: the ranks holding the bad id with its message,
// the others naming the rank that found it (or, for replicated ids, every rank with it).
template <class Ids, class F>
bool fails_together(const Ids& ids, std::size_t b, std::size_t s, std::string_view message, F&& f) {
  if (holds(ids, b, s) || std::is_same_v<typename Ids::layout_type, mp::layout<>>) {
    return meshpp_test::throws_with<mp::error>(f, {message});
  }
  return meshpp_test::throws_with<mp::error>(f, {"found bad input"});
}
}  // namespace
