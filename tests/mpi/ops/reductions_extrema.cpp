// Reductions over named dims, part 2: reduce_max and reduce_min in their three spellings, of
// tensors and of expressions (see reductions.cpp), against a single-rank reference.
#include "reductions_spellings.hpp"

TEST_CASE("reduce_max in every spelling") {
  spellings::check_every_spelling<meshpp_test::kind::max>();
}
TEST_CASE("reduce_min in every spelling") {
  spellings::check_every_spelling<meshpp_test::kind::min>();
}
