// meshpp/ops/detail/complete_sums.hpp — a result of partial sums across ranks, completed and
// laid out as requested: einsum<Out, OutRules>'s (ops/einsum.hpp) and take<Dim, OutRules>'s
// (ops/embedding.hpp).
//
//   x[d, e] partial over m, requested split<d, m>   |-> [d/m, e]  reduce_scatter over m
//   x[d, e] partial over m, requested d and e whole |-> [d, e]    allreduce over m
//
// A dim the request splits over a summed mesh dim (and the natural layout keeps whole) gets a
// reduce_scatter over that mesh dim: each rank receives only its stripe of the sums, half the
// bytes of an allreduce and no slice after it. The summed mesh dims no requested dim takes are
// allreduced; any other difference from the request is a relayout (ops/relayout.hpp).
#pragma once

#include <span>
#include <type_traits>
#include <utility>

#include "meshpp/comm/collectives.hpp"
#include "meshpp/core/layout.hpp"
#include "meshpp/ops/detail/einsum_plan.hpp"
#include "meshpp/ops/reduce_scatter_sums.hpp"
#include "meshpp/ops/relayout.hpp"

namespace meshpp::detail {

// laid_out<Rules>(x): x itself (moved, not copied) when Rules lay it out as it is, else
// relayout<Rules>(x)
template <class Rules, class X>
auto laid_out(X&& x) {
  using Xt = std::remove_cvref_t<X>;
  if constexpr (std::is_same_v<layout_for_t<Rules, typename Xt::shape_type>,
                               typename Xt::layout_type>)
    return Xt(std::forward<X>(x));
  else
    return relayout<Rules>(x);
}

// sums_laid_out<Requested, Summed>(x): x (laid out naturally, holding partial sums over the mesh
// dims of the shape Summed) summed across ranks and laid out by Requested (a layout of x's dims),
// as the top of this header says
template <class Requested, class Summed, class X>
auto sums_laid_out(X&& x) {
  using Xt = std::remove_cvref_t<X>;
  using S = typename Xt::shape_type;
  using sp = scatter_plan<S, typename Xt::layout_type, Requested, Summed>;
  allreduce<over_t<typename sp::allreduced>, op::sum>::run(
      x.mesh(), std::span(x.local().data(), x.local().size()));
  return laid_out<Requested>(
      reduce_scatter_all(std::forward<X>(x), static_cast<typename sp::rules*>(nullptr)));
}

}  // namespace meshpp::detail
