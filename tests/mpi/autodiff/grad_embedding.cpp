// The table's gradient of take<vocab>(table, ids) (grad_embedding_check.hpp), with vocab
// split and whole, ids split over batch and whole: central differences at every element of the
// table, with repeated ids; one dense allreduce of the table's slice over batch's mesh dim (none
// when ids are whole); equal to the gradient of einsum(one_hot(ids), table).
#include "grad_embedding_check.hpp"

using namespace grad_embedding;

namespace {
using rules = mp::layout<mp::split<vocab, x>, mp::split<batch, y>, mp::split<d_model, z>>;
using mesh_t = mp::mesh<mp::axes<x, y, z>, rules>;
using table_t = mp::tensor_of<double, mp::shape<vocab, d_model>, mesh_t>;
using ids_t = mp::tensor_of<int, mp::shape<batch, seq>, mesh_t>;
}  // namespace

TEST_CASE("gather's table gradient: vocab, batch and d_model split over x, y, z") {
  // every mesh shape: each of vocab and batch split on some shapes, whole (on a mesh dim of
  // size 1) on others
  for (const auto& shape : mesh_shapes(world().size(), {V, B, D})) {
    const mesh_t m(shape);
    // the backward allreduces over y, batch's mesh dim (counting nothing where y has size 1: a
    // group of one rank)
    check_lookup<table_t, ids_t, true>(m, mesh_t::mask_v<y>);
  }
}

TEST_CASE("gather's table gradient: ids whole, vocab split or not") {
  // ids replicated: every rank adds every id into its stripe; no communication at all
  using rules_whole = mp::layout<mp::split<vocab, x>, mp::split<d_model, y>>;
  using mesh_whole = mp::mesh<mp::axes<x, y, z>, rules_whole>;
  for (const auto& shape : mesh_shapes(world().size(), {V, D, 1})) {
    const mesh_whole m(shape);
    check_lookup<mp::tensor_of<double, mp::shape<vocab, d_model>, mesh_whole>,
                 mp::tensor_of<int, mp::shape<batch, seq>, mesh_whole>, true>(m, 0);
  }
}

TEST_CASE("gather's table gradient reaches a variable through backward(loss), ids an expression") {
  for (const auto& shape : mesh_shapes(world().size(), {V, B, D})) {
    const mesh_t m(shape);
    CAPTURE(m.describe());
    const auto ids = mp::generate<ids_t>(
        m, sizes, [](const auto& g) { return static_cast<int>(id_value(g[0], g[1])); });
    mp::variable table(mp::random_normal<table_t>(m, sizes, 1), "table");
    const auto traced_table = mp::trace(table.value());
    const auto [want] =
        mp::gradients(weighted_sum(mp::take<vocab>(traced_table, ids)), traced_table);
    const auto loss = weighted_sum(mp::take<vocab>(table, ids + 0));
    mp::backward(loss);
    CHECK_ALL_RANKS(table.grad().has_value());
    if (!table.grad()) continue;  // the same on every rank
    CHECK(meshpp_test::max_abs_difference(*table.grad(), want) < 1e-12);
    mp::backward(loss);  // accumulates
    CHECK(meshpp_test::max_abs_difference(*table.grad(), want * 2.0) < 1e-12);
  }
}
