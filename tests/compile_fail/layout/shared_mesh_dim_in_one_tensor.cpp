// expect-error: meshpp::tensor: two dims of one tensor are split over the same mesh dim
// expect-error: one_mesh_dim<meshpp::split<batch, all>, meshpp::split<hidden, all> ?>
//
// Mesh-TensorFlow paper 8.5: rules may send several tensor dims to one mesh dim, but no tensor
// may have two of them. Under [batch:all, hidden:all] the tensor [batch, hidden] is illegal.
// The twin is the paper's Transformer layout [vocab:all, d_ff:all, heads:all]: the rules
// share `all`, yet every tensor of the model has at most one of vocab, d_ff and heads.
#include <meshpp/core/layout.hpp>
#include <meshpp/core/mesh.hpp>
#include <meshpp/core/shape.hpp>
#include <meshpp/core/tensor.hpp>

MESHPP_DIM(batch);
MESHPP_DIM(hidden);
MESHPP_DIM(vocab);
MESHPP_DIM(d_model);
MESHPP_DIM(d_ff);
MESHPP_DIM(heads);
MESHPP_DIM(d_kv);
MESHPP_DIM(all);

using meshpp::shape;
using meshpp::split;
#ifndef MESHPP_COMPILE_FAIL_TWIN
using rules = meshpp::layout<split<batch, all>, split<hidden, all>>;
using mesh_t = meshpp::mesh<meshpp::axes<all>, rules>;
static_assert(sizeof(meshpp::tensor_of<float, shape<batch, hidden>, mesh_t>) > 0);
#else
using rules = meshpp::layout<split<vocab, all>, split<d_ff, all>, split<heads, all>>;
using mesh_t = meshpp::mesh<meshpp::axes<all>, rules>;
static_assert(!meshpp::is_injective_v<rules>);  // the rules share a mesh dim ...
// ... but each tensor's layout does not:
static_assert(sizeof(meshpp::tensor_of<float, shape<vocab, d_model>, mesh_t>) > 0);  // embedding
static_assert(sizeof(meshpp::tensor_of<float, shape<d_model, d_ff>, mesh_t>) > 0);   // ffn in
static_assert(sizeof(meshpp::tensor_of<float, shape<batch, d_ff>, mesh_t>) > 0);     // ffn hidden
static_assert(sizeof(meshpp::tensor_of<float, shape<d_model, heads, d_kv>, mesh_t>) >
              0);  // q, k, v
static_assert(sizeof(meshpp::tensor_of<float, shape<batch, heads, d_kv>, mesh_t>) >
              0);  // attention
#endif
