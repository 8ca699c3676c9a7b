// relayout (3 of 3): from each of the 6 layouts that split two dims of [x, y, z], one over r
// and one over c, to each of the 13 (relayout_check.hpp says what is checked for every pair;
// relayout.cpp spells out the cycles among these). Runs at 1, 2 and 4 ranks.
#include "relayout_check.hpp"

TEST_CASE("relayout from a layout splitting two dims to each of the 13") {
  relayout_test::every_pair(relayout_test::two_dim_layouts{});
}
