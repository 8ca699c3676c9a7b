// Gradients of reduce_max of traced tensors, checked by central differences (double) at every
// element, in its three spellings, reducing dims split over a mesh dim and a replicated dim
// (grad_reduce_check.hpp); and where the maximum is tied between two elements held by
// different ranks. (One reduction per file: each traced reduction costs compile time.)
#include "grad_reduce_check.hpp"

using namespace grad_reduce;

TEST_CASE("reduce_max gradients: every spelling, split and replicated dims") {
  mesh_t m(meshpp_test::grid2(world().size()));
  check_spellings<reduce_max_op>(mp::random_normal<double, batch, hidden, k>(m, sizes, 3));
}

TEST_CASE("reduce_max gradients split evenly between two tied elements") {
  mesh_t m(meshpp_test::grid2(world().size()));
  const auto x = tied(m);
  check("reduce_max", "<shape<k>>: tied across ranks", x,
        [](const auto& t) { return weighted_sum(mp::reduce_max_to<mp::shape<k>>(t)); });
  check("reduce_max", "(): tied across ranks", x,
        [](const auto& t) { return weighted_sum(mp::reduce_max(t)); });
  // and the gradient itself: half to each of the two, nothing elsewhere
  const auto xt = mp::trace(x);
  const auto [g] = mp::gradients(mp::reduce_max(xt), xt);
  const auto whole = mp::gather(g);
  bool ok = true;
  for (std::size_t b = 0; b < B; ++b)
    for (std::size_t h = 0; h < H; ++h)
      for (std::size_t j = 0; j < K; ++j) {
        const bool top = j == K - 1 && ((b == 0 && h == 0) || (b == B - 1 && h == H - 1));
        ok = ok && whole(b, h, j) == (top ? 0.5 : 0.0);
      }
  CHECK_ALL_RANKS(ok);
}
