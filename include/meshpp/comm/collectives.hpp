// meshpp/comm/collectives.hpp — collectives as policy templates over sets of mesh dims.
//
//   allreduce<over<rows>>::run(mesh, span)                 in place, sum
//   allreduce<over<rows, cols>, op::max>::run(mesh, span)
//   allgather<over<cols>>::run(mesh, in, out)              out: blocks in mesh-coordinate order
//   alltoall<over<cols>>::run(mesh, in, out)
//   reduce_scatter<over<rows>>::run(mesh, in, out)         sum; block j to group member j
//   broadcast<over<rows>>::run(mesh, span, root)           root: a rank of the group
//
// `over<Ms...>` names the mesh dims the collective runs over; it resolves at compile time to
// the mesh's cached sub-communicator of the ranks that differ only in Ms (mesh.hpp). Each
// call is recorded in the mesh's counters, even over mesh dims of size 1 (the values are part
// of the operation's semantics, as in the paper's Table 1); an allreduce over no mesh dims at
// all is no collective and is neither run nor counted. Boost.MPI is used where it has the
// collective (all_reduce, all_gather, all_to_all, broadcast); MPI_Reduce_scatter_block goes through
// the communicator's MPI_Comm. Buffers are passed to MPI as they are: no staging copies.
#pragma once

#include <climits>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <type_traits>

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
