// meshpp/ops/detail/operands.hpp — what the ops of two operands matched by dim name (einsum,
// gather) check and size alike: the operands share a mesh and agree on the sizes of their
// common dims, and each output dim takes its size from the operand that has it.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "meshpp/core/error.hpp"
#include "meshpp/core/extents.hpp"
#include "meshpp/core/shape.hpp"
#include "meshpp/core/tensor.hpp"

namespace meshpp::detail {

// check_operands<Shared>(what, operands, a, b): expressions a and b live on one mesh and agree
// on the sizes of the dims Shared; else throws "<what>: <operands> live on different meshes"
// or "... disagree on the size of dim 'd'", on every rank alike, before any communication
template <class Shared, class XA, class XB>
void check_operands(std::string_view what, std::string_view operands, const XA& a, const XB& b) {
  if (!(*a.mesh_ptr() == *b.mesh_ptr())) fail({what, ": ", operands, " live on different meshes"});
  for_each_index<Shared::rank>([&](auto i) {
    using d = dim_at_t<Shared, i.value>;
    if (a.template size<d>() != b.template size<d>()) {
      fail({what, ": ", operands, " disagree on the size of dim '", d::name(),
            "': ", a.template size<d>(), " and ", b.template size<d>()});
    }
  });
}

// sizes_from<Out>(a, b): the sizes of Out's dims, each from expression a when a has the dim,
// else from b
template <class Out, class XA, class XB>
auto sizes_from(const XA& a, const XB& b) {
  return [&]<class... Dims>(shape<Dims...>*) {
    [[maybe_unused]] auto size = [&]<class D>(D*) {  // unused when Out is shape<> (a dot product)
      if constexpr (contains_v<typename XA::shape_type, D>)
        return a.template size<D>();
      else
        return b.template size<D>();
    };
    return extents<Dims...>{dim_extent<Dims>{size(static_cast<Dims*>(nullptr))}...};
  }(static_cast<Out*>(nullptr));
}

}  // namespace meshpp::detail
