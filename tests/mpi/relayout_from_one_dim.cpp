// relayout (2 of 3): from each of the 6 layouts that split one dim of [x, y, z] (over r or
// over c) to each of the 13 (relayout_check.hpp says what is checked for every pair). Runs at
// 1, 2 and 4 ranks.
#include "relayout_check.hpp"

TEST_CASE("relayout from a layout splitting one dim to each of the 13") {
  relayout_test::every_pair(relayout_test::one_dim_layouts{});
}
