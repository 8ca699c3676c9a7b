// Central-difference checks of the gradient with respect to a variable a layer holds (the
// layer's own variable, perturbed in place), for the nn layer tests.
#pragma once

#include <meshpp/autodiff/gradients.hpp>
#include <meshpp/core/create.hpp>
#include <meshpp/ops/scatter_gather.hpp>

#include <utility>

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
  const X original = v.value();
  const double worst = central_difference_error(
      original, mp::gather(g),
      [&](X x) {
        v.value() = std::move(x);
        return scalar_of(loss());
      },
      h);
  v.value() = original;
  return worst;
}

}  // namespace meshpp_test
