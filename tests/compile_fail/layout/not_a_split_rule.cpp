// expect-error: meshpp::layout<Rules\.\.\.>: every rule must be split<TensorDim, MeshDim>
// expect-error: not_a_split_rule<rows>
//
// A layout holds split<TensorDim, MeshDim> rules, not bare dims.
#include <meshpp/core/layout.hpp>

MESHPP_DIM(batch);
MESHPP_DIM(rows);

using meshpp::split;
#ifndef MESHPP_COMPILE_FAIL_TWIN
using rules = meshpp::layout<split<batch, rows>, rows>;
#else
using rules = meshpp::layout<split<batch, rows>>;
#endif
static_assert(sizeof(rules) > 0);
