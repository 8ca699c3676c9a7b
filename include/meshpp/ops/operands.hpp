// meshpp/ops/operands.hpp — what the ops of two operands matched by dim name (einsum,
// gather) check and size alike: the operands share a mesh and agree on the sizes of their
// common dims, and each output dim takes its size from the operand that has it.
#pragma once

#include <array>
#include <cstddef>
#include <span>
#include <string>
#include <string_view>

#include "meshpp/core/config.hpp"
#include "meshpp/core/error.hpp"
#include "meshpp/core/extents.hpp"
#include "meshpp/core/shape.hpp"
#include "meshpp/core/tensor.hpp"

namespace meshpp::detail {

// check_operands<Shared>(what, operands, a, b): expressions a and b live on one mesh and agree
// on the sizes of the dims Shared; else throws "<what>: <operands> live on different meshes"
// or "... disagree on the size of dim 'd'", on every rank alike, before any communication
// operands_agree(what, operands, same_mesh, in_a, in_b, names): check_operands' checks, on
// the sizes of the shared dims (names) in each operand: one function for every pair of operands
MESHPP_KERNEL inline void operands_agree(std::string_view what, std::string_view operands,
                                         bool same_mesh, std::span<const std::size_t> in_a,
                                         std::span<const std::size_t> in_b,
                                         std::span<const std::string_view> names) {
  if (!same_mesh) fail({what, ": ", operands, " live on different meshes"});
  for (std::size_t i = 0; i < names.size(); ++i) {
    if (in_a[i] != in_b[i]) {
      fail({what, ": ", operands, " disagree on the size of dim '", names[i], "': ", in_a[i],
            " and ", in_b[i]});
    }
  }
}

template <class Shared, class XA, class XB>
void check_operands(std::string_view what, std::string_view operands, const XA& a, const XB& b) {
  [&]<class... D>(shape<D...>*) {
    const std::array<std::size_t, sizeof...(D)> in_a{a.template size<D>()...},
        in_b{b.template size<D>()...};
    operands_agree(what, operands, *a.mesh_ptr() == *b.mesh_ptr(), in_a, in_b, dim_names_v<Shared>);
  }(static_cast<Shared*>(nullptr));
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
