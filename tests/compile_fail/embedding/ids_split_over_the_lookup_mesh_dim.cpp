// expect-error: meshpp::take<Dim>\(table, ids\): ids are split over the mesh dim that the table splits Dim over
// expect-error: ids_split_over_the_lookup_dims_mesh_dim<meshpp::split<batch, all>, meshpp::split<vocab, all> ?>
//
// With vocab split over `all`, each rank holds some rows of the table, and one allreduce over
// `all` assembles each looked-up row from the rank that holds it, provided that every rank of
// that group looks up the same ids. ids split over `all` too would hand each rank other ids:
// a compile error (relayout ids first). The result [batch, seq, d_model] itself would be legal.
// The twin holds ids whole.
#include <meshpp/core/layout.hpp>
#include <meshpp/core/mesh.hpp>
#include <meshpp/core/shape.hpp>
#include <meshpp/core/tensor.hpp>
#include <meshpp/ops/embedding.hpp>

MESHPP_DIM(batch);
MESHPP_DIM(seq);
MESHPP_DIM(vocab);
MESHPP_DIM(d_model);
MESHPP_DIM(all);

using meshpp::layout;
using meshpp::shape;
using meshpp::split;
using mesh_t = meshpp::mesh<meshpp::axes<all>>;
using table_t = meshpp::tensor<float, shape<vocab, d_model>, layout<split<vocab, all>>, mesh_t>;
#ifndef MESHPP_COMPILE_FAIL_TWIN
using ids_t = meshpp::tensor<int, shape<batch, seq>, layout<split<batch, all>>, mesh_t>;
#else
using ids_t = meshpp::tensor<int, shape<batch, seq>, layout<>, mesh_t>;
#endif

// never called: cases are only compiled
auto embed(const table_t& table, const ids_t& ids) { return meshpp::take<vocab>(table, ids); }
