// Shared by grad_reduce.cpp, grad_reduce_max.cpp and grad_reduce_min.cpp: gradients of the
// reductions of traced tensors, checked by central differences (double) at every element, in their
// three spellings (<Dims...>, <shape<Out...>>, none = every dim), reducing dims split over a mesh
// dim (batch over rows, hidden over cols) and a replicated dim (k).
#pragma once

#include <cmath>
#include <cstddef>
#include <string>

#include "grad_fixture.hpp"

MESHPP_DIM(k);

namespace grad_reduce {
constexpr std::size_t B = 4, H = 4, K = 3;
const auto sizes = mp::extents{batch{} = B, hidden{} = H, k{} = K};
using mesh_t = split_mesh;  // batch and hidden split, k replicated

// The four reductions as types, so one check runs each in every spelling: apply<Dims...>
// is reduce_x<Dims...>, apply<shape<...>> is reduce_x_to<shape<...>>.
#define MESHPP_TEST_REDUCTION(NAME)                                    \
  struct NAME##_op {                                                   \
    static constexpr const char* name = #NAME;                         \
    template <class... Ts, class X>                                    \
    static auto apply(const X& x) {                                    \
      if constexpr (sizeof...(Ts) == 1 && (mp::is_shape_v<Ts> && ...)) \
        return mp::NAME##_to<Ts...>(x);                                \
      else                                                             \
        return mp::NAME<Ts...>(x);                                     \
    }                                                                  \
  };
MESHPP_TEST_REDUCTION(reduce_sum)
MESHPP_TEST_REDUCTION(reduce_mean)
MESHPP_TEST_REDUCTION(reduce_max)
MESHPP_TEST_REDUCTION(reduce_min)
#undef MESHPP_TEST_REDUCTION

template <class X, class F>
void check(const char* op, const char* what, const X& x, F f) {
  check_gradient(std::string(op) + what, x, f);
}

// Op<Ts...>(x) in every spelling, through weighted_sum so each output element has its own
// weight (the gradient must reach the right inputs, not only sum right).
template <class Op, class X>
void check_spellings(const X& x) {
  const char* op = Op::name;
  check(op, "<hidden>: split over cols", x,
        [](const auto& t) { return weighted_sum(Op::template apply<hidden>(t)); });
  check(op, "<k>: replicated", x,
        [](const auto& t) { return weighted_sum(Op::template apply<k>(t)); });
  check(op, "<batch, k>: split over rows, and replicated", x,
        [](const auto& t) { return weighted_sum(Op::template apply<batch, k>(t)); });
  check(op, "_to<shape<k>>: both split dims", x,
        [](const auto& t) { return weighted_sum(Op::template apply<mp::shape<k>>(t)); });
  check(op, "_to<shape<hidden, batch>>: replicated k, output transposed", x, [](const auto& t) {
    return weighted_sum(Op::template apply<mp::shape<hidden, batch>>(t));
  });
  check(op, "(): every dim", x,
        [](const auto& t) { return weighted_sum(Op::template apply<>(t)); });
}

// Values in [-1, 1] except two tied maxima 5 + k at (batch 0, hidden 0) and (batch B-1,
// hidden H-1), and two tied minima -5 - k at (0, H-1) and (B-1, 0): on four ranks each pair
// lies on two ranks, so the tie count needs the allreduce. At a tie of two the central
// difference is exactly half the weight ((+h) moves the extremum, (-h) leaves the twin), which
// is what the rule gives each of them.
template <class Mesh>
auto tied(const Mesh& m) {
  return mp::generate<double, batch, hidden, k>(m, sizes, [](const auto& g) {
    const double big = 5.0 + static_cast<double>(g[2]);
    const bool first = g[0] == 0, last = g[0] == B - 1, left = g[1] == 0, right = g[1] == H - 1;
    if ((first && left) || (last && right)) return big;
    if ((first && right) || (last && left)) return -big;
    return std::sin(static_cast<double>(g[0] * 31 + g[1] * 7 + g[2] * 3));
  });
}
}  // namespace grad_reduce
