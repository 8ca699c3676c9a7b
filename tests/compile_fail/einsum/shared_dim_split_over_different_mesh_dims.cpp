// expect-error: meshpp::einsum<Out>\(a, b\): a dim of both inputs is split over different mesh dims
// expect-error: inputs_split_a_shared_dim_over_two_mesh_dims<meshpp::split<io, rows>, meshpp::split<io, cols> ?>
//
// The contracted dim io is in both inputs, so both must split it over the same mesh dim (each
// rank multiplies matching stripes of io, then one allreduce sums them): here x splits io over
// rows and w over cols. The twin splits io over rows in both.
#include <meshpp/core/layout.hpp>
#include <meshpp/core/mesh.hpp>
#include <meshpp/core/shape.hpp>
#include <meshpp/core/tensor.hpp>
#include <meshpp/ops/einsum.hpp>

MESHPP_DIM(batch);
MESHPP_DIM(io);
MESHPP_DIM(hidden);
MESHPP_DIM(rows);
MESHPP_DIM(cols);

using meshpp::layout;
using meshpp::shape;
using meshpp::split;
using mesh_t = meshpp::mesh<meshpp::axes<rows, cols>>;
using x_t = meshpp::tensor<float, shape<batch, io>, layout<split<io, rows>>, mesh_t>;
#ifndef MESHPP_COMPILE_FAIL_TWIN
using w_t = meshpp::tensor<float, shape<io, hidden>, layout<split<io, cols>>, mesh_t>;
#else
using w_t = meshpp::tensor<float, shape<io, hidden>, layout<split<io, rows>>, mesh_t>;
#endif

// never called: cases are only compiled
auto layer(const x_t& x, const w_t& w) { return meshpp::einsum<shape<batch, hidden>>(x, w); }
