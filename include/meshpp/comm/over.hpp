// meshpp/comm/over.hpp — over<MeshDims...>, the set of mesh dims a collective runs over, and
// the reduction operators op::sum, op::max, op::min: the policy arguments of every collective.
//
//   allreduce<over<rows, cols>, op::max>::run(mesh, span)
//
// over<Ms...> resolves at compile time to the mesh's cached sub-communicator of the ranks that
// differ only in Ms (core/mesh.hpp).
#pragma once

#include <mpi.h>

#include "meshpp/core/shape.hpp"

namespace meshpp {

/// @brief The set of mesh dims a collective runs over.
template <class... MeshDims>
struct over {
  static_assert(offending::duplicate_dim<detail::first_duplicate_t<MeshDims...>>,
                "meshpp::over<MeshDims...>: a mesh dim appears twice");
};

namespace detail {
template <class S>
struct over_of;
}  // namespace detail

// over_t<shape<Ms...>>: over<Ms...>
template <class S>
using over_t = typename detail::over_of<S>::type;

/// Reduction operators of allreduce and reduce_scatter.
namespace op {
struct sum {
  static MPI_Op mpi() { return MPI_SUM; }
};
struct max {
  static MPI_Op mpi() { return MPI_MAX; }
};
struct min {
  static MPI_Op mpi() { return MPI_MIN; }
};
}  // namespace op

namespace detail {
template <class... Ms>
struct over_of<shape<Ms...>> {
  using type = over<Ms...>;
};

// mesh_mask_v<Mesh, shape<Ms...>>: the bit set of mesh dims Ms (as the mesh numbers them)
template <class Mesh, class S>
inline constexpr unsigned mesh_mask_v = 0;
template <class Mesh, class... Ms>
inline constexpr unsigned mesh_mask_v<Mesh, shape<Ms...>> = Mesh::template mask_v<Ms...>;
}  // namespace detail

}  // namespace meshpp
