// nn::multihead_attention's output against plain loops and its gradients (input, wq, wk, wv,
// wo) against central differences, with the causal mask and without (grad_attention_check.hpp),
// under the rules batch:rows, heads:cols, whose mesh shape picks the layout:
//   one row of ranks     heads split: the paper's model-parallel attention (the output einsum
//                        and the input's gradient allreduce over cols)
//   one column of ranks  batch split: data parallel (each weight's gradient allreduces over rows)
//   the squarest grid    both (the paper's data+model layout)
// (replicated: grad_attention_replicated.cpp)
#include "grad_attention_check.hpp"

using namespace grad_attention_test;

namespace {
using batch_heads_mesh =
    mp::mesh<mp::axes<rows, cols>, mp::layout<mp::split<batch, rows>, mp::split<heads, cols>>>;
}  // namespace

TEST_CASE("multihead_attention: forward and gradients, heads split (model parallel)") {
  check_mesh(batch_heads_mesh({1, world().size()}));
}

TEST_CASE("multihead_attention: forward and gradients, batch split (data parallel)") {
  check_mesh(batch_heads_mesh({world().size(), 1}));
}

TEST_CASE("multihead_attention: forward and gradients, batch and heads split over a grid") {
  check_mesh(batch_heads_mesh(meshpp_test::grid2(world().size())));
}
