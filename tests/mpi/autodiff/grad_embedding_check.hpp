// Shared by grad_embedding.cpp, grad_embedding_layouts.cpp and grad_embedding_scattered.cpp
// (which uses its fixture and check_value_and_gradient only): the table's gradient of
// take<vocab>(table, ids) (autodiff/embedding.hpp), checked on every mesh shape the rank
// count allows:
//   - the traced lookup's value is the plain lookup's, bit for bit;
//   - the gradient matches central differences (double) at every element of the table, with
//     repeated ids (their rows of the gradient add up) and ids that never occur (zero rows);
//   - the backward pass is one allreduce of the table's slice over the mesh dims the ids are
//     split over (the expected ones named by each test), or no collective at all, and never
//     any gathering collective;
//   - (optionally) it equals the gradient of einsum(one_hot(ids), table), value and count.
#pragma once

#include <meshpp/autodiff/einsum.hpp>
#include <meshpp/autodiff/embedding.hpp>
#include <meshpp/core/counters.hpp>
#include <meshpp/ops/einsum.hpp>
#include <meshpp/ops/embedding.hpp>
#include <meshpp/ops/scatter_gather.hpp>

#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "grad_fixture.hpp"

MESHPP_DIM(seq);
MESHPP_DIM(vocab);
MESHPP_DIM(d_model);
MESHPP_DIM(x);
MESHPP_DIM(y);
MESHPP_DIM(z);

namespace grad_embedding {

constexpr std::size_t B = 4, S = 2, V = 8, D = 4;
const auto sizes = mp::extents{batch{} = B, seq{} = S, vocab{} = V, d_model{} = D};

// ids 0..5 of 8: 0 and 3 twice (their rows accumulate), 6 and 7 never (zero rows)
inline std::size_t id_value(std::size_t b, std::size_t s) { return (b * 5 + s * 3) % 6; }

// Every mesh shape [x, y, z] of n ranks whose sizes divide `limits` (the sizes of the dims
// split over x, y, z; 1 for a mesh dim nothing is split over, which then holds 1 rank).
inline std::vector<std::array<int, 3>> mesh_shapes(int n, const std::array<int, 3>& limits) {
  return meshpp_test::mesh_shapes<3>(n, limits);
}

// backward_is(c, reduce_mask, gather_mask, values): the counters hold one allreduce over the
// mesh dims in reduce_mask (none when it is 0: ids whole), one allgather over those in
// gather_mask (none when 0), each of `values` values, and no other collective
inline bool backward_is(const mp::counters& c, unsigned reduce_mask, unsigned gather_mask,
                        std::uint64_t values) {
  for (std::size_t k = 0; k < mp::collective_kinds; ++k) {
    const auto kind = static_cast<mp::collective>(k);
    const unsigned mask = kind == mp::collective::allreduce   ? reduce_mask
                          : kind == mp::collective::allgather ? gather_mask
                                                              : 0;
    if (mask == 0 || c.group_of_one(mask)) {  // a group of one rank counts nothing
      if (c.total(kind).calls != 0) return false;
    } else {
      const auto& one = c.at(kind, mask);
      if (c.total(kind).calls != 1 || one.calls != 1 || one.values != values) return false;
    }
  }
  return true;
}

// check_value_and_gradient(table, out, lookup): out = lookup(trace(table)) is lookup(table)
// bit for bit, and the table's gradient through lookup matches central differences, linear
// and through a nonlinearity
template <class Table, class Out, class Lookup>
void check_value_and_gradient(const Table& table, const Out& out, const Lookup& lookup) {
  CHECK_ALL_RANKS(meshpp_test::bit_equal(out.value().local(), lookup(table).local()));
  check_gradient("linear", table, [&](const auto& t) { return weighted_sum(lookup(t)); });
  check_gradient("through tanh", table,
                 [&](const auto& t) { return weighted_sum(mp::tanh(lookup(t))); });
}

// check_lookup<Table, Ids, OneHot>(m, reduce_mask, gather_mask): every check above for
// take<vocab>(table, ids), table of type Table, ids of type Ids. The backward allreduces over
// the mesh dims in reduce_mask; gather_mask is nonzero only for a table that holds whole a dim
// that ids split: the gradient's stripes of it are then allgathered into the table's layout.
template <class Table, class Ids, bool OneHot, class Mesh>
void check_lookup(const Mesh& m, unsigned reduce_mask, unsigned gather_mask = 0) {
  using IS = typename Ids::shape_type;
  CAPTURE(m.describe());
  const auto table = mp::random_normal<Table>(m, sizes, 1);
  const auto ids = mp::generate<Ids>(m, sizes, [](const auto& g) {
    return static_cast<typename Ids::value_type>(
        id_value(g[mp::index_of_v<IS, batch>], g[mp::index_of_v<IS, seq>]));
  });
  auto lookup = [&](const auto& t) { return mp::take<vocab>(t, ids); };
  const auto traced_table = mp::trace(table);
  const auto out = lookup(traced_table);
  check_value_and_gradient(table, out, lookup);

  // the communication: one dense allreduce of the table's slice over ids' mesh dims
  using out_t = typename std::remove_cvref_t<decltype(out)>::tensor_type;
  const auto dy = mp::random_normal<out_t>(m, sizes, 2);
  const std::uint64_t values = table.local().size() / meshpp_test::ranks_along(m, gather_mask);
  m.counters().reset();
  const auto [grad] = mp::vjp(out, dy, traced_table);
  CAPTURE(m.counters().report());
  CHECK_ALL_RANKS(backward_is(m.counters(), reduce_mask, gather_mask, values));

  // the same as the dense einsum of a one-hot tensor: value, and what it communicates
  if constexpr (OneHot) {
    const auto hot = mp::one_hot<vocab, double>(ids, sizes);
    const auto out_hot = mp::einsum<typename out_t::shape_type>(hot, traced_table);
    CHECK(meshpp_test::max_abs_difference(out_hot.value(), out.value()) < 1e-12);
    m.counters().reset();
    const auto [grad_hot] = mp::vjp(out_hot, dy, traced_table);
    CHECK_ALL_RANKS(backward_is(m.counters(), reduce_mask, gather_mask, values));
    CHECK(meshpp_test::max_abs_difference(grad, grad_hot) < 1e-12);
  }
}

}  // namespace grad_embedding
