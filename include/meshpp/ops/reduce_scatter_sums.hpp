// meshpp/ops/reduce_scatter_sums.hpp — partial sums over a mesh dim completed by one
// reduce_scatter, each member keeping its stripe of a dim: a finished partial product's
// (ops/einsum.hpp) and a gradient's flowing into a split tensor (autodiff/traced.hpp).
//
//   [d, ...] partial over m  |-> [d/m, ...]   reduce_scatter over m
#pragma once

#include <array>
#include <cstddef>
#include <span>
#include <utility>
#include <vector>

#include "meshpp/comm/collectives.hpp"
#include "meshpp/core/blocks.hpp"
#include "meshpp/core/divides.hpp"
#include "meshpp/core/layout.hpp"
#include "meshpp/core/shape.hpp"
#include "meshpp/core/tensor.hpp"

namespace meshpp::detail {

// reduce_scatter_along<Rule>(x): [d, ...] partial sums over m |-> [d/m, ...] complete sums,
// Rule = split<d, m>: one reduce_scatter over m, block j of d (stripe j, of its own size when
// d is split unevenly) to member j.
template <class Rule, class X>
auto reduce_scatter_along(const X& x) {
  using T = typename X::value_type;
  using S = typename X::shape_type;
  using d = typename Rule::tensor_dim;
  using m = typename Rule::mesh_dim;
  using Y = tensor<T, S, layout_for_t<layout_merge_t<typename X::layout_type, layout<Rule>>, S>,
                   typename X::mesh_type>;
  Y y(x.mesh(), x.sizes(), Y::uninitialized);
  const auto ext = x.local_shape();
  constexpr std::size_t ax = index_of_v<S, d>;
  const std::size_t p = static_cast<std::size_t>(x.mesh().template size<m>());
  const std::size_t count = x.local().size();
  // block j: stripe j of d (whole in x), every other dim as x holds it
  std::vector<std::size_t> counts(p);
  auto block = [&](std::size_t j) {
    auto b = ext;
    b[ax] = stripe_size(ext[ax], p, j);
    return b;
  };
  for (std::size_t j = 0; j < p; ++j) counts[j] = element_count(block(j));
  scratch<T> packed;
  const T* in = x.local().data();
  bool contiguous = true;
  for (std::size_t i = 0; i < ax; ++i) contiguous = contiguous && ext[i] == 1;
  if (!contiguous && !x.mesh().planning()) {  // blocks of d are strided: pack them in order
    packed.resize(count);
    std::array<std::size_t, S::rank> zero{}, at{};
    for (std::size_t j = 0, pos = 0; j < p; pos += counts[j], ++j) {
      at[ax] = stripe_begin(ext[ax], p, j);
      copy_box(x.local().data(), ext, at, packed.data() + pos, block(j), zero, block(j));
    }
    in = packed.data();
  }
  const std::span<const T> from(in, count);
  const std::span<T> to(y.local().data(), y.local().size());
  reduce_scatter<over<m>, op::sum>::run_blocks(x.mesh(), from, to,
                                               std::span<const std::size_t>(counts));
  return y;
}

template <class X>
auto reduce_scatter_all(X&& x, layout<>*) {
  return std::forward<X>(x);
}
template <class X, class R, class... Rest>
auto reduce_scatter_all(const X& x, layout<R, Rest...>*) {
  return reduce_scatter_all(reduce_scatter_along<R>(x), static_cast<layout<Rest...>*>(nullptr));
}

}  // namespace meshpp::detail
