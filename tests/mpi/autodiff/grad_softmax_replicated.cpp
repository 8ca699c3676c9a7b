// Gradients of softmax<Dim>, log_softmax<Dim> and logsumexp<Dim> of traced tensors
// (autodiff/softmax.hpp) on replicated_mesh of every shape, every dim whole, checked by central
// differences (double) at every element, by softmax's two backward paths:
//   row by row             [batch, hidden] over hidden: Dim last and whole
//   generic, Dim whole     [batch, hidden] over batch: not the last dim
// (split_mesh: grad_softmax.cpp.)
#include "grad_softmax_check.hpp"

using namespace grad_softmax;

TEST_CASE("softmax, log_softmax, logsumexp gradients over whole dims, replicated layout") {
  for (const auto& shape : mesh_shapes()) {
    const replicated_mesh m(shape);
    const auto x = mp::random_normal<double, batch, hidden>(m, sizes, 1);
    over<hidden>("hidden", x);  // row by row
    over<batch>("batch", x);    // generic, nothing communicated
  }
}
