// meshpp/comm/permute.hpp — collective permute: variable-size blocks between the members of
// a group of mesh dims, most of them empty (neighbour exchanges, shifted ranges).
//
//   permute<over<rows>>::run(mesh, send, send_counts, recv, recv_counts)
//
// [to_0 | to_1 | ... | to_{p-1}] |-> [from_0 | from_1 | ... | from_{p-1}]
//
// send holds the blocks for members 0..p-1 back to back (send_counts[j] values for member j);
// recv receives member j's block for this rank at the same place (recv_counts[j] values). One
// MPI_Alltoallv on the mesh's cached sub-communicator. Counted as `permute`: values are what
// this rank sends to other members, bytes the same in bytes (what it keeps is not counted).
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <vector>

#include <mpi.h>
#include <boost/mpi/datatype.hpp>

#include "meshpp/comm/collectives.hpp"
#include "meshpp/comm/counters.hpp"
#include "meshpp/core/error.hpp"

namespace meshpp {

template <class Over>
struct permute;
template <class... Ms>
struct permute<over<Ms...>> {
  template <class Mesh, class T>
  static void run(const Mesh& m, std::span<const T> send, std::span<const int> send_counts,
                  std::span<T> recv, std::span<const int> recv_counts) {
    using g = detail::group_of<Mesh, Ms...>;
    const auto& comm = g::comm(m);
    const int p = comm.size();
    if (static_cast<int>(send_counts.size()) != p || static_cast<int>(recv_counts.size()) != p) {
      throw error("meshpp::permute: one send and one receive count per member of the group of " +
                  std::to_string(p) + " expected");
    }
    std::vector<int> send_at(p), recv_at(p);
    int s = 0, r = 0;
    std::size_t sent_to_others = 0;
    for (int j = 0; j < p; ++j) {
      send_at[j] = s;
      recv_at[j] = r;
      s += send_counts[j];
      r += recv_counts[j];
      if (j != comm.rank()) sent_to_others += static_cast<std::size_t>(send_counts[j]);
    }
    if (static_cast<std::size_t>(s) > send.size() || static_cast<std::size_t>(r) > recv.size()) {
      throw error("meshpp::permute: the counts add up to more than the buffers hold");
    }
    m.counters().record(collective::permute, g::mask, sent_to_others,
                        detail::bytes<T>(sent_to_others));
    if (p == 1) {
      std::copy(send.begin(), send.begin() + s, recv.begin());
      return;
    }
    const auto type = boost::mpi::get_mpi_datatype<T>();
    MPI_Alltoallv(send.data(), send_counts.data(), send_at.data(), type, recv.data(),
                  recv_counts.data(), recv_at.data(), type, comm);
  }
};

}  // namespace meshpp
