// expect-error: meshpp::einsum<Out>\(a, b\): an output dim appears in no input
// expect-error: output_dim_appears_in_no_input<seq>
//
// Every dim of einsum's output must come from an input: x[batch, io] w[io, hidden] has no seq.
// The twin asks for [batch, hidden].
#include <meshpp/core/layout.hpp>
#include <meshpp/core/mesh.hpp>
#include <meshpp/core/shape.hpp>
#include <meshpp/core/tensor.hpp>
#include <meshpp/ops/einsum.hpp>

MESHPP_DIM(batch);
MESHPP_DIM(io);
MESHPP_DIM(hidden);
MESHPP_DIM(seq);
MESHPP_DIM(rows);

using meshpp::shape;
using mesh_t = meshpp::mesh<meshpp::axes<rows>, meshpp::layout<meshpp::split<batch, rows>>>;
using x_t = meshpp::tensor_of<float, shape<batch, io>, mesh_t>;
using w_t = meshpp::tensor_of<float, shape<io, hidden>, mesh_t>;

// never called: cases are only compiled
#ifndef MESHPP_COMPILE_FAIL_TWIN
auto layer(const x_t& x, const w_t& w) { return meshpp::einsum<shape<batch, seq>>(x, w); }
#else
auto layer(const x_t& x, const w_t& w) { return meshpp::einsum<shape<batch, hidden>>(x, w); }
#endif
