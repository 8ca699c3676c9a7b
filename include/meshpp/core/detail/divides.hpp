// meshpp/core/detail/divides.hpp — the one check that a mesh dim divides a split dim, and its
// one message.
//
//   split_not_divisible("batch", 6, "rows", 4)
//     -> "dim 'batch' of size 6 is split over mesh dim 'rows' of size 4, and 6 is not
//         divisible by 4"
//   split_not_divisible("batch", 8, "rows", 4) -> ""
//   stripe_begin(8, 4, 3)                       -> 6      (the stripe [6, 8) of rank 3 of 4)
//
// Splits are even, so every split dim's size must be a multiple of its mesh dim's size. Making
// a tensor, laying out an expression's frame and planning a reshape all check it; each puts
// its own name (and what it knows: the tensor, the reshape) around this message.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "meshpp/core/text.hpp"

namespace meshpp::detail {

// split_not_divisible(dim, size, mesh_dim, parts): "" when parts divides size, else why not
inline std::string split_not_divisible(std::string_view dim, std::size_t size,
                                       std::string_view mesh_dim, std::size_t parts) {
  std::string problem;
  if (size % parts != 0) {
    append(problem, "dim '", dim, "' of size ", size, " is split over mesh dim '", mesh_dim,
           "' of size ", parts, ", and ", size, " is not divisible by ", parts);
  }
  return problem;
}

// stripe_begin(size, parts, coordinate): the first index of the stripe that the rank at
// `coordinate` along the mesh dim holds of a dim of `size` split over `parts` ranks (parts
// divides size): stripes are even and in coordinate order. A tensor's offsets and a layout
// drawing's blocks (io/draw.hpp) both come from here.
constexpr std::size_t stripe_begin(std::size_t size, std::size_t parts, std::size_t coordinate) {
  return coordinate * (size / parts);
}

}  // namespace meshpp::detail
