// meshpp/core/row_major.hpp — row-major numbering: an index <-> its coordinates.
//
//   linear_index({1, 2}, {3, 4})       -> 6        (1 * 4 + 2)
//   coordinates_at(6, {3, 4})          -> {1, 2}
//   row_major_strides<2>({3, 4})       -> {4, 1}
//
// The one mapping between a number and N-d coordinates: a rank and its mesh coordinates (the
// mesh numbers its ranks row-major over its dims as declared), an element and its index in a
// row-major array. The `mask` forms number only the dims whose bit is set (bit i is dim i),
// the others left as they are: the members of a communicator over some mesh dims are
// numbered so, and the mesh's communicators are split by the index over the other dims.
#pragma once

#include <array>
#include <cstddef>
#include <iterator>
#include <vector>

namespace meshpp::detail {

inline constexpr unsigned all_dims = ~0u;

// linear_index(coords, sizes, mask = all_dims): the row-major index of coords over the dims
// in mask, of coords' type. coords and sizes: std::arrays or std::vectors of one length, as
// for set_coordinates below.
template <class Coords, class Sizes>
constexpr typename Coords::value_type linear_index(const Coords& coords, const Sizes& sizes,
                                                   unsigned mask = all_dims) {
  using I = typename Coords::value_type;
  I index = 0;
  for (std::size_t i = 0; i < std::size(coords); ++i) {
    if (mask & (1u << i)) index = index * static_cast<I>(sizes[i]) + coords[i];
  }
  return index;
}

// group_size(sizes, mask): the number of ranks in a group over the dims in mask (the product of
// their sizes): a mesh's sub-communicator sizes, known without one (mesh::planned, plans)
template <class Sizes>
constexpr typename Sizes::value_type group_size(const Sizes& sizes, unsigned mask) {
  typename Sizes::value_type p = 1;
  for (std::size_t i = 0; i < std::size(sizes); ++i) {
    if (mask & (1u << i)) p *= sizes[i];
  }
  return p;
}

// set_coordinates(index, sizes, coords, mask = all_dims): coords along the dims in mask set to
// those of row-major index `index` over them; the other coords kept. sizes and coords are
// std::arrays (a mesh's) or std::vectors of one length (a layout drawing's, io/draw.hpp, whose
// number of mesh dims is a run-time value): one loop, so the two cannot number ranks apart.
template <class I, class Sizes, class Coords>
constexpr void set_coordinates(I index, const Sizes& sizes, Coords& coords,
                               unsigned mask = all_dims) {
  for (std::size_t i = std::size(sizes); i-- > 0;) {
    if (mask & (1u << i)) {
      coords[i] = index % static_cast<I>(sizes[i]);
      index /= static_cast<I>(sizes[i]);
    }
  }
}

// coordinates_at(index, sizes): the coordinates of row-major index `index`
template <class I, class S, std::size_t N>
constexpr std::array<I, N> coordinates_at(I index, const std::array<S, N>& sizes) {
  std::array<I, N> coords{};
  set_coordinates(index, sizes, coords);
  return coords;
}
// coordinates_at(index, sizes): the same for sizes known at run time (at most 32 of them: the
// mask has one bit a dim)
template <class I, class S>
std::vector<I> coordinates_at(I index, const std::vector<S>& sizes) {
  std::vector<I> coords(sizes.size());
  set_coordinates(index, sizes, coords);
  return coords;
}

// row_major_strides<N>(shape): the strides of a row-major array of `shape`, in elements
template <std::size_t N, class Shape>
constexpr std::array<std::ptrdiff_t, N> row_major_strides(const Shape& shape) {
  std::array<std::ptrdiff_t, N> s{};
  std::ptrdiff_t at = 1;
  for (std::size_t i = N; i-- > 0;) {
    s[i] = at;
    at *= static_cast<std::ptrdiff_t>(shape[i]);
  }
  return s;
}

// element_count(shape): the product of the extents
template <std::size_t N>
constexpr std::size_t element_count(const std::array<std::size_t, N>& shape) {
  std::size_t n = 1;
  for (std::size_t e : shape) n *= e;
  return n;
}

}  // namespace meshpp::detail
