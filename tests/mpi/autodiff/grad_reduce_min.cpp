// Gradients of reduce_min of traced tensors, checked by central differences (double) at every
// element, in its three spellings, reducing dims split over a mesh dim and a replicated dim
// (grad_reduce_check.hpp); and where the minimum is tied between two elements held by
// different ranks. (One reduction per file: each traced reduction costs compile time.)
#include "grad_reduce_check.hpp"

using namespace grad_reduce;

TEST_CASE("reduce_min gradients: every spelling, split and replicated dims") {
  mesh_t m(meshpp_test::grid2(world().size()));
  check_spellings<reduce_min_op>(mp::random_normal<double, batch, hidden, k>(m, sizes, 4));
}

TEST_CASE("reduce_min gradients split evenly between two tied elements") {
  mesh_t m(meshpp_test::grid2(world().size()));
  const auto x = tied(m);
  check("reduce_min", "<shape<k>>: tied across ranks", x,
        [](const auto& t) { return weighted_sum(mp::reduce_min_to<mp::shape<k>>(t)); });
  check("reduce_min", "(): tied across ranks", x,
        [](const auto& t) { return weighted_sum(mp::reduce_min(t)); });
}
