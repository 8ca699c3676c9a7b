// Gradients of reduce_sum and reduce_mean of traced tensors, checked by central differences
// (double) at every element, in their three spellings, reducing dims split over a mesh dim and
// a replicated dim (grad_reduce_check.hpp); grad_reduce_max.cpp and grad_reduce_min.cpp do
// reduce_max and reduce_min.
#include "grad_reduce_check.hpp"

using namespace grad_reduce;

TEST_CASE("reduce_sum gradients: every spelling, split and replicated dims") {
  mesh_t m(meshpp_test::grid2(world().size()));
  check_spellings<reduce_sum_op>(mp::random_normal<double, batch, hidden, k>(m, sizes, 1));
}

TEST_CASE("reduce_mean gradients: every spelling, split and replicated dims") {
  mesh_t m(meshpp_test::grid2(world().size()));
  check_spellings<reduce_mean_op>(mp::random_normal<double, batch, hidden, k>(m, sizes, 2));
}
