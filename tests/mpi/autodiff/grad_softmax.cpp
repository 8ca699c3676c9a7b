// Gradients of softmax<Dim>, log_softmax<Dim> and logsumexp<Dim> of traced tensors
// (autodiff/softmax.hpp) on split_mesh (batch:rows, hidden:cols) of every shape, checked by
// central differences (double) at every element, by softmax's two backward paths:
//   generic, Dim split     [batch/rows, hidden/cols] over hidden (cols) or batch (rows)
//   row by row             [batch/rows, seq] over seq: Dim last and whole, the other dim split
//                          (the attention scores' case)
// (replicated_mesh: grad_softmax_replicated.cpp; under a causal mask, and stop_gradient:
// grad_softmax_masked.cpp; where: grad_softmax_where.cpp. Split so each compiles quickly.)
#include "grad_softmax_check.hpp"

using namespace grad_softmax;

TEST_CASE("softmax, log_softmax, logsumexp gradients: split dims, and row by row, split layout") {
  for (const auto& shape : mesh_shapes()) {
    const split_mesh m(shape);
    const auto x = mp::random_normal<double, batch, hidden>(m, sizes, 1);
    over<hidden>("hidden", x);  // split over cols
    over<batch>("batch", x);    // split over rows, not the last dim
    over<seq>("seq", mp::random_normal<double, batch, seq>(m, sizes, 2));  // row by row
  }
}
