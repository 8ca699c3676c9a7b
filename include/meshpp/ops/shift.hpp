// meshpp/ops/shift.hpp — shift along a dim, and halo exchange for stencils over a split dim.
//
//   shift<x>(t, 1, boundary::zero)      out[i] = t[i - 1], 0 where i - 1 is outside
//   shift<x>(t, -2, boundary::wrap)     out[i] = t[(i + 2) mod n]
//   auto h = halo_exchange<x>(t, 1)     this rank's slice with 1 neighbour row on each side
//
// Any offset is allowed: past the size, boundary::zero gives all zeros and boundary::wrap
// shifts by the offset mod n. A halo may be wider than a rank's slice (it then reaches ranks
// beyond the neighbours); one wider than the whole dim throws meshpp::error with
// boundary::wrap (the far end would repeat) and holds zeros beyond the ends with boundary::zero.
//
// [x/m] |-> [x/m]   each rank sends the rows that cross into a neighbour's stripe: a
//                   collective permute over m between mesh neighbours (only the ranks whose
//                   ranges overlap exchange); no communication when x is whole.
// halo_exchange is Mesh-TensorFlow's spatial partitioning: a stencil or convolution over a
// split dim reads its neighbours' borders from the halo, then works on local data alone.
#pragma once

#include <cstddef>
#include <string>

#include <xtensor/xtensor.hpp>

#include "meshpp/core/error.hpp"
#include "meshpp/core/tensor.hpp"
#include "meshpp/ops/remap.hpp"
#include "meshpp/ops/slice.hpp"

namespace meshpp {

// shift<Dim>(t, offset, b = boundary::zero): out[i] = t[i - offset] along Dim
template <class Dim, class Tensor>
requires is_tensor_v<Tensor> Tensor shift(const Tensor& t, long offset,
                                          boundary b = boundary::zero) {
  detail::check_dim_of<Dim, Tensor>();
  Tensor out(t.mesh(), t.sizes(), Tensor::uninitialized);
  if (b == boundary::zero) out.local().fill(typename Tensor::value_type{});
  detail::remap_along<Dim>(t, -offset, b == boundary::wrap, detail::block_ranges<Dim>(out),
                           out.local().data(), out.local_shape());
  return out;
}

/// @brief A rank's slice with `width` extra elements on each side of one dim: element i of
/// the slice along that dim is at i + width; 0..width-1 and the last width hold the
/// neighbours' borders (zeros, or the far end when wrapping, beyond the ends of the dim).
template <class T, std::size_t N>
struct halo_slice {
  xt::xtensor<T, N> data;
  std::size_t width;
  std::size_t axis;  // the position of the dim in the tensor's shape
};

// halo_exchange<Dim>(t, width, b = boundary::zero)
template <class Dim, class Tensor>
requires is_tensor_v<Tensor>
auto halo_exchange(const Tensor& t, std::size_t width, boundary b = boundary::zero) {
  detail::check_dim_of<Dim, Tensor>();
  using T = typename Tensor::value_type;
  constexpr std::size_t ax = index_of_v<typename Tensor::shape_type, Dim>;
  const long w = static_cast<long>(width);
  if (b == boundary::wrap && w > static_cast<long>(t.template extent<Dim>())) {
    throw error("meshpp::halo_exchange<" + std::string(Dim::name()) + ">: a halo of " +
                std::to_string(width) + " is wider than the dim");
  }
  auto ext = t.local_shape();
  ext[ax] += 2 * width;
  halo_slice<T, Tensor::rank> h{xt::xtensor<T, Tensor::rank>(ext, T{}), width, ax};
  // member q's output: its own stripe (of its own size, where the split is uneven) widened by
  // the halo on both sides; every member computes every member's range alike
  const auto stripes = detail::block_ranges<Dim>(t);
  detail::remap_along<Dim>(
      t, 0, b == boundary::wrap,
      [stripes, w](int q) {
        const auto r = stripes(q);
        return detail::index_range{r.lo - w, r.hi + w};
      },
      h.data.data(), ext);
  return h;
}

}  // namespace meshpp
