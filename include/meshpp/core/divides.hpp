// meshpp/core/divides.hpp — where each rank's stripe of a split dim lies, and the one
// check (with its one message) that a mesh dim divides a split dim.
//
//   split_not_divisible("batch", 6, "rows", 4)
//     -> "dim 'batch' of size 6 is split over mesh dim 'rows' of size 4, and 6 is not
//         divisible by 4"
//   split_not_divisible("batch", 8, "rows", 4) -> ""
//   stripe_begin(8, 4, 3), stripe_size(8, 4, 3) -> 6, 2   (the stripe [6, 8) of rank 3 of 4)
//   shard_counts(40, 2) -> {32, 8}   (the shares of a sharded optimizer update: stripes of the
//                                     chunks of 16 values, the first the longest)
//
// Splits may be uneven (stripe_begin and stripe_size below); the operations that truly need an
// even split (a reshape that merges a split dim with the dims after it) check it with this
// message, each putting its own name (and what it knows) around it.
#pragma once

#include <algorithm>
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

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

// Splits are near-equal blocks in coordinate order, the last ones shorter: of a dim of `size`
// split over `parts` ranks, the first size % parts coordinates hold size / parts + 1 indices
// and the others size / parts (none, where size < parts). An even split is the special case
// size % parts == 0. A tensor's offsets and local extents, an expression's frame, the
// relayouts' blocks and a layout drawing's blocks all come from these two functions.
//
//   stripe_begin(7, 4, 3) -> 5    stripe_size(7, 4, 3) -> 1    (blocks 2, 2, 2, 1)
//   stripe_begin(1, 4, 2) -> 1    stripe_size(1, 4, 2) -> 0    (blocks 1, 0, 0, 0)

// stripe_begin(size, parts, coordinate): the first index of the stripe the rank at
// `coordinate` along the mesh dim holds
constexpr std::size_t stripe_begin(std::size_t size, std::size_t parts, std::size_t coordinate) {
  const std::size_t longer = size % parts;
  return coordinate * (size / parts) + (coordinate < longer ? coordinate : longer);
}

// stripe_size(size, parts, coordinate): the length of that stripe
constexpr std::size_t stripe_size(std::size_t size, std::size_t parts, std::size_t coordinate) {
  return size / parts + (coordinate < size % parts ? 1 : 0);
}

// shard_counts(n, p): n elements in p shares of whole chunks of 16 (cache lines of float):
// share j is stripe j of the ceil(n / 16) chunks, the last share ending at n. The shares of a
// sharded optimizer update (optim/optimizer.hpp); share 0, the longest, is rank 0's, the one
// the layout enumeration prices (plan/enumerate.hpp).
//   shard_counts(40, 2) -> {32, 8}    shard_counts(10, 2) -> {10, 0}
inline std::vector<std::size_t> shard_counts(std::size_t n, std::size_t p) {
  constexpr std::size_t chunk = 16;
  const std::size_t chunks = (n + chunk - 1) / chunk;
  std::vector<std::size_t> counts(p);
  for (std::size_t j = 0; j < p; ++j) {
    const std::size_t begin = std::min(n, chunk * stripe_begin(chunks, p, j));
    counts[j] = std::min(n, begin + chunk * stripe_size(chunks, p, j)) - begin;
  }
  return counts;
}

// shard_of(n, p, j): where share j of shard_counts(n, p) lies: {begin, end} in [0, n). What the
// optimizer's sharded update and a gradient reduce-scattered into its shares both use, so that
// the two agree.
struct shard_range {
  std::size_t begin = 0, end = 0;
};
inline shard_range shard_of(std::size_t n, std::size_t p, std::size_t j) {
  const auto counts = shard_counts(n, p);
  shard_range r;
  for (std::size_t i = 0; i < j; ++i) r.begin += counts[i];
  r.end = r.begin + counts[j];
  return r;
}

}  // namespace meshpp::detail
