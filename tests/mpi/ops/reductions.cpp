// Reductions over named dims, part 1: reduce_sum and reduce_mean in their three spellings
// (reduce_x<Dims...>(e): reduce those out; reduce_x<shape<Out...>>(e): to that output shape,
// in its order; reduce_x(e): every dim), of tensors and of expressions (one fused pass). The
// output keeps the input's layout on the kept dims, and exactly one allreduce runs, over
// exactly the mesh dims the reduced dims are split over (none when they are all whole).
// (max and min: reductions_extrema.cpp; layouts: reductions_layouts.cpp and
// reductions_meshes.cpp; value types: reductions_types.cpp. The split keeps each file quick
// to compile.)
//
// Every result is gathered and compared with a reference computed on one rank without any
// mesh: the inputs are gathered with meshpp::gather and reduced by plain loops, in double.
// Meshes are built from the communicator's size, so the file runs at 1, 2 and 4 ranks.
#include "reductions_spellings.hpp"

TEST_CASE("reduce_sum in every spelling") {
  spellings::check_every_spelling<meshpp_test::kind::sum>();
}
TEST_CASE("reduce_mean in every spelling") {
  spellings::check_every_spelling<meshpp_test::kind::mean>();
}
