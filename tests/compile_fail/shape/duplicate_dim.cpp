// expect-error: meshpp::shape<Dims\.\.\.>: a dim appears twice in one shape
// expect-error: duplicate_dim<batch>
//
// A shape is a set of dim names: naming one twice is a compile error naming the dim.
#include <meshpp/core/shape.hpp>

MESHPP_DIM(batch);
MESHPP_DIM(io);

#ifndef MESHPP_COMPILE_FAIL_TWIN
using s = meshpp::shape<batch, io, batch>;
#else
using s = meshpp::shape<batch, io>;
#endif
static_assert(sizeof(s) > 0);
