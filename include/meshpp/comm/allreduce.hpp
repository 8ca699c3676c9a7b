// meshpp/comm/allreduce.hpp — allreduce<over<Ms...>, Op>: every member of the group over mesh
// dims Ms ends with the element-wise Op of all members' buffers, in place.
//
//   allreduce<over<rows>>::run(mesh, span)                 in place, sum
//   allreduce<over<rows, cols>, op::max>::run(mesh, span)
//
// An allreduce over no mesh dims at all is no collective and is neither run nor counted. Counts
// past MPI's int run as several calls (core/detail/large_counts.hpp).
#pragma once

#include <algorithm>
#include <cstddef>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include <mpi.h>

#include "meshpp/comm/detail/collective.hpp"
#include "meshpp/comm/over.hpp"
#include "meshpp/core/checked.hpp"
#include "meshpp/core/config.hpp"
#include "meshpp/core/counters.hpp"
#include "meshpp/core/error.hpp"
#include "meshpp/core/mesh.hpp"

namespace meshpp {

namespace detail {
template <class T>
MESHPP_KERNEL void allreduce_over(const mesh_base& m, unsigned mask, std::span<T> data, MPI_Op op);
}  // namespace detail

template <class Over, class Op = op::sum>
struct allreduce;
// [x] |-> [x]   every member ends with the element-wise Op of all members' buffers
template <class... Ms, class Op>
struct allreduce<over<Ms...>, Op> {
  template <class Mesh, class T>
  static void run(const Mesh& m, std::span<T> data) {
    if constexpr (sizeof...(Ms) == 0) return;  // over no mesh dims: nothing to combine
    detail::allreduce_over(m, Mesh::template mask_v<Ms...>, data, Op::mpi());
  }
};

namespace detail {
// allreduce_over(m, mask, data, op): the allreduce of this rank's group over the mesh dims in
// the bit set mask, counted (on a planned mesh: counted only); what allreduce<over<...>, Op> and
// allreduce_sum run
template <class T>
MESHPP_KERNEL void allreduce_over(const mesh_base& m, unsigned mask, std::span<T> data, MPI_Op op) {
  const std::size_t p = static_cast<std::size_t>(m.group_size(mask));
  m.counters().record(collective::allreduce, mask, data.size(),
                      2 * (p - 1) * bytes<T>(data.size()) / p);
  if (p == 1 || data.empty() || m.planning()) return;
  allreduce_in_place(MPI_Comm(m.communicator(mask)), data.data(), data.size(), op,
                     collective_site<T>(m, "allreduce", mask, data.size()));
}
#ifdef MESHPP_KERNEL_INSTANCE
MESHPP_KERNEL_INSTANCE void allreduce_over<float>(const mesh_base&, unsigned, std::span<float>,
                                                  MPI_Op);
MESHPP_KERNEL_INSTANCE void allreduce_over<double>(const mesh_base&, unsigned, std::span<double>,
                                                   MPI_Op);
#endif

// allreduce_sum(m, mask, data): allreduce<over<...>, op::sum>::run(m, data) over the mesh dims
// in the bit set mask, known at run time (a gradient's pending partial sums); none: nothing
template <class T>
void allreduce_sum(const mesh_base& m, unsigned mask, std::span<T> data) {
  if (mask != 0) allreduce_over(m, mask, data, MPI_SUM);
}
}  // namespace detail

}  // namespace meshpp
