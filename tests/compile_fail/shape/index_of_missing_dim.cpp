// expect-error: meshpp::index_of_v<Shape, Dim>: Dim is not a dim of Shape
// expect-error: dim_not_in_shape<hidden, meshpp::shape<batch, io> ?>
//
// index_of_v of a dim the shape lacks is a compile error naming the dim and the shape.
#include <meshpp/core/shape.hpp>

MESHPP_DIM(batch);
MESHPP_DIM(io);
MESHPP_DIM(hidden);

#ifndef MESHPP_COMPILE_FAIL_TWIN
using s = meshpp::shape<batch, io>;
#else
using s = meshpp::shape<batch, io, hidden>;
#endif
static_assert(meshpp::index_of_v<s, hidden> == 2);
