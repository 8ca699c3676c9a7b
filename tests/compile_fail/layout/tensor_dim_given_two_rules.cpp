// expect-error: meshpp::layout<Rules\.\.\.>: a tensor dim is given two rules
// expect-error: tensor_dim_given_two_rules<batch>
//
// A layout is a partial map from tensor dims to mesh dims: one rule per tensor dim at most.
#include <meshpp/core/layout.hpp>

MESHPP_DIM(batch);
MESHPP_DIM(hidden);
MESHPP_DIM(rows);
MESHPP_DIM(cols);

using meshpp::split;
#ifndef MESHPP_COMPILE_FAIL_TWIN
using rules = meshpp::layout<split<batch, rows>, split<batch, cols>>;
#else
using rules = meshpp::layout<split<batch, rows>, split<hidden, cols>>;
#endif
static_assert(sizeof(rules) > 0);
