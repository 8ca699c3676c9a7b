// The dense layer (nn/dense.hpp): Glorot initialisation identical under every layout, its
// variables handed to an optimizer, and a relu layer's forward pass against plain loops and
// gradients of x, w and b against central differences, under a layout splitting batch and hidden
// and under a replicated one (io split: nn_dense_model_parallel.cpp).
#include <meshpp/autodiff/parameters.hpp>

#include <string>
#include <vector>

#include "nn_dense_check.hpp"

using namespace nn_dense_test;
using meshpp_test::world;

TEST_CASE("dense: Glorot-uniform weights are the same bits under every layout") {
  const auto grid = meshpp_test::grid2(world().size());
  batch_hidden_mesh m1(grid);
  io_hidden_mesh m2(grid);
  replicated_mesh m3(grid);
  using act = mp::activation::relu;
  mp::dense<float, mp::shape<io>, mp::shape<hidden>, batch_hidden_mesh, act> l1(m1, sizes, 5);
  mp::dense<float, mp::shape<io>, mp::shape<hidden>, io_hidden_mesh, act> l2(m2, sizes, 5);
  mp::dense<float, mp::shape<io>, mp::shape<hidden>, replicated_mesh, act> l3(m3, sizes, 5);
  const auto w1 = mp::gather(l1.weight().value());
  CHECK_ALL_RANKS(meshpp_test::bit_equal(w1, mp::gather(l2.weight().value())));
  CHECK_ALL_RANKS(meshpp_test::bit_equal(w1, mp::gather(l3.weight().value())));
  // U(-l, l), l = sqrt(6 / (fan_in + fan_out)) = sqrt(6 / 10), from (seed, global index)
  const float limit = static_cast<float>(std::sqrt(0.6));
  const auto want = meshpp_test::filled<float, 2>(
      {6, 4}, [&](std::uint64_t i) { return -limit + 2 * limit * mp::uniform_at<float>(5, i); });
  CHECK_ALL_RANKS(meshpp_test::bit_equal(w1, want));
  CHECK_ALL_RANKS(mp::gather(l1.bias().value()) == xt::zeros<float>({4}));
}

namespace {
// what an optimizer looks like to add_variables: anything with add(variable)
struct collector {
  std::vector<std::string> names;
  template <class V>
  void add(V& v) {
    names.push_back(v.name());
  }
};
}  // namespace

TEST_CASE("dense: variables() and add_variables hand w and b to an optimizer") {
  batch_hidden_mesh m(meshpp_test::grid2(world().size()));
  collector c;
  mp::dense<double, mp::shape<io>, mp::shape<hidden>, batch_hidden_mesh> a(m, sizes, 1, "a");
  mp::dense<double, mp::shape<io>, mp::shape<hidden>, batch_hidden_mesh, mp::activation::identity,
            false>
      b(m, sizes, 2, "b");
  mp::add_variables(c, a, b);
  CHECK(c.names == std::vector<std::string>{"a/w", "a/b", "b/w"});
  // handles share the layer's values
  std::get<0>(a.variables()).value().local().fill(1.0);
  CHECK(a.weight().value().local()(0, 0) == 1.0);
}

TEST_CASE("dense: relu layer, batch and hidden split") {
  check_layer<mp::activation::relu>(batch_hidden_mesh(meshpp_test::grid2(world().size())));
}
TEST_CASE("dense: relu layer, replicated") {
  check_layer<mp::activation::relu>(replicated_mesh(meshpp_test::grid2(world().size())));
}
