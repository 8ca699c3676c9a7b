// expect-error: meshpp::einsum<Out>\(a\): an output dim is not a dim of a
// expect-error: output_dim_appears_in_no_input<seq>
//
// One-input einsum transposes a to Out and sums out a's other dims, so every dim of Out must
// be a dim of a: x[batch, hidden] has no seq. The twin asks for [hidden, batch].
#include <meshpp/core/layout.hpp>
#include <meshpp/core/mesh.hpp>
#include <meshpp/core/shape.hpp>
#include <meshpp/core/tensor.hpp>
#include <meshpp/ops/einsum.hpp>

MESHPP_DIM(batch);
MESHPP_DIM(hidden);
MESHPP_DIM(seq);
MESHPP_DIM(rows);

using meshpp::shape;
using mesh_t = meshpp::mesh<meshpp::axes<rows>, meshpp::layout<meshpp::split<batch, rows>>>;
using x_t = meshpp::tensor_of<float, shape<batch, hidden>, mesh_t>;

// never called: cases are only compiled
#ifndef MESHPP_COMPILE_FAIL_TWIN
auto transpose(const x_t& x) { return meshpp::einsum<shape<seq, batch>>(x); }
#else
auto transpose(const x_t& x) { return meshpp::einsum<shape<hidden, batch>>(x); }
#endif
