// The dense layer with both of its dims split (io, the contracted one, over rows; hidden over
// cols): the forward einsum allreduces over rows. A relu layer, and the identity with and
// without a bias: forward against plain loops, gradients of x, w and b against central
// differences.
#include "nn_dense_check.hpp"

using namespace nn_dense_test;
using meshpp_test::world;

TEST_CASE("dense: relu layer, io and hidden split") {
  check_layer<mp::activation::relu>(io_hidden_mesh(meshpp_test::grid2(world().size())));
}
TEST_CASE("dense: identity layer with and without bias, io and hidden split") {
  io_hidden_mesh m(meshpp_test::grid2(world().size()));
  check_layer<mp::activation::identity>(m);
  check_layer<mp::activation::identity, false>(m);
}
