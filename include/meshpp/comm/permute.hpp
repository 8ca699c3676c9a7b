// meshpp/comm/permute.hpp — collective permute: variable-size blocks between the members of
// a group of mesh dims, most of them empty (neighbour exchanges, shifted ranges).
//
//   permute<over<rows>>::run(mesh, send, send_counts, recv, recv_counts)
//
// [to_0 | to_1 | ... | to_{p-1}] |-> [from_0 | from_1 | ... | from_{p-1}]
//
// send holds the blocks for members 0..p-1 back to back (send_counts[j] values for member j);
// recv receives member j's block for this rank at the same place (recv_counts[j] values). One
// exchange of point-to-point messages on the mesh's cached sub-communicator (what
// MPI_Alltoallv does, without its int counts and displacements; a block over INT_MAX values
// goes as several messages). Counted as `permute`: values are what
// this rank sends to other members, bytes the same in bytes (what it keeps is not counted).
#pragma once

#include <algorithm>
#include <cstddef>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include <mpi.h>
#include <boost/mpi/datatype.hpp>

#include "meshpp/comm/collectives.hpp"
#include "meshpp/core/config.hpp"
#include "meshpp/core/counters.hpp"
#include "meshpp/core/error.hpp"

namespace meshpp {

namespace detail {
// permute_over(m, mask, send, send_counts, recv, recv_counts): permute<over<...>>::run over the
// mesh dims in mask
template <class T>
MESHPP_KERNEL void permute_over(const mesh_base& m, unsigned mask, std::span<const T> send,
                                std::span<const std::size_t> send_counts, std::span<T> recv,
                                std::span<const std::size_t> recv_counts) {
  const auto p = static_cast<std::size_t>(m.group_size(mask));
  const auto me = static_cast<std::size_t>(m.group_rank(mask));
  if (send_counts.size() != p || recv_counts.size() != p) {
    throw error("meshpp::permute: one send and one receive count per member of the group of " +
                std::to_string(p) + " expected");
  }
  std::vector<std::size_t> send_at(p), recv_at(p);
  std::size_t s = 0, r = 0;
  std::size_t sent_to_others = 0;
  for (std::size_t j = 0; j < p; ++j) {
    send_at[j] = s;
    recv_at[j] = r;
    s += send_counts[j];
    r += recv_counts[j];
    if (j != me) sent_to_others += send_counts[j];
  }
  if (s > send.size() || r > recv.size()) {
    throw error("meshpp::permute: the counts add up to more than the buffers hold");
  }
  m.counters().record(collective::permute, mask, sent_to_others, detail::bytes<T>(sent_to_others));
  if (m.planning()) return;
  const auto& comm = m.communicator(mask);
  if (p == 1) {
    std::copy(send.begin(), send.begin() + static_cast<std::ptrdiff_t>(s), recv.begin());
    return;
  }
  auto site = detail::collective_site<T>(m, "permute", mask, sent_to_others);
  site.count_agrees = false;
  detail::before_collective(MPI_Comm(comm), site);
  const MPI_Datatype type = detail::mpi_type<T>();
  // Point-to-point, not MPI_Alltoallv: each member knows only its own counts, so the choice
  // between a call with int counts and messages in pieces could differ between members; the
  // messages take any count, and pairs that exchange nothing post nothing
  detail::exchange_messages(
      MPI_Comm(comm), type, sizeof(T),
      [&](std::size_t j) {
        return std::pair{static_cast<const void*>(send.data() + send_at[j]), send_counts[j]};
      },
      [&](std::size_t j) {
        return std::pair{static_cast<void*>(recv.data() + recv_at[j]), recv_counts[j]};
      },
      site);
  std::copy_n(send.data() + send_at[me], std::min(send_counts[me], recv_counts[me]),
              recv.data() + recv_at[me]);
}
#ifdef MESHPP_KERNEL_INSTANCE
MESHPP_KERNEL_INSTANCE void permute_over<float>(const mesh_base&, unsigned, std::span<const float>,
                                                std::span<const std::size_t>, std::span<float>,
                                                std::span<const std::size_t>);
MESHPP_KERNEL_INSTANCE void permute_over<double>(const mesh_base&, unsigned,
                                                 std::span<const double>,
                                                 std::span<const std::size_t>, std::span<double>,
                                                 std::span<const std::size_t>);
#endif
}  // namespace detail

template <class Over>
struct permute;
template <class... Ms>
struct permute<over<Ms...>> {
  template <class Mesh, class T>
  static void run(const Mesh& m, std::span<const T> send, std::span<const std::size_t> send_counts,
                  std::span<T> recv, std::span<const std::size_t> recv_counts) {
    detail::permute_over(m, Mesh::template mask_v<Ms...>, send, send_counts, recv, recv_counts);
  }
};

}  // namespace meshpp
