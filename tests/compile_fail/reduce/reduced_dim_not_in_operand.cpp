// expect-error: meshpp::reduce_sum<Dims\.\.\.>\(x\): x has no dim of that name to reduce
// expect-error: reduced_dim_not_in_operand<seq, meshpp::shape<batch, hidden> ?>
//
// reduce_sum<Dims...>(x) sums out the named dims, which must be dims of x: x[batch, hidden]
// has no seq. The twin sums out hidden.
#include <meshpp/core/layout.hpp>
#include <meshpp/core/mesh.hpp>
#include <meshpp/core/shape.hpp>
#include <meshpp/core/tensor.hpp>
#include <meshpp/ops/reduce.hpp>

MESHPP_DIM(batch);
MESHPP_DIM(hidden);
MESHPP_DIM(seq);
MESHPP_DIM(rows);

using mesh_t = meshpp::mesh<meshpp::axes<rows>, meshpp::layout<meshpp::split<batch, rows>>>;
using x_t = meshpp::tensor_of<float, meshpp::shape<batch, hidden>, mesh_t>;

// never called: cases are only compiled
#ifndef MESHPP_COMPILE_FAIL_TWIN
auto total(const x_t& x) { return meshpp::reduce_sum<seq>(x); }
#else
auto total(const x_t& x) { return meshpp::reduce_sum<hidden>(x); }
#endif
