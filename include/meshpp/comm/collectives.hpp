// meshpp/comm/collectives.hpp — collectives as policy templates over sets of mesh dims.
//
//   allreduce<over<rows>>::run(mesh, span)                 in place, sum
//   allreduce<over<rows, cols>, op::max>::run(mesh, span)
//   allgather<over<cols>>::run(mesh, in, out)              out: blocks in mesh-coordinate order
//   alltoall<over<cols>>::run(mesh, in, out)
//   alltoall<over<cols>>::run_in_pieces(mesh, values, move)  blocks wherever the caller keeps them
//   reduce_scatter<over<rows>>::run(mesh, in, out)         sum; block j to group member j
//   broadcast<over<rows>>::run(mesh, span, root)           root: a rank of the group
//
// `over<Ms...>` names the mesh dims the collective runs over; it resolves at compile time to
// the mesh's cached sub-communicator of the ranks that differ only in Ms (mesh.hpp). Each
// call is recorded in the mesh's counters, even over mesh dims of size 1 (the values are part
// of the operation's semantics, as in the paper's Table 1); an allreduce over no mesh dims at
// all is no collective and is neither run nor counted. Boost.MPI is used where it has the
// collective (all_reduce, all_gather, all_to_all, broadcast); MPI_Reduce_scatter_block and
// MPI_Alltoallv go through the communicator's MPI_Comm, their return codes checked (Boost.MPI's
// environment makes MPI return errors rather than abort). Buffers are passed to MPI as they
// are: no staging copies.
#pragma once

#include <algorithm>
#include <climits>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include <mpi.h>
#include <boost/mpi/collectives/all_gather.hpp>
#include <boost/mpi/collectives/all_reduce.hpp>
#include <boost/mpi/collectives/all_to_all.hpp>
#include <boost/mpi/collectives/broadcast.hpp>
#include <boost/mpi/communicator.hpp>
#include <boost/mpi/datatype.hpp>
#include <boost/mpi/inplace.hpp>
#include <boost/mpi/operations.hpp>

#include "meshpp/comm/counters.hpp"
#include "meshpp/core/error.hpp"
#include "meshpp/core/shape.hpp"

namespace meshpp {

/// @brief The set of mesh dims a collective runs over.
template <class... MeshDims>
struct over {
  static_assert(offending::duplicate_dim<detail::first_duplicate_t<MeshDims...>>,
                "meshpp::over<MeshDims...>: a mesh dim appears twice");
};

// over_t<shape<Ms...>>: over<Ms...>
namespace detail {
template <class S>
struct over_of;
template <class... Ms>
struct over_of<shape<Ms...>> {
  using type = over<Ms...>;
};
}  // namespace detail
template <class S>
using over_t = typename detail::over_of<S>::type;

namespace detail {
// mesh_mask_v<Mesh, shape<Ms...>>: the bit set of mesh dims Ms (as the mesh numbers them)
template <class Mesh, class S>
inline constexpr unsigned mesh_mask_v = 0;
template <class Mesh, class... Ms>
inline constexpr unsigned mesh_mask_v<Mesh, shape<Ms...>> = Mesh::template mask_v<Ms...>;
}  // namespace detail

/// Reduction operators of allreduce and reduce_scatter.
namespace op {
struct sum {
  template <class T>
  using boost_op = std::plus<T>;
  static MPI_Op mpi() { return MPI_SUM; }
};
struct max {
  template <class T>
  using boost_op = boost::mpi::maximum<T>;
  static MPI_Op mpi() { return MPI_MAX; }
};
struct min {
  template <class T>
  using boost_op = boost::mpi::minimum<T>;
  static MPI_Op mpi() { return MPI_MIN; }
};
}  // namespace op

namespace detail {
template <class Mesh, class... Ms>
struct group_of {
  static constexpr unsigned mask = Mesh::template mask_v<Ms...>;
  static const boost::mpi::communicator& comm(const Mesh& m) {
    return m.template communicator<Ms...>();
  }
};
template <class T>
std::uint64_t bytes(std::size_t n) {
  return static_cast<std::uint64_t>(n) * sizeof(T);
}

// check_mpi(code, call): throws meshpp::error naming the MPI call unless it succeeded. Unlike
// meshpp's checks of sizes, such a failure need not happen on every rank alike.
inline void check_mpi(int code, const char* call) {
  if (code == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  if (MPI_Error_string(code, text, &length) != MPI_SUCCESS) length = 0;
  throw error(std::string("meshpp: ") + call + " failed: " +
              (length > 0 ? std::string(text, static_cast<std::size_t>(length))
                          : "error code " + std::to_string(code)));
}

/// alltoall_exchange<T>: one piece of an alltoall among the members of `comm`: n values to every
/// other member j, read at send + send_offsets[j], and n values from every other member j, written
/// at recv + recv_offsets[j] (offsets in values). This member's own entries are ignored: its block
/// never leaves the rank, and the caller copies it. One MPI_Alltoallv per piece, whose int counts
/// and displacements are measured from the lowest block, so only the span of one piece's blocks
/// must fit in an int, not the offsets into the whole buffer.
template <class T>
class alltoall_exchange {
 public:
  explicit alltoall_exchange(const boost::mpi::communicator& comm)
      : comm_(comm),
        me_(static_cast<std::size_t>(comm.rank())),
        p_(static_cast<std::size_t>(comm.size())),
        send_counts_(p_),
        send_displs_(p_),
        recv_counts_(p_),
        recv_displs_(p_) {}

  void operator()(const T* send, const std::size_t* send_offsets, T* recv,
                  const std::size_t* recv_offsets, std::size_t n) {
    if (p_ == 1 || n == 0) return;
    const std::size_t send_low = lowest(send_offsets), recv_low = lowest(recv_offsets);
    for (std::size_t j = 0; j < p_; ++j) {
      const bool other = j != me_;
      send_counts_[j] = recv_counts_[j] = other ? to_int(n) : 0;
      send_displs_[j] = other ? to_int(send_offsets[j] - send_low) : 0;
      recv_displs_[j] = other ? to_int(recv_offsets[j] - recv_low) : 0;
    }
    const MPI_Datatype type = boost::mpi::get_mpi_datatype<T>();
    check_mpi(MPI_Alltoallv(send + send_low, send_counts_.data(), send_displs_.data(), type,
                            recv + recv_low, recv_counts_.data(), recv_displs_.data(), type,
                            MPI_Comm(comm_)),
              "MPI_Alltoallv");
  }

 private:
  std::size_t lowest(const std::size_t* offsets) const {
    std::size_t low = SIZE_MAX;
    for (std::size_t j = 0; j < p_; ++j) {
      if (j != me_) low = std::min(low, offsets[j]);
    }
    return low;
  }
  // The offsets and counts are the same on every member (they follow from shapes every rank
  // has), so every member throws here together, before MPI is called.
  static int to_int(std::size_t n) {
    if (n > static_cast<std::size_t>(INT_MAX)) {
      throw error("meshpp::alltoall: a piece spans " + std::to_string(n) +
                  " values, more than MPI's int counts and displacements can address");
    }
    return static_cast<int>(n);
  }

  const boost::mpi::communicator& comm_;
  std::size_t me_, p_;
  std::vector<int> send_counts_, send_displs_, recv_counts_, recv_displs_;
};
}  // namespace detail

template <class Over, class Op = op::sum>
struct allreduce;
// [x] |-> [x]   every member ends with the element-wise Op of all members' buffers
template <class... Ms, class Op>
struct allreduce<over<Ms...>, Op> {
  template <class Mesh, class T>
  static void run(const Mesh& m, std::span<T> data) {
    if constexpr (sizeof...(Ms) == 0) return;  // over no mesh dims: nothing to combine
    using g = detail::group_of<Mesh, Ms...>;
    const auto& comm = g::comm(m);
    const std::size_t p = static_cast<std::size_t>(comm.size());
    m.counters().record(collective::allreduce, g::mask, data.size(),
                        2 * (p - 1) * detail::bytes<T>(data.size()) / p);
    if (p == 1 || data.empty()) return;
    boost::mpi::all_reduce(comm, boost::mpi::inplace(data.data()), static_cast<int>(data.size()),
                           typename Op::template boost_op<T>());
  }
};

namespace detail {
// allreduce_sum(m, mask, data): allreduce<over<...>, op::sum>::run(m, data) over the mesh dims
// in the bit set mask, known at run time (a gradient's pending partial sums); none: nothing
template <class Mesh, class T>
void allreduce_sum(const Mesh& m, unsigned mask, std::span<T> data) {
  if (mask == 0) return;
  const auto& comm = m.communicator(mask);
  const std::size_t p = static_cast<std::size_t>(comm.size());
  if (data.size() > static_cast<std::size_t>(INT_MAX)) {  // the same on every rank
    throw error("meshpp::allreduce: " + std::to_string(data.size()) +
                " values on this rank are more than one MPI call can carry");
  }
  m.counters().record(collective::allreduce, mask, data.size(),
                      2 * (p - 1) * detail::bytes<T>(data.size()) / p);
  if (p == 1 || data.empty()) return;
  boost::mpi::all_reduce(comm, boost::mpi::inplace(data.data()), static_cast<int>(data.size()),
                         std::plus<T>());
}
}  // namespace detail

template <class Over>
struct allgather;
// [x] |-> [x_0, x_1, ..., x_{p-1}]   blocks in mesh-coordinate order of the group
template <class... Ms>
struct allgather<over<Ms...>> {
  template <class Mesh, class T>
  static void run(const Mesh& m, std::span<const T> in, std::span<T> out) {
    using g = detail::group_of<Mesh, Ms...>;
    const auto& comm = g::comm(m);
    const std::size_t p = static_cast<std::size_t>(comm.size());
    if (out.size() != in.size() * p) {
      throw error("meshpp::allgather: the output holds " + std::to_string(out.size()) +
                  " values; the group of " + std::to_string(p) + " needs " +
                  std::to_string(in.size() * p));
    }
    m.counters().record(collective::allgather, g::mask, in.size(),
                        (p - 1) * detail::bytes<T>(in.size()));
    if (p == 1) {
      std::copy(in.begin(), in.end(), out.begin());
      return;
    }
    boost::mpi::all_gather(comm, in.data(), static_cast<int>(in.size()), out.data());
  }
};

template <class Over>
struct alltoall;
// [x_0, ..., x_{p-1}] on member i |-> [x_i of member 0, ..., x_i of member p-1]
template <class... Ms>
struct alltoall<over<Ms...>> {
  template <class Mesh, class T>
  static void run(const Mesh& m, std::span<const T> in, std::span<T> out) {
    using g = detail::group_of<Mesh, Ms...>;
    const auto& comm = g::comm(m);
    const std::size_t p = static_cast<std::size_t>(comm.size());
    if (out.size() != in.size() || in.size() % p != 0) {
      throw error(
          "meshpp::alltoall: input and output must hold the same number of values, a "
          "multiple of the group size " +
          std::to_string(p));
    }
    m.counters().record(collective::alltoall, g::mask, in.size(),
                        (p - 1) * detail::bytes<T>(in.size()) / p);
    if (p == 1) {
      std::copy(in.begin(), in.end(), out.begin());
      return;
    }
    boost::mpi::all_to_all(comm, in.data(), static_cast<int>(in.size() / p), out.data());
  }

  // run_in_pieces<T>(mesh, values, move): the same alltoall of `values` values per member, for
  // blocks that do not lie one after another in one buffer (a relayout's blocks are boxes of
  // the tensor). Counted once, as run() counts it; move(exchange) moves the data, calling
  // exchange(send, send_offsets, recv, recv_offsets, n) (detail::alltoall_exchange<T>) for each
  // piece, and copies this member's own block itself.
  template <class T, class Mesh, class Move>
  static void run_in_pieces(const Mesh& m, std::size_t values, Move&& move) {
    using g = detail::group_of<Mesh, Ms...>;
    const auto& comm = g::comm(m);
    const std::size_t p = static_cast<std::size_t>(comm.size());
    if (values % p != 0) {
      throw error("meshpp::alltoall: " + std::to_string(values) +
                  " values do not split into blocks for the group size " + std::to_string(p));
    }
    m.counters().record(collective::alltoall, g::mask, values,
                        (p - 1) * detail::bytes<T>(values) / p);
    detail::alltoall_exchange<T> exchange(comm);
    move(exchange);
  }
};

template <class Over, class Op = op::sum>
struct reduce_scatter;
// [x_0, ..., x_{p-1}] on every member |-> member j holds Op over members of x_j
template <class... Ms, class Op>
struct reduce_scatter<over<Ms...>, Op> {
  template <class Mesh, class T>
  static void run(const Mesh& m, std::span<const T> in, std::span<T> out) {
    using g = detail::group_of<Mesh, Ms...>;
    const auto& comm = g::comm(m);
    const std::size_t p = static_cast<std::size_t>(comm.size());
    if (in.size() != out.size() * p) {
      throw error("meshpp::reduce_scatter: the input holds " + std::to_string(in.size()) +
                  " values; " + std::to_string(p) + " blocks of " + std::to_string(out.size()) +
                  " expected");
    }
    m.counters().record(collective::reduce_scatter, g::mask, in.size(),
                        (p - 1) * detail::bytes<T>(in.size()) / p);
    if (p == 1) {
      std::copy(in.begin(), in.end(), out.begin());
      return;
    }
    MPI_Reduce_scatter_block(in.data(), out.data(), static_cast<int>(out.size()),
                             boost::mpi::get_mpi_datatype<T>(), Op::mpi(), comm);
  }
};

template <class Over>
struct broadcast;
// [x] on member root |-> [x] on every member
template <class... Ms>
struct broadcast<over<Ms...>> {
  template <class Mesh, class T>
  static void run(const Mesh& m, std::span<T> data, int root) {
    using g = detail::group_of<Mesh, Ms...>;
    const auto& comm = g::comm(m);
    if (root < 0 || root >= comm.size()) {
      throw error("meshpp::broadcast: root " + std::to_string(root) + " is not a member of the " +
                  "group of " + std::to_string(comm.size()));
    }
    m.counters().record(collective::broadcast, g::mask, data.size(),
                        comm.rank() == root && comm.size() > 1 ? detail::bytes<T>(data.size()) : 0);
    if (comm.size() == 1) return;
    boost::mpi::broadcast(comm, data.data(), static_cast<int>(data.size()), root);
  }
};

}  // namespace meshpp
