// expect-error: meshpp::reduce_sum<Dims\.\.\.>\(x\) names the dims to reduce out; for the shape of the result write reduce_sum_to<shape<Out\.\.\.>>\(x\)
// expect-error: shape_given_as_dims_to_reduce<meshpp::shape<batch> ?>
//
// reduce_sum<Dims...>(x) sums out the dims it names; reduce_sum_to<shape<Out...>>(x) keeps the
// dims of Out. reduce_sum<shape<batch>>(x) could mean either (sum out batch, or keep it), so
// it is an error that names the spelling to use. The twin keeps batch with reduce_sum_to.
#include <meshpp/core/layout.hpp>
#include <meshpp/core/mesh.hpp>
#include <meshpp/core/shape.hpp>
#include <meshpp/core/tensor.hpp>
#include <meshpp/ops/reduce.hpp>

MESHPP_DIM(batch);
MESHPP_DIM(hidden);
MESHPP_DIM(rows);

using meshpp::shape;
using mesh_t = meshpp::mesh<meshpp::axes<rows>, meshpp::layout<meshpp::split<batch, rows>>>;
using x_t = meshpp::tensor_of<float, shape<batch, hidden>, mesh_t>;

// never called: cases are only compiled
#ifndef MESHPP_COMPILE_FAIL_TWIN
auto total(const x_t& x) { return meshpp::reduce_sum<shape<batch>>(x); }
#else
auto total(const x_t& x) { return meshpp::reduce_sum_to<shape<batch>>(x); }
#endif
