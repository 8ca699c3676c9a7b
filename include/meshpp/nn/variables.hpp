// meshpp/nn/variables.hpp — handing a layer's variables to an optimizer (or anything with add).
//
//   mp::add_variables(optimizer, layer1, layer2);   // optimizer.add(v) for every variable v
//
// A layer (nn/dense.hpp, nn/embedding.hpp, nn/layer_norm.hpp) exposes `variables()`, a
// std::tuple of variable handles (copies share the value and the gradient). Nothing here
// communicates.
#pragma once

#include <tuple>
#include <utility>

namespace meshpp {

// add_variables(target, layers...): target.add(v) for every variable v of every layer, in order
template <class Target, class... Layers>
void add_variables(Target& target, const Layers&... layers) {
  auto add_all = [&](const auto& layer) {
    auto handles = layer.variables();  // lvalues: add() may take a variable& or a copy
    std::apply([&](auto&... v) { (target.add(v), ...); }, handles);
  };
  (add_all(layers), ...);
}

}  // namespace meshpp
