// The README network under the data-and-model-parallel layout (see train_mnist_model.hpp).
#include "train_mnist_model.hpp"

TEST_CASE("README network, data and model parallel: batch:processor_rows, hidden:processor_cols") {
  train_and_compare(
      mp::mesh<mp::axes<processor_rows, processor_cols>,
               mp::layout<mp::split<batch, processor_rows>, mp::split<hidden, processor_cols>>>(
          meshpp_test::grid2(world().size())));
}
