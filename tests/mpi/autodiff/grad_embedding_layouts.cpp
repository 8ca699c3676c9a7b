// The table's gradient of take<vocab>(table, ids) under more layouts
// (grad_embedding_check.hpp): ids split over two mesh dims (one allreduce over both), a table
// laid out [d_model, vocab], and a table per batch entry (batch shared by table and ids: no
// allreduce, and an allgather where ids split batch and the table holds it whole).
#include "grad_embedding_check.hpp"

using namespace grad_embedding;

TEST_CASE("gather's table gradient: ids split over two mesh dims, the table [d_model, vocab]") {
  using rules = mp::layout<mp::split<batch, x>, mp::split<seq, y>, mp::split<d_model, z>>;
  using mesh_t = mp::mesh<mp::axes<x, y, z>, rules>;
  for (const auto& shape : mesh_shapes(world().size(), {B, S, D})) {
    const mesh_t m(shape);
    check_lookup<mp::tensor_of<double, mp::shape<d_model, vocab>, mesh_t>,
                 mp::tensor_of<long, mp::shape<seq, batch>, mesh_t>, true>(m, mesh_t::mask_v<x, y>);
  }
}

TEST_CASE("gather's table gradient: a table per batch entry") {
  using rules = mp::layout<mp::split<vocab, x>, mp::split<batch, y>>;
  using mesh_t = mp::mesh<mp::axes<x, y, z>, rules>;
  using ids_t = mp::tensor_of<int, mp::shape<batch, seq>, mesh_t>;
  for (const auto& shape : mesh_shapes(world().size(), {V, B, 1})) {
    const mesh_t m(shape);
    // the table split over batch as ids are: each rank's rows come from its own ids only
    check_lookup<mp::tensor_of<double, mp::shape<batch, vocab, d_model>, mesh_t>, ids_t, true>(m,
                                                                                               0);
    // the table whole along batch, ids split over y: each rank's batch stripe is complete
    // (seq, ids' own dim, is whole: no allreduce) and is allgathered into the table's layout
    using whole_batch = mp::layout<mp::split<vocab, x>>;
    check_lookup<mp::tensor<double, mp::shape<batch, vocab, d_model>, whole_batch, mesh_t>, ids_t,
                 true>(m, 0, mesh_t::mask_v<y>);
  }
}
