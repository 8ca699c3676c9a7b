// mnist_step.hpp: one training step of examples/mnist's network (mnist.hpp of the tree being
// measured) under a mesh given as a template argument, on a few synthetic examples, so that a
// program of bench/compile instantiates the whole step (forward, backward, the optimizer's
// update) once per mesh it names and still runs without the data set.
#pragma once

#include <mnist.hpp>

#include <cstdint>
#include <cstdio>
#include <numeric>
#include <string>
#include <vector>

namespace compile_programs {

// tiny_mnist(): 8 training and 8 test examples of 4 x 4 pixels, labels 0..7 (no files read)
inline mp::mnist_data tiny_mnist() {
  mp::mnist_data d;
  d.rows = d.cols = 4;
  auto images = [](std::uint8_t shift) {
    mp::idx_array a{{8, 4, 4}, std::vector<std::uint8_t>(8 * 16)};
    for (std::size_t i = 0; i < a.data.size(); ++i)
      a.data[i] = static_cast<std::uint8_t>(i * 37 + shift);
    return a;
  };
  auto labels = [] {
    mp::idx_array a{{8}, std::vector<std::uint8_t>(8)};
    std::iota(a.data.begin(), a.data.end(), std::uint8_t{0});
    return a;
  };
  d.train_images = images(0);
  d.test_images = images(11);
  d.train_labels = labels();
  d.test_labels = labels();
  return d;
}

// train_under(mesh, data, o): the network made under Mesh, one step (the loss, backward, the
// optimizer's update) on the first o.batch examples; rank 0 prints the loss
template <class Mesh>
void train_under(const Mesh& mesh, const mp::mnist_data& data, const options& o,
                 const std::string& name) {
  model<Mesh> net(mesh, data, o);
  const auto opt = make_optimizer(o, net);
  std::vector<std::uint32_t> order(o.batch);
  std::iota(order.begin(), order.end(), 0u);
  const auto x = net.images(data.train_images, order.data());
  const auto y = net.labels(data.train_labels, order.data());
  auto loss = net.loss(x, y);
  mp::backward(loss);
  opt->step();
  if (mesh.rank() == 0)
    std::printf("%s: loss %.6f after one step\n", name.c_str(),
                static_cast<double>(*loss.value().local().data()));
}

// tiny_options(): batch 4, hidden 8, Adam (the example's default optimizer)
inline options tiny_options() {
  options o;
  o.batch = 4;
  o.hidden = 8;
  return o;
}

}  // namespace compile_programs
