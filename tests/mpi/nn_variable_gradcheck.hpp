// Central-difference checks of the gradient with respect to a variable a layer holds (the
// layer's own variable, perturbed in place), for the nn layer tests.
#pragma once

#include <meshpp/autodiff/gradients.hpp>
#include <meshpp/core/create.hpp>
#include <meshpp/ops/scatter_gather.hpp>

#include <algorithm>
#include <cmath>
#include <cstddef>

#include "gradcheck.hpp"

namespace meshpp_test {

// variable_gradient_error(v, loss): like gradient_error, for a variable: the gradient of the
// scalar loss() with respect to v against central differences at every element, v perturbed in
// place (every rank holding a replica of an element perturbs it alike) and restored after
template <class V, class F>
double variable_gradient_error(V& v, F&& loss, double h = 1e-6) {
  namespace mp = meshpp;
  using X = typename V::tensor_type;
  const auto [g] = mp::gradients(loss(), v);
  const auto grad = mp::gather(g);
  const X original = v.value();
  const auto base = mp::gather(original);
  const auto& shape = original.global_shape();
  double worst = 0;
  for (std::size_t i = 0; i < base.size(); ++i) {
    auto at = [&](double delta) {
      v.value() = mp::generate<X>(original.mesh(), original.sizes(), [&](const auto& index) {
        std::size_t flat = 0;
        for (std::size_t d = 0; d < index.size(); ++d) flat = flat * shape[d] + index[d];
        return base.data()[flat] + (flat == i ? delta : 0.0);
      });
      return scalar_of(loss());
    };
    const double fd = (at(h) - at(-h)) / (2 * h);
    worst = std::max(
        worst, std::abs(fd - static_cast<double>(grad.data()[i])) / std::max(1.0, std::abs(fd)));
  }
  v.value() = original;
  return worst;
}

}  // namespace meshpp_test
