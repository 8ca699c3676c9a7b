// expect-error: meshpp::shape<Dims\.\.\.>: a dim appears twice in one shape
// expect-error: duplicate_dim<tokens>
//
// reshape<NewShape>(t) needs a legal shape: [tokens, tokens] names tokens twice. The twin
// merges [batch, seq] into [tokens] and keeps d_model.
#include <meshpp/core/layout.hpp>
#include <meshpp/core/mesh.hpp>
#include <meshpp/core/shape.hpp>
#include <meshpp/core/tensor.hpp>
#include <meshpp/ops/reshape.hpp>

MESHPP_DIM(batch);
MESHPP_DIM(seq);
MESHPP_DIM(d_model);
MESHPP_DIM(tokens);
MESHPP_DIM(rows);

using mesh_t = meshpp::mesh<meshpp::axes<rows>, meshpp::layout<meshpp::split<batch, rows>>>;
using x_t = meshpp::tensor_of<float, meshpp::shape<batch, seq, d_model>, mesh_t>;

// never called: cases are only compiled
#ifndef MESHPP_COMPILE_FAIL_TWIN
auto flat(const x_t& x) {
  return meshpp::reshape<meshpp::shape<tokens, tokens>>(x, meshpp::extents{tokens{} = 16});
}
#else
auto flat(const x_t& x) {
  return meshpp::reshape<meshpp::shape<tokens, d_model>>(x, meshpp::extents{tokens{} = 16});
}
#endif
