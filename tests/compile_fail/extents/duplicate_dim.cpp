// expect-error: meshpp::shape<Dims\.\.\.>: a dim appears twice in one shape
// expect-error: duplicate_dim<batch>
//
// Extents give each dim one size: giving a dim two is a compile error naming the dim.
#include <meshpp/core/extents.hpp>

MESHPP_DIM(batch);
MESHPP_DIM(io);

#ifndef MESHPP_COMPILE_FAIL_TWIN
constexpr auto sizes = meshpp::extents{batch{} = 8, io{} = 4, batch{} = 2};
#else
constexpr auto sizes = meshpp::extents{batch{} = 8, io{} = 4};
#endif
static_assert(sizes.get<batch>() == 8);
