// expect-error: meshpp::einsum<Out>\(a, b\): the inputs' layouts put two dims of the computation \(output or summed\) on one mesh dim
// expect-error: two_dims_of_the_einsum_on_one_mesh_dim<meshpp::split<batch, all>, meshpp::split<hidden, all> ?>
//
// Mesh-TensorFlow paper 8.5: the two-layer network's layout [batch:all, hidden:all] on a 1-d
// mesh `all` is illegal. Every tensor of the program is legal on its own (x[batch, io],
// w[io, hidden] each have one split dim), but the first layer's einsum gives
// h[batch, hidden], which would have both batch and hidden on `all`. The twin is the
// data-parallel layout [batch:all].
#include <meshpp/core/layout.hpp>
#include <meshpp/core/mesh.hpp>
#include <meshpp/core/shape.hpp>
#include <meshpp/core/tensor.hpp>
#include <meshpp/ops/einsum.hpp>

MESHPP_DIM(batch);
MESHPP_DIM(io);
MESHPP_DIM(hidden);
MESHPP_DIM(all);

using meshpp::shape;
using meshpp::split;
#ifndef MESHPP_COMPILE_FAIL_TWIN
using rules = meshpp::layout<split<batch, all>, split<hidden, all>>;
#else
using rules = meshpp::layout<split<batch, all>>;
#endif
using mesh_t = meshpp::mesh<meshpp::axes<all>, rules>;
using x_t = meshpp::tensor_of<float, shape<batch, io>, mesh_t>;
using w_t = meshpp::tensor_of<float, shape<io, hidden>, mesh_t>;

// never called: cases are only compiled
auto first_layer(const x_t& x, const w_t& w) { return meshpp::einsum<shape<batch, hidden>>(x, w); }
