// expect-error: meshpp::relayout<Rules>\(t\): the new layout puts two dims of t on one mesh dim
// expect-error: relayout_target_puts_two_dims_on_one_mesh_dim<meshpp::split<batch, rows>, meshpp::split<hidden, rows> ?>
//
// relayout<Rules>(t) lays t out by Rules restricted to t's dims; that layout must be legal
// (Mesh-TensorFlow paper 8.5): x[batch, hidden] cannot have both batch and hidden split over
// rows. The twin switches from data to model parallelism instead (batch:rows -> hidden:rows,
// one alltoall).
#include <meshpp/core/layout.hpp>
#include <meshpp/core/mesh.hpp>
#include <meshpp/core/shape.hpp>
#include <meshpp/core/tensor.hpp>
#include <meshpp/ops/relayout.hpp>

MESHPP_DIM(batch);
MESHPP_DIM(hidden);
MESHPP_DIM(rows);
MESHPP_DIM(cols);

using meshpp::layout;
using meshpp::split;
using mesh_t = meshpp::mesh<meshpp::axes<rows, cols>, layout<split<batch, rows>>>;
using x_t = meshpp::tensor_of<float, meshpp::shape<batch, hidden>, mesh_t>;

// never called: cases are only compiled
#ifndef MESHPP_COMPILE_FAIL_TWIN
auto model_parallel(const x_t& x) {
  return meshpp::relayout<layout<split<batch, rows>, split<hidden, rows>>>(x);
}
#else
auto model_parallel(const x_t& x) { return meshpp::relayout<layout<split<hidden, rows>>>(x); }
#endif
