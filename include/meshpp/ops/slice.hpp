// meshpp/ops/slice.hpp — slice, pad, concat and split along a named dim, split or not.
//
//   slice<seq>(x, begin, size)        x[..., begin:begin+size, ...]
//   pad<seq>(x, before, after, v=0)   v-filled rows before and after
//   concat<seq>(a, b)                 a then b along seq
//   split_along<seq>(x, {s0, s1})     the consecutive slices of those sizes (not `split`:
//                                     that name is the layout rule split<TensorDim, MeshDim>)
//
// [seq/m] |-> [seq'/m]   each rank receives exactly the rows of its new stripe that other
//                        ranks hold: one collective permute over m (comm/permute.hpp), only
//                        between the ranks whose ranges overlap; nothing when seq is whole.
// The output keeps the input's layout, its new size split into near-equal blocks (the last
// ones shorter, as any split: core/divides.hpp); a range outside the dim throws
// meshpp::error on every rank before any communication.
#pragma once

#include <cstddef>
#include <initializer_list>
#include <string>
#include <vector>

#include "meshpp/core/error.hpp"
#include "meshpp/core/tensor.hpp"
#include "meshpp/expr/expression.hpp"
#include "meshpp/ops/remap.hpp"

namespace meshpp {

namespace offending {
template <class Dim, class Shape>
inline constexpr bool dim_not_in_tensor = false;
}  // namespace offending

namespace detail {
template <class Dim, class Tensor>
constexpr void check_dim_of() {
  static_assert(contains_v<typename Tensor::shape_type, Dim> ||
                    offending::dim_not_in_tensor<Dim, typename Tensor::shape_type>,
                "meshpp: the tensor has no dim of that name");
}
}  // namespace detail

// slice<Dim>(t, begin, size)
template <class Dim, class Tensor>
requires is_tensor_v<Tensor> Tensor slice(const Tensor& t, std::size_t begin, std::size_t size) {
  detail::check_dim_of<Dim, Tensor>();
  if (begin > t.template extent<Dim>() || size > t.template extent<Dim>() - begin) {  // no wrap
    throw error("meshpp::slice<" + std::string(Dim::name()) + ">: [" + std::to_string(begin) +
                ", " + std::to_string(begin + size) + ") is outside the dim of size " +
                std::to_string(t.template extent<Dim>()));
  }
  Tensor out(t.mesh(), detail::with_size<Dim>(t.sizes(), size), Tensor::uninitialized);
  detail::remap_along<Dim>(t, static_cast<long>(begin), false, detail::block_ranges<Dim>(out),
                           out.local().data(), out.local_shape());
  return out;
}

// pad<Dim>(t, before, after, value = 0)
template <class Dim, class Tensor>
requires is_tensor_v<Tensor> Tensor pad(const Tensor& t, std::size_t before, std::size_t after,
                                        typename Tensor::value_type value = {}) {
  detail::check_dim_of<Dim, Tensor>();
  Tensor out(t.mesh(), detail::with_size<Dim>(t.sizes(), before + t.template extent<Dim>() + after),
             Tensor::uninitialized);
  out.local().fill(value);
  detail::remap_along<Dim>(t, -static_cast<long>(before), false, detail::block_ranges<Dim>(out),
                           out.local().data(), out.local_shape());
  return out;
}

// concat<Dim>(a, b): a's then b's elements along Dim (the other dims must agree in size)
template <class Dim, class Tensor>
requires is_tensor_v<Tensor> Tensor concat(const Tensor& a, const Tensor& b) {
  detail::check_dim_of<Dim, Tensor>();
  detail::for_each_index<Tensor::rank>([&](auto i) {
    using d = dim_at_t<typename Tensor::shape_type, i.value>;
    if (!std::is_same_v<d, Dim> && a.template extent<d>() != b.template extent<d>()) {
      throw error("meshpp::concat<" + std::string(Dim::name()) +
                  ">: the inputs disagree on the "
                  "size of dim '" +
                  std::string(d::name()) + "'");
    }
  });
  const std::size_t na = a.template extent<Dim>();
  Tensor out(a.mesh(), detail::with_size<Dim>(a.sizes(), na + b.template extent<Dim>()),
             Tensor::uninitialized);
  const auto ranges = detail::block_ranges<Dim>(out);
  detail::remap_along<Dim>(a, 0, false, ranges, out.local().data(), out.local_shape());
  detail::remap_along<Dim>(b, -static_cast<long>(na), false, ranges, out.local().data(),
                           out.local_shape());
  return out;
}

// split_along<Dim>(t, sizes): consecutive slices of those sizes, which must add up to Dim's size
template <class Dim, class Tensor>
requires is_tensor_v<Tensor> std::vector<Tensor> split_along(
    const Tensor& t, const std::vector<std::size_t>& sizes) {
  detail::check_dim_of<Dim, Tensor>();
  std::size_t total = 0;
  for (std::size_t s : sizes) total += s;
  if (total != t.template extent<Dim>()) {
    throw error("meshpp::split_along<" + std::string(Dim::name()) + ">: the sizes add up to " +
                std::to_string(total) + ", not the dim's size " +
                std::to_string(t.template extent<Dim>()));
  }
  // Every part is made before any part moves.
  std::vector<Tensor> parts;
  parts.reserve(sizes.size());
  for (std::size_t s : sizes) {
    parts.emplace_back(t.mesh(), detail::with_size<Dim>(t.sizes(), s), Tensor::uninitialized);
  }
  std::size_t begin = 0;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    detail::remap_along<Dim>(t, static_cast<long>(begin), false,
                             detail::block_ranges<Dim>(parts[i]), parts[i].local().data(),
                             parts[i].local_shape());
    begin += sizes[i];
  }
  return parts;
}

}  // namespace meshpp
