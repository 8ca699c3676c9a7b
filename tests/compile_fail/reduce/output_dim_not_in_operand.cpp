// expect-error: meshpp::reduce_sum_to<shape<Out\.\.\.>>\(x\): the output shape names a dim x does not have
// expect-error: output_dim_not_in_operand<seq, meshpp::shape<batch, hidden> ?>
//
// reduce_sum_to<shape<Out...>>(x) keeps the dims Out and sums out the rest; each dim of Out must
// be a dim of x: x[batch, hidden] has no seq. The twin reduces to [batch].
#include <meshpp/core/layout.hpp>
#include <meshpp/core/mesh.hpp>
#include <meshpp/core/shape.hpp>
#include <meshpp/core/tensor.hpp>
#include <meshpp/ops/reduce.hpp>

MESHPP_DIM(batch);
MESHPP_DIM(hidden);
MESHPP_DIM(seq);
MESHPP_DIM(rows);

using meshpp::shape;
using mesh_t = meshpp::mesh<meshpp::axes<rows>, meshpp::layout<meshpp::split<batch, rows>>>;
using x_t = meshpp::tensor_of<float, shape<batch, hidden>, mesh_t>;

// never called: cases are only compiled
#ifndef MESHPP_COMPILE_FAIL_TWIN
auto total(const x_t& x) { return meshpp::reduce_sum_to<shape<batch, seq>>(x); }
#else
auto total(const x_t& x) { return meshpp::reduce_sum_to<shape<batch>>(x); }
#endif
