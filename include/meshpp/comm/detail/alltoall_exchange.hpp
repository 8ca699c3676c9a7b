// meshpp/comm/detail/alltoall_exchange.hpp — alltoall_exchange<T>: one piece of an alltoall of
// blocks of their own sizes, where they lie (alltoall<over<...>>::run_in_pieces hands it to the
// caller's move, a relayout's boxes of the tensor).
#pragma once

#include <algorithm>
#include <cstddef>
#include <utility>
#include <vector>

#include <mpi.h>
#include <boost/mpi/communicator.hpp>

#include "meshpp/core/checked.hpp"

namespace meshpp::detail {

/// alltoall_exchange<T>: one piece of an alltoall among the members of `comm`: values to every
/// other member j, read at send + send_offsets[j], and values from every other member j, written
/// at recv + recv_offsets[j] (offsets in values), counts of their own per member (where a dim
/// splits unevenly they differ). This member's own entries are ignored: its block never leaves the
/// rank, and the caller copies it. One MPI_Alltoallv per piece, whose int counts and
/// displacements are measured from the lowest block; where the buffers' bound does not fit an
/// int (or mpi_count_limit is lowered below it), point-to-point messages (exchange_messages).
template <class T>
class alltoall_exchange {
 public:
  // alltoall_exchange(comm, bound): every offset plus its count stays below bound, a size every
  // member passes alike (it decides, the same way on every member, whether counts fit an int)
  alltoall_exchange(const boost::mpi::communicator& comm, std::size_t bound)
      : comm_(comm),
        bound_(bound),
        me_(static_cast<std::size_t>(comm.rank())),
        p_(static_cast<std::size_t>(comm.size())),
        send_counts_(p_),
        send_displs_(p_),
        recv_counts_(p_),
        recv_displs_(p_) {}

  // the members' communicator
  MPI_Comm communicator() const { return MPI_Comm(comm_); }

  // send_counts[j] values to member j, recv_counts[j] from member j (the offset of an empty
  // block is not used). Every member calls it, whatever its counts.
  void operator()(const T* send, const std::size_t* send_offsets, const std::size_t* send_counts,
                  T* recv, const std::size_t* recv_offsets, const std::size_t* recv_counts) {
    if (p_ == 1) return;
    std::size_t sent = 0;
    for (std::size_t j = 0; j < p_; ++j) sent += j == me_ ? 0 : send_counts[j];
    const call_site site{"alltoall", 0, {}, type_name<T>(), sent};
    const MPI_Datatype type = mpi_type<T>();
    if (bound_ > mpi_count_limit) {  // past an int: point-to-point messages
      exchange_messages(
          MPI_Comm(comm_), type, sizeof(T),
          [&](std::size_t j) {
            const T* at = send_counts[j] > 0 ? send + send_offsets[j] : send;
            return std::pair{static_cast<const void*>(at), send_counts[j]};
          },
          [&](std::size_t j) {
            T* at = recv_counts[j] > 0 ? recv + recv_offsets[j] : recv;
            return std::pair{static_cast<void*>(at), recv_counts[j]};
          },
          site);
      return;
    }
    const std::size_t send_low = lowest(send_offsets, send_counts);
    const std::size_t recv_low = lowest(recv_offsets, recv_counts);
    for (std::size_t j = 0; j < p_; ++j) {
      const bool sends = j != me_ && send_counts[j] > 0, receives = j != me_ && recv_counts[j] > 0;
      send_counts_[j] = sends ? as_count(send_counts[j]) : 0;
      recv_counts_[j] = receives ? as_count(recv_counts[j]) : 0;
      send_displs_[j] = sends ? as_count(send_offsets[j] - send_low) : 0;
      recv_displs_[j] = receives ? as_count(recv_offsets[j] - recv_low) : 0;
    }
    checked(MPI_Alltoallv(send + send_low, send_counts_.data(), send_displs_.data(), type,
                          recv + recv_low, recv_counts_.data(), recv_displs_.data(), type,
                          MPI_Comm(comm_)),
            "MPI_Alltoallv", site);
  }

 private:
  // lowest(offsets, counts): where the first of the other members' nonempty blocks starts (0
  // if all are empty)
  std::size_t lowest(const std::size_t* offsets, const std::size_t* counts) const {
    std::size_t low = SIZE_MAX;
    for (std::size_t j = 0; j < p_; ++j) {
      if (j != me_ && counts[j] > 0) low = std::min(low, offsets[j]);
    }
    return low == SIZE_MAX ? 0 : low;
  }

  const boost::mpi::communicator& comm_;
  std::size_t bound_, me_, p_;
  std::vector<int> send_counts_, send_displs_, recv_counts_, recv_displs_;
};

}  // namespace meshpp::detail
