// expect-error: meshpp::einsum<Out>\(a, b\): the inputs' layouts put two dims of the computation \(output or summed\) on one mesh dim
// expect-error: two_dims_of_the_einsum_on_one_mesh_dim<meshpp::split<batch, all>, meshpp::split<hidden, all> ?>
//
// Each input's layout is legal (x[batch, io] splits batch over `all`, w[io, hidden] splits
// hidden over `all`), but the computation [batch, io, hidden] would have two dims on `all`,
// and so would the output [batch, hidden] (Mesh-TensorFlow paper 8.5). The twin holds w whole.
#include <meshpp/core/layout.hpp>
#include <meshpp/core/mesh.hpp>
#include <meshpp/core/shape.hpp>
#include <meshpp/core/tensor.hpp>
#include <meshpp/ops/einsum.hpp>

MESHPP_DIM(batch);
MESHPP_DIM(io);
MESHPP_DIM(hidden);
MESHPP_DIM(all);

using meshpp::layout;
using meshpp::shape;
using meshpp::split;
using mesh_t = meshpp::mesh<meshpp::axes<all>>;
using x_t = meshpp::tensor<float, shape<batch, io>, layout<split<batch, all>>, mesh_t>;
#ifndef MESHPP_COMPILE_FAIL_TWIN
using w_t = meshpp::tensor<float, shape<io, hidden>, layout<split<hidden, all>>, mesh_t>;
#else
using w_t = meshpp::tensor<float, shape<io, hidden>, layout<>, mesh_t>;
#endif

// never called: cases are only compiled
auto layer(const x_t& x, const w_t& w) { return meshpp::einsum<shape<batch, hidden>>(x, w); }
