// nn::multihead_attention's output against plain loops and its gradients (input, wq, wk, wv,
// wo) against central differences, with the causal mask and without (grad_attention_check.hpp),
// replicated (no rules) over the squarest grid, one row and one column of ranks: every rank
// computes the whole, and nothing may be summed over the replicas. (Split layouts:
// grad_attention.cpp.)
#include "grad_attention_check.hpp"

using namespace grad_attention_test;

TEST_CASE("multihead_attention: forward and gradients, replicated") {
  for (const auto& shape : mesh_shapes()) check_mesh(replicated_mesh(shape));
}
