// meshpp/ops/scatter_gather.hpp — between whole (global) xtensor arrays and distributed tensors.
//
//   auto t = scatter<batch, io>(mesh, sizes, global);  // each rank keeps its slice of `global`
//   xt::xtensor<float, 2> all = gather(t);             // every rank gets the whole tensor
//   auto on_root = gather(t, 0);                       // rank 0 gets it; others an empty array
//
// scatter:  [global array, replicated] |-> [layout slices]   local slicing, no data moved
// gather:   [layout slices] |-> [whole array on every rank]  allgather over the split mesh dims
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstring>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include <mpi.h>
#include <boost/mpi/datatype.hpp>
#include <xtensor/xtensor.hpp>

#include "meshpp/comm/collectives.hpp"
#include "meshpp/core/agree.hpp"
#include "meshpp/core/blocks.hpp"
#include "meshpp/core/dim.hpp"
#include "meshpp/core/divides.hpp"
#include "meshpp/core/error.hpp"
#include "meshpp/core/extents.hpp"
#include "meshpp/core/row_major.hpp"
#include "meshpp/core/tensor.hpp"
#include "meshpp/core/text.hpp"

namespace meshpp {

namespace detail {
template <std::size_t N>
std::string shape_text(const std::array<std::size_t, N>& s) {
  std::string out = "[";
  for (std::size_t i = 0; i < N; ++i) detail::append(out, i ? ", " : "", s[i]);
  return out + "]";
}
// mesh_and_dims<Mesh, Dims...>: scatter<Dims...>(mesh, ...)'s arguments, a mesh and dims (so
// that scatter<Tensor>(m, ...) with m of another mesh type is no call of that form)
template <class Mesh, class... Dims>
concept mesh_and_dims = is_mesh_v<Mesh> &&(dim_name<Dims>&&...);
}  // namespace detail

// scatter<Tensor>(mesh, sizes, global): each rank keeps its slice of `global`, an xtensor
// expression every rank holds whole. Throws meshpp::error on every rank if `global`'s shape
// differs from the sizes on any rank (one small allreduce agrees on that; no data moves).
template <class Tensor, class Global, class... E>
requires is_tensor_v<Tensor> Tensor scatter(const typename Tensor::mesh_type& m,
                                            const extents<E...>& sizes, const Global& global) {
  using T = typename Tensor::value_type;
  constexpr std::size_t n = Tensor::rank;
  Tensor t(m, sizes, Tensor::uninitialized);
  std::string problem;
  if (global.dimension() != n) {
    problem = "meshpp::scatter: the global array on rank " + std::to_string(m.rank()) + " has " +
              std::to_string(global.dimension()) + " dims; the tensor " +
              to_string(typename Tensor::shape_type{}) + " has " + std::to_string(n);
  } else {
    typename Tensor::index_type got{};
    std::copy_n(global.shape().begin(), n, got.begin());
    if (got != t.global_shape()) {
      problem = "meshpp::scatter: the global array on rank " + std::to_string(m.rank()) +
                " has shape " + detail::shape_text(got) + ", but the extents give " +
                to_string(t.sizes());
    }
  }
  agree_or_throw(m, problem);
  const xt::xtensor<T, n> whole = global;  // evaluates expressions; contiguous row-major
  detail::copy_box(whole.data(), t.global_shape(), t.local_offsets(), t.local().data(),
                   t.local_shape(), {}, t.local_shape());
  return t;
}
// scatter<Dims...>(mesh, sizes, global): laid out by the mesh's rules; T from `global`
template <class... Dims, class Mesh, class Global, class... E>
requires detail::mesh_and_dims<Mesh, Dims...>
auto scatter(const Mesh& m, const extents<E...>& sizes, const Global& global) {
  using T = std::decay_t<typename Global::value_type>;
  return scatter<tensor_of<T, shape<Dims...>, Mesh>>(m, sizes, global);
}

// gather(t): the whole tensor on every rank, in the tensor's dim order.
// Collective over the mesh: allgather of the slices over the mesh dims the tensor is split
// over (ranks that differ in other mesh dims hold the same slices and gather in parallel).
template <class Tensor>
requires is_tensor_v<Tensor> xt::xtensor<typename Tensor::value_type, Tensor::rank> gather(
    const Tensor& t) {
  using T = typename Tensor::value_type;
  using split_dims = split_mesh_dims_t<typename Tensor::layout_type, typename Tensor::shape_type>;
  if constexpr (split_dims::rank == 0) {
    return t.local();  // held whole here: the slice is the tensor
  } else {
    const auto& m = t.mesh();
    xt::xtensor<T, Tensor::rank> whole(t.global_shape());
    const auto members = static_cast<std::size_t>(m.group_size(Tensor::split_mask()));
    const std::size_t count = t.local().size();
    // Member j of the group sits at this rank's coordinates with those along the split mesh
    // dims replaced by j's row-major digits; its slice is as large as its stripes (they differ
    // where a dim is split unevenly)
    constexpr unsigned mask = Tensor::split_mask();
    std::vector<typename Tensor::index_type> at(members), box(members);
    std::vector<std::size_t> counts(members);
    for (std::size_t j = 0; j < members; ++j) {
      auto coords = m.coordinates();
      detail::set_coordinates(static_cast<int>(j), m.sizes(), coords, mask);
      std::tie(at[j], box[j]) = t.block_at(coords);
      counts[j] = detail::element_count(box[j]);
    }
    // xt::uvector, not std::vector: std::vector<bool> has no data() (bool tensors come from
    // comparisons)
    xt::uvector<T> blocks(detail::block_offsets(counts).back());
    allgather<over_t<split_dims>>::run_blocks(m, std::span<const T>(t.local().data(), count),
                                              std::span<T>(blocks.data(), blocks.size()),
                                              std::span<const std::size_t>(counts));
    if (m.planning()) return whole;  // counted; nothing to copy
    for (std::size_t j = 0, pos = 0; j < members; pos += counts[j], ++j) {
      detail::copy_box(blocks.data() + pos, box[j], {}, whole.data(), t.global_shape(), at[j],
                       box[j]);
    }
    return whole;
  }
}

// gather(t, root): the whole tensor on rank `root` of the mesh; an empty array elsewhere.
// Counted as `gather` over all mesh dims (values: what this rank contributes).
// Collective over the mesh: a gatherv from the ranks whose slices together make up the
// tensor (those that share root's coordinates along the mesh dims the tensor is not split
// over). Throws meshpp::error on every rank if root is not a rank of the mesh.
template <class Tensor>
requires is_tensor_v<Tensor> xt::xtensor<typename Tensor::value_type, Tensor::rank> gather(
    const Tensor& t, int root) {
  using T = typename Tensor::value_type;
  const auto& m = t.mesh();
  if (root < 0 || root >= m.size()) {
    throw error("meshpp::gather(t, root): root " + std::to_string(root) +
                " is not a rank of the mesh (it has " + std::to_string(m.size()) + ")");
  }
  constexpr unsigned mask = Tensor::split_mask();
  const auto root_coords = m.coordinates_of(root);
  auto contributes = [&](int r) {
    const auto c = m.coordinates_of(r);
    for (std::size_t i = 0; i < Tensor::mesh_type::ndims; ++i) {
      if (!(mask & (1u << i)) && c[i] != root_coords[i]) return false;
    }
    return true;
  };
  const std::size_t count = t.local().size();
  const bool is_root = m.rank() == root;
  const auto ranks = static_cast<std::size_t>(m.size());
  // each contributing rank's slice (its size differs where a dim is split unevenly), and where
  // its block starts in `blocks`
  std::vector<std::pair<typename Tensor::index_type, typename Tensor::index_type>> slices(ranks);
  std::vector<std::size_t> sizes(ranks, 0), displs(ranks);
  std::size_t contributors = 0, total = 0, largest = 0;
  for (std::size_t r = 0; r < ranks; ++r) {
    displs[r] = total;
    if (!contributes(static_cast<int>(r))) continue;
    slices[r] = t.block_at(m.coordinates_of(static_cast<int>(r)));
    sizes[r] = detail::element_count(slices[r].second);
    total += sizes[r];
    largest = std::max(largest, sizes[r]);
    ++contributors;
  }
  xt::uvector<T> blocks;  // not std::vector: see gather(t)
  if (is_root) blocks.resize(total);
  const std::size_t mine = contributes(m.rank()) ? count : 0;
  m.counters().record(collective::gather, (1u << Tensor::mesh_type::ndims) - 1, mine,
                      m.rank() == root ? 0 : mine * sizeof(T));
  if (m.planning()) return xt::xtensor<T, Tensor::rank>{};  // counted only
  const detail::call_site site{"gather", (1u << Tensor::mesh_type::ndims) - 1,
                               detail::mesh_names<typename Tensor::mesh_type>,
                               detail::type_name<T>(), count};
  detail::before_collective(MPI_Comm(m.world()), site);
  // In pieces [from, from + piece) of every block at once (a block shorter than from + piece
  // gives what it has left), so that the counts and displacements of one MPI_Gatherv fit MPI's
  // int: one piece (straight into `blocks`) unless the whole exceeds mpi_count_limit. Every
  // rank computes the same pieces from the same sizes.
  const std::size_t piece = total <= detail::mpi_count_limit
                                ? largest
                                : std::max<std::size_t>(1, detail::mpi_count_limit / contributors);
  const bool staged = piece < largest;
  xt::uvector<T> stage(is_root && staged ? contributors * piece : 0);
  std::vector<int> counts(is_root ? ranks : 0), at(is_root ? ranks : 0);
  auto part = [&](std::size_t r, std::size_t from) {  // rank r's values in this piece
    return sizes[r] > from ? std::min(piece, sizes[r] - from) : 0;
  };
  std::size_t from = 0;
  do {  // (once, with nothing, when the blocks are empty: every rank still takes part)
    if (is_root) {
      for (std::size_t r = 0, k = 0; r < ranks; ++r) {
        counts[r] = detail::as_count(part(r, from));
        at[r] = detail::as_int(staged ? k * piece : displs[r]);  // an offset, not a count
        k += sizes[r] > 0 ? 1 : 0;
      }
    }
    const std::size_t c = mine ? part(static_cast<std::size_t>(m.rank()), from) : 0;
    detail::checked(
        MPI_Gatherv(t.local().data() + (c ? from : 0), detail::as_count(c), detail::mpi_type<T>(),
                    staged ? stage.data() : blocks.data(), counts.data(), at.data(),
                    detail::mpi_type<T>(), root, MPI_Comm(m.world())),
        "MPI_Gatherv", site);
    if (is_root && staged) {
      for (std::size_t r = 0, k = 0; r < ranks; ++r) {
        if (sizes[r] == 0) continue;
        std::copy_n(stage.data() + k * piece, part(r, from), blocks.data() + displs[r] + from);
        ++k;
      }
    }
    from += piece;
  } while (from < largest);
  if (!is_root) return xt::xtensor<T, Tensor::rank>{};
  xt::xtensor<T, Tensor::rank> whole(t.global_shape());
  for (std::size_t r = 0; r < ranks; ++r) {
    if (sizes[r] == 0) continue;
    detail::copy_box(blocks.data() + displs[r], slices[r].second, {}, whole.data(),
                     t.global_shape(), slices[r].first, slices[r].second);
  }
  return whole;
}

}  // namespace meshpp
