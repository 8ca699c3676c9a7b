// expect-error: meshpp::take<Dim>\(table, ids\): ids must not have the dim Dim they index
// expect-error: ids_have_the_lookup_dim<vocab, meshpp::shape<batch, vocab> ?>
//
// take<vocab>(table, ids) replaces the dim vocab of the table by the dims of ids: ids index
// vocab, so they must not have it themselves (ids[batch, vocab] would name vocab twice in the
// result). The twin's ids are [batch, seq].
#include <meshpp/core/layout.hpp>
#include <meshpp/core/mesh.hpp>
#include <meshpp/core/shape.hpp>
#include <meshpp/core/tensor.hpp>
#include <meshpp/ops/embedding.hpp>

MESHPP_DIM(batch);
MESHPP_DIM(seq);
MESHPP_DIM(vocab);
MESHPP_DIM(d_model);
MESHPP_DIM(rows);

using mesh_t = meshpp::mesh<meshpp::axes<rows>, meshpp::layout<meshpp::split<vocab, rows>>>;
using table_t = meshpp::tensor_of<float, meshpp::shape<vocab, d_model>, mesh_t>;
#ifndef MESHPP_COMPILE_FAIL_TWIN
using ids_t = meshpp::tensor_of<int, meshpp::shape<batch, vocab>, mesh_t>;
#else
using ids_t = meshpp::tensor_of<int, meshpp::shape<batch, seq>, mesh_t>;
#endif

// never called: cases are only compiled
auto embed(const table_t& table, const ids_t& ids) { return meshpp::take<vocab>(table, ids); }
