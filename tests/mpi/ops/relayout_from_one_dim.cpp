// relayout (2 of 3): from each of the 6 layouts that split one dim of [x, y, z] (over r or
// over c) to each of the 13 (relayout_check.hpp says what is checked for every pair). Runs at
// 1, 2 and 4 ranks, again with alltoalls moved in small pieces, and through MPI (not by direct
// copies).
#include "relayout_check.hpp"

TEST_CASE("relayout from a layout splitting one dim to each of the 13") {
  relayout_test::every_pair(relayout_test::one_dim_layouts{});
}

// The same pairs with alltoalls staged 200 bytes at a time (25 doubles per piece over a mesh
// dim of 2, 8 over one of 4): strided blocks move in many pieces, some partial, some under
// single indices of outer dims; the bits and the counters must not change.
TEST_CASE("relayout from a layout splitting one dim, its alltoalls moved in small pieces") {
  const relayout_test::small_pieces guard(200);
  relayout_test::every_pair(relayout_test::one_dim_layouts{});
}

// The same pairs through MPI at the default staging: among one node's ranks the alltoalls above
// copy the blocks directly between the ranks' memory (comm/single_copy.hpp); here they go to
// MPI_Alltoallv, from where the blocks lie or staged. The bits and the counters must not change.
TEST_CASE("relayout from a layout splitting one dim, its alltoalls through MPI") {
  const relayout_test::direct_copies guard(false);
  relayout_test::every_pair(relayout_test::one_dim_layouts{});
}
