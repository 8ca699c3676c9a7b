// Gradients of where(c, a, b) with traced branches, checked by central differences (double) at
// every element, on split_mesh and replicated_mesh of every shape. The conditions: a bool tensor
// in the other dim order than x's ([hidden, batch]), one with a dim neither branch has
// ([seq, hidden]: the result gains seq, which x's gradient sums out), and a bool tensor of no
// dims (a scalar condition, true and false). The branches: traced and scalar either way round,
// traced and plain, and both traced with b broadcast over batch (its gradient summed over
// batch: an allreduce over rows when split).
// (where before softmax under a causal mask: grad_softmax_masked.cpp.)
#include "grad_softmax_check.hpp"

using namespace grad_softmax;

namespace {

template <class Mesh>
void check_where(const Mesh& m) {
  const auto x = mp::random_normal<double, batch, hidden>(m, sizes, 1);
  const auto other = mp::random_normal<double, batch, hidden>(m, sizes, 4);  // a plain branch
  const auto c = mp::eval(mp::random_normal<double, hidden, batch>(m, sizes, 2) > 0.0);
  const auto by_seq = mp::generate<bool, seq, hidden>(
      m, sizes, [](const auto& g) { return (g[0] + 2 * g[1]) % 3 != 0; });
  check("where(c, x, 0.5)", x, [&](const auto& t) { return weighted_sum(mp::where(c, t, 0.5)); });
  check("where(c, 0.5, x)", x, [&](const auto& t) { return weighted_sum(mp::where(c, 0.5, t)); });
  check("where(c, x, reduce_sum<batch>(x))", x,
        [&](const auto& t) { return weighted_sum(mp::where(c, t, mp::reduce_sum<batch>(t))); });
  check("where(c [seq, hidden], plain, x)", x,
        [&](const auto& t) { return weighted_sum(mp::where(by_seq, other, t)); });
  for (const bool pick : {true, false}) {
    const auto scalar = mp::full<bool>(m, sizes, pick);
    check(pick ? "where(true, x, 0.5)" : "where(false, x, 0.5)", x,
          [&](const auto& t) { return weighted_sum(mp::where(scalar, t, 0.5)); });
  }
}
}  // namespace

TEST_CASE("where gradients: bool tensor and scalar conditions, traced branches") {
  on_every_mesh([](const auto& m) { check_where(m); });
}
