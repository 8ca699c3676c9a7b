// expect-error: meshpp::extents::get<Dim>\(\): these extents give no size for Dim
// expect-error: no_size_given_for_dim<hidden, meshpp::extents<batch, io> ?>
//
// Asking extents for the size of a dim they were not given is a compile error.
#include <meshpp/core/extents.hpp>

MESHPP_DIM(batch);
MESHPP_DIM(io);
MESHPP_DIM(hidden);

#ifndef MESHPP_COMPILE_FAIL_TWIN
constexpr auto sizes = meshpp::extents{batch{} = 8, io{} = 4};
#else
constexpr auto sizes = meshpp::extents{batch{} = 8, io{} = 4, hidden{} = 2};
#endif
static_assert(sizes.get<hidden>() == 2);
