// expect-error: meshpp::reshape<NewShape>\(t\): dims of both shapes must keep their order
// expect-error: reshape_reorders_kept_dims<meshpp::shape<batch, seq, heads, d_kv>, meshpp::shape<seq, batch, d_model> ?>
//
// A reshape keeps the row-major order of the elements, so the dims both shapes have (batch,
// seq) must stay in the same order; swapping them is a transpose, not a reshape. The twin
// merges [heads, d_kv] into d_model and keeps [batch, seq] in order.
#include <meshpp/core/layout.hpp>
#include <meshpp/core/mesh.hpp>
#include <meshpp/core/shape.hpp>
#include <meshpp/core/tensor.hpp>
#include <meshpp/ops/reshape.hpp>

MESHPP_DIM(batch);
MESHPP_DIM(seq);
MESHPP_DIM(heads);
MESHPP_DIM(d_kv);
MESHPP_DIM(d_model);
MESHPP_DIM(rows);

using mesh_t = meshpp::mesh<meshpp::axes<rows>, meshpp::layout<meshpp::split<batch, rows>>>;
using x_t = meshpp::tensor_of<float, meshpp::shape<batch, seq, heads, d_kv>, mesh_t>;

// never called: cases are only compiled
#ifndef MESHPP_COMPILE_FAIL_TWIN
auto merged(const x_t& x) { return meshpp::reshape<meshpp::shape<seq, batch, d_model>>(x); }
#else
auto merged(const x_t& x) { return meshpp::reshape<meshpp::shape<batch, seq, d_model>>(x); }
#endif
