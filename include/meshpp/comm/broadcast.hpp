// meshpp/comm/broadcast.hpp — broadcast<over<Ms...>>: member root's buffer on every member of
// the group over mesh dims Ms.
//
//   broadcast<over<rows>>::run(mesh, span, root)           root: a rank of the group
//
// Counted as the buffer's values, and its bytes on the root alone.
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
MESHPP_KERNEL void broadcast_over(const mesh_base& m, unsigned mask, std::span<T> data, int root);
}  // namespace detail

template <class Over>
struct broadcast;
// [x] on member root |-> [x] on every member
template <class... Ms>
struct broadcast<over<Ms...>> {
  template <class Mesh, class T>
  static void run(const Mesh& m, std::span<T> data, int root) {
    detail::broadcast_over(m, Mesh::template mask_v<Ms...>, data, root);
  }
};

namespace detail {
// broadcast_over(m, mask, data, root): broadcast<over<...>>::run over the mesh dims in mask
template <class T>
MESHPP_KERNEL void broadcast_over(const mesh_base& m, unsigned mask, std::span<T> data, int root) {
  const int p = m.group_size(mask);
  if (root < 0 || root >= p) {
    throw error("meshpp::broadcast: root " + std::to_string(root) + " is not a member of the " +
                "group of " + std::to_string(p));
  }
  m.counters().record(collective::broadcast, mask, data.size(),
                      m.group_rank(mask) == root && p > 1 ? bytes<T>(data.size()) : 0);
  if (p == 1 || m.planning()) return;
  broadcast_in_place(MPI_Comm(m.communicator(mask)), data.data(), data.size(), root,
                     collective_site<T>(m, "broadcast", mask, data.size()));
}
#ifdef MESHPP_KERNEL_INSTANCE
MESHPP_KERNEL_INSTANCE void broadcast_over<float>(const mesh_base&, unsigned, std::span<float>,
                                                  int);
MESHPP_KERNEL_INSTANCE void broadcast_over<double>(const mesh_base&, unsigned, std::span<double>,
                                                   int);
#endif
}  // namespace detail

}  // namespace meshpp
