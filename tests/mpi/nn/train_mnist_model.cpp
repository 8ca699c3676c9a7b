// The README network under the data-parallel and model-parallel layouts (see
// train_mnist_model.hpp).
#include "train_mnist_model.hpp"

TEST_CASE("README network, data-parallel: batch:all") {
  train_and_compare(mp::mesh<mp::axes<all>, mp::layout<mp::split<batch, all>>>({world().size()}));
}
TEST_CASE("README network, model-parallel: hidden:all") {
  train_and_compare(mp::mesh<mp::axes<all>, mp::layout<mp::split<hidden, all>>>({world().size()}));
}
