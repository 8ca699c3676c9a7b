// expect-error: meshpp::one_hot<Dim>\(ids, sizes\): the mesh's rules put two dims of the result on one mesh dim
// expect-error: one_hot_result_has_two_dims_on_one_mesh_dim<meshpp::split<batch, all>, meshpp::split<vocab, all> ?>
//
// one_hot<vocab>(ids, sizes) lays out its result [batch, seq, vocab] by the mesh's rules.
// Rules may share a mesh dim between tensor dims ([batch:all, vocab:all]) as long as no tensor
// has both; this result would (Mesh-TensorFlow paper 8.5). The twin's rules split vocab only.
#include <meshpp/core/extents.hpp>
#include <meshpp/core/layout.hpp>
#include <meshpp/core/mesh.hpp>
#include <meshpp/core/shape.hpp>
#include <meshpp/core/tensor.hpp>
#include <meshpp/ops/embedding.hpp>

MESHPP_DIM(batch);
MESHPP_DIM(seq);
MESHPP_DIM(vocab);
MESHPP_DIM(all);

using meshpp::layout;
using meshpp::shape;
using meshpp::split;
#ifndef MESHPP_COMPILE_FAIL_TWIN
using rules = layout<split<batch, all>, split<vocab, all>>;
#else
using rules = layout<split<vocab, all>>;
#endif
using mesh_t = meshpp::mesh<meshpp::axes<all>, rules>;
using ids_t = meshpp::tensor<int, shape<batch, seq>, layout<>, mesh_t>;

// never called: cases are only compiled
auto encode(const ids_t& ids) { return meshpp::one_hot<vocab>(ids, meshpp::extents{vocab{} = 8}); }
