// expect-error: meshpp::take<Dim>\(table, ids\): the operands' layouts put two dims of the result on one mesh dim
// expect-error: lookup_result_has_two_dims_on_one_mesh_dim<meshpp::split<batch, all>, meshpp::split<d_model, all> ?>
//
// Each operand's layout is legal (table[vocab, d_model] splits d_model over `all`, ids[batch,
// seq] split batch over `all`), but the result [batch, seq, d_model] would have two dims on
// `all` (Mesh-TensorFlow paper 8.5). The twin holds the table whole.
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
using ids_t = meshpp::tensor<int, shape<batch, seq>, layout<split<batch, all>>, mesh_t>;
#ifndef MESHPP_COMPILE_FAIL_TWIN
using table_t = meshpp::tensor<float, shape<vocab, d_model>, layout<split<d_model, all>>, mesh_t>;
#else
using table_t = meshpp::tensor<float, shape<vocab, d_model>, layout<>, mesh_t>;
#endif

// never called: cases are only compiled
auto embed(const table_t& table, const ids_t& ids) { return meshpp::take<vocab>(table, ids); }
