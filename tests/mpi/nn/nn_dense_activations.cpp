// The dense layer's fused bias + activation node for gelu, tanh and sigmoid: forward against
// plain loops, gradients of x, w and b against central differences, under a layout splitting
// batch and hidden and under a replicated one.
#include "nn_dense_check.hpp"

using namespace nn_dense_test;
using meshpp_test::world;

TEST_CASE("dense: gelu, tanh and sigmoid layers, batch and hidden split") {
  batch_hidden_mesh m(meshpp_test::grid2(world().size()));
  check_layer<mp::activation::gelu>(m);
  check_layer<mp::activation::tanh>(m);
  check_layer<mp::activation::sigmoid>(m);
}
TEST_CASE("dense: gelu, tanh and sigmoid layers, replicated") {
  replicated_mesh m(meshpp_test::grid2(world().size()));
  check_layer<mp::activation::gelu>(m);
  check_layer<mp::activation::tanh>(m);
  check_layer<mp::activation::sigmoid>(m);
}
