// expect-error: meshpp::shape<Dims\.\.\.>: every dim must be declared with MESHPP_DIM
// expect-error: not_a_dim_name<int>
//
// Only names declared with MESHPP_DIM are dims; the diagnostic names the stray type.
#include <meshpp/core/shape.hpp>

MESHPP_DIM(batch);
MESHPP_DIM(io);

#ifndef MESHPP_COMPILE_FAIL_TWIN
using s = meshpp::shape<batch, int, io>;
#else
using s = meshpp::shape<batch, io>;
#endif
static_assert(sizeof(s) > 0);
