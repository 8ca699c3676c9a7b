// meshpp/comm/collectives.hpp — collectives as policy templates over sets of mesh dims.
//
//   allreduce<over<rows>>::run(mesh, span)                 in place, sum
//   allreduce<over<rows, cols>, op::max>::run(mesh, span)
//   allgather<over<cols>>::run(mesh, in, out)              out: blocks in mesh-coordinate order
//   alltoall<over<cols>>::run(mesh, in, out)
//   alltoall<over<cols>>::run_in_pieces(mesh, counts, bound, move)  blocks where they lie
//   reduce_scatter<over<rows>>::run(mesh, in, out)         sum; block j to group member j
//   broadcast<over<rows>>::run(mesh, span, root)           root: a rank of the group
//
// allgather, alltoall and reduce_scatter also take blocks of different sizes, one per member
// (`run_blocks`, with the counts of every member's block: a dim split unevenly; blocks all of
// one size take the even form, for allgather and reduce_scatter; alltoall's run_blocks_where
// takes each block where it lies). Counted as
// the even forms are, with the same meaning, so an even split counts the same either way:
// allgather and reduce_scatter record the values of this rank's input and the bytes of the
// others' blocks; alltoall the values of all its send blocks and the bytes of those it sends
// to other members.
//
// `over<Ms...>` names the mesh dims the collective runs over; it resolves at compile time to
// the mesh's cached sub-communicator of the ranks that differ only in Ms (mesh.hpp). Each
// call is recorded in the mesh's counters, even over mesh dims of size 1 (the values are part
// of the operation's semantics, as in the paper's Table 1); an allreduce over no mesh dims at
// all is no collective and is neither run nor counted. Every MPI call goes through
// core/detail/checked.hpp: its return code checked (an error names the rank, the call, the
// operation, its mesh dims, type and count), counts of any size (split into calls of at most
// INT_MAX values, or strided derived datatypes), and, with MESHPP_CHECK_COLLECTIVES=1, the
// group's agreement on the call before any data moves. Buffers are passed to MPI as they are:
// no staging copies (but for a reduce_scatter of blocks over INT_MAX values). A reduce_scatter
// sum of float or double runs a ring of MPI_Sendrecv calls of its own (ring_sum_scatter, below),
// which keeps the partial sums it passes on in staging buffers over more than 2 members.
#pragma once

#include <algorithm>
#include <array>
#include <climits>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <numeric>
#include <optional>
#include <span>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include <mpi.h>
#include <boost/mpi/communicator.hpp>
#include <boost/mpi/datatype.hpp>

#include "meshpp/core/blocks.hpp"
#include "meshpp/core/config.hpp"
#include "meshpp/core/counters.hpp"
#include "meshpp/core/detail/checked.hpp"
#include "meshpp/core/error.hpp"
#include "meshpp/core/lanes.hpp"
#include "meshpp/core/mesh.hpp"
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
// mesh_names<Mesh>: the mesh dims' names, with static storage for call_site
template <class Mesh>
inline constexpr auto mesh_names = Mesh::names();

// collective_site<T>(m, operation, mask, n): a call's description for messages and
// fingerprints (the names live as long as the mesh's state)
template <class T>
call_site collective_site(const mesh_base& m, const char* operation, unsigned mask, std::size_t n) {
  return {operation, mask, m.names(), type_name<T>(), n};
}

// begin_collective<T>(m, mask, kind, operation, in, out, bytes, p): the prologue of a
// collective of in's values into out over the group of p members over the mesh dims in mask:
// counts the call (bytes sent by this member); then the call's site, announced to the group
// (before_collective), where MPI is to be called, else nothing: a planned mesh moves nothing,
// and a group of one copies in to out
template <class T>
std::optional<call_site> begin_collective(const mesh_base& m, unsigned mask, collective kind,
                                          const char* operation, std::span<const T> in,
                                          std::span<T> out, std::uint64_t bytes, std::size_t p) {
  m.counters().record(kind, mask, in.size(), bytes);
  if (m.planning()) return std::nullopt;
  if (p == 1) {
    std::copy(in.begin(), in.end(), out.begin());
    return std::nullopt;
  }
  auto s = collective_site<T>(m, operation, mask, in.size());
  before_collective(MPI_Comm(m.communicator(mask)), s);
  return s;
}

template <class T>
std::uint64_t bytes(std::size_t n) {
  return static_cast<std::uint64_t>(n) * sizeof(T);
}

// allreduce_in_place(comm, data, n, op, site): MPI_Allreduce of n T in place, in calls of at
// most mpi_count_limit values (core/detail/checked.hpp)
template <class T>
void allreduce_in_place(MPI_Comm comm, T* data, std::size_t n, MPI_Op op, const call_site& site) {
  allreduce_in_place(comm, static_cast<void*>(data), n, mpi_type<T>(), sizeof(T), op, site);
}

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
}  // namespace detail

namespace detail {
// block_offsets(counts): where each block starts when the blocks lie back to back, and (last)
// their total
inline std::vector<std::size_t> block_offsets(std::span<const std::size_t> counts) {
  std::vector<std::size_t> at(counts.size() + 1, 0);
  for (std::size_t j = 0; j < counts.size(); ++j) at[j + 1] = at[j] + counts[j];
  return at;
}

// all_equal(counts): every block has the same size (an even split: the collectives' even forms)
inline bool all_equal(std::span<const std::size_t> counts) {
  return std::all_of(counts.begin(), counts.end(), [&](std::size_t c) { return c == counts[0]; });
}

// check_block_counts(who, counts, p): one count per member of the group
inline void check_block_counts(const char* who, std::span<const std::size_t> counts,
                               std::size_t p) {
  if (counts.size() != p) {
    throw error(std::string(who) + ": " + std::to_string(counts.size()) +
                " block counts for a group of " + std::to_string(p));
  }
}

// group_blocks: a group's blocks of their own sizes: the group's size p, this member's place
// me in it, and where each block starts when they lie back to back (at[p]: their total)
struct group_blocks {
  std::size_t p, me;
  std::vector<std::size_t> at;
};

// blocks_of(who, m, mask, counts, whole, mine): this rank's group over the mesh dims in mask
// and its blocks, after checking that there is one count per member, that the buffer of all
// blocks holds `whole` values as the counts say, and this member's buffer its own block
inline group_blocks blocks_of(const char* who, const mesh_base& m, unsigned mask,
                              std::span<const std::size_t> counts, std::size_t whole,
                              std::size_t mine) {
  const auto p = static_cast<std::size_t>(m.group_size(mask));
  const auto me = static_cast<std::size_t>(m.group_rank(mask));
  check_block_counts(who, counts, p);
  group_blocks b{p, me, block_offsets(counts)};
  if (whole != b.at[p] || mine != counts[me]) {
    throw error(std::string(who) + ": the buffers hold " + std::to_string(whole) +
                " values of all blocks and " + std::to_string(mine) +
                " of this member's; the counts say " + std::to_string(b.at[p]) + " and " +
                std::to_string(counts[me]));
  }
  return b;
}

// as_counts(counts, at): MPI's int counts and displacements of blocks back to back
inline std::pair<std::vector<int>, std::vector<int>> as_counts(std::span<const std::size_t> counts,
                                                               const std::vector<std::size_t>& at) {
  std::vector<int> c(counts.size()), d(counts.size());
  for (std::size_t j = 0; j < counts.size(); ++j) {
    c[j] = as_count(counts[j]);
    d[j] = as_count(at[j]);
  }
  return {std::move(c), std::move(d)};
}
}  // namespace detail

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

// allreduce_sum(m, mask, data): allreduce<over<...>, op::sum>::run(m, data) over the mesh dims
// in the bit set mask, known at run time (a gradient's pending partial sums); none: nothing
template <class T>
void allreduce_sum(const mesh_base& m, unsigned mask, std::span<T> data) {
  if (mask != 0) allreduce_over(m, mask, data, MPI_SUM);
}

// allgather_over(m, mask, in, out): allgather<over<...>>::run over the mesh dims in mask
template <class T>
MESHPP_KERNEL void allgather_over(const mesh_base& m, unsigned mask, std::span<const T> in,
                                  std::span<T> out) {
  const std::size_t p = static_cast<std::size_t>(m.group_size(mask));
  if (out.size() != in.size() * p) {
    throw error("meshpp::allgather: the output holds " + std::to_string(out.size()) +
                " values; the group of " + std::to_string(p) + " needs " +
                std::to_string(in.size() * p));
  }
  const auto started = begin_collective<T>(m, mask, collective::allgather, "allgather", in, out,
                                           (p - 1) * bytes<T>(in.size()), p);
  if (!started) return;
  const auto& site = *started;
  const MPI_Comm comm(m.communicator(mask));
  const MPI_Datatype type = mpi_type<T>();
  const std::size_t n = in.size();
  if (n <= mpi_count_limit) {
    checked(MPI_Allgather(in.data(), as_count(n), type, out.data(), as_count(n), type, comm),
            "MPI_Allgather", site);
    return;
  }
  // blocks too large for one count: piece [at, at + c) of every block, received through a
  // type whose extent is the whole block, so member j's piece lands at j n + at
  for_each_piece(n, [&](std::size_t at, std::size_t c) {
    const strided_type block(type, c, n);
    checked(MPI_Allgather(in.data() + at, as_count(c), type, out.data() + at, 1, block.get(), comm),
            "MPI_Allgather", site);
  });
}

// allgather_blocks_over(m, mask, data, counts): the allgather of this rank's group over the
// mesh dims in the bit set mask, in place: member j's block is counts[j] values at data +
// counts[0] + ... + counts[j - 1], this member's already there, the others' received there
// (the same counts on every member). Counted as allgather<over<...>>::run_blocks counts
// (this member's values; the bytes of the others' blocks), on a planned mesh counted only.
// MPI_Allgatherv, or point-to-point messages when the total outgrows MPI's int (the total is
// the same on every member, so is the choice). What run_blocks and the sharded optimizer
// update (optim/optimizer.hpp) run.
template <class T>
MESHPP_KERNEL void allgather_blocks_over(const mesh_base& m, unsigned mask, std::span<T> data,
                                         std::span<const std::size_t> counts) {
  const auto me = static_cast<std::size_t>(m.group_rank(mask));
  const auto blocks = blocks_of("meshpp::allgather", m, mask, counts, data.size(),
                                me < counts.size() ? counts[me] : 0);
  const std::size_t p = blocks.p;
  const auto& at = blocks.at;
  m.counters().record(collective::allgather, mask, counts[me], bytes<T>(data.size() - counts[me]));
  if (m.planning() || p == 1) return;
  const auto& comm = m.communicator(mask);
  auto site = collective_site<T>(m, "allgather", mask, counts[me]);
  site.count_agrees = false;
  before_collective(MPI_Comm(comm), site);
  const MPI_Datatype type = mpi_type<T>();
  if (at[p] <= mpi_count_limit) {
    const auto [c, d] = as_counts(counts, at);
    checked(MPI_Allgatherv(MPI_IN_PLACE, 0, type, data.data(), c.data(), d.data(), type,
                           MPI_Comm(comm)),
            "MPI_Allgatherv", site);
    return;
  }
  exchange_messages(
      MPI_Comm(comm), type, sizeof(T),
      [&](std::size_t) {
        return std::pair{static_cast<const void*>(data.data() + at[me]), counts[me]};
      },
      [&](std::size_t j) {
        return std::pair{static_cast<void*>(data.data() + at[j]), counts[j]};
      },
      site);
}

// allgather_blocks_run(m, mask, in, out, counts): allgather<over<...>>::run_blocks over the
// mesh dims in mask
template <class T>
MESHPP_KERNEL void allgather_blocks_run(const mesh_base& m, unsigned mask, std::span<const T> in,
                                        std::span<T> out, std::span<const std::size_t> counts) {
  const auto blocks = blocks_of("meshpp::allgather", m, mask, counts, out.size(), in.size());
  if (all_equal(counts)) return allgather_over(m, mask, in, out);  // even: MPI_Allgather
  if (!m.planning())
    std::copy(in.begin(), in.end(),
              out.begin() + static_cast<std::ptrdiff_t>(blocks.at[blocks.me]));
  allgather_blocks_over(m, mask, out, counts);
}

// alltoall_over(m, mask, in, out): alltoall<over<...>>::run over the mesh dims in mask
template <class T>
MESHPP_KERNEL void alltoall_over(const mesh_base& m, unsigned mask, std::span<const T> in,
                                 std::span<T> out) {
  const std::size_t p = static_cast<std::size_t>(m.group_size(mask));
  if (out.size() != in.size() || in.size() % p != 0) {
    throw error(
        "meshpp::alltoall: input and output must hold the same number of values, a "
        "multiple of the group size " +
        std::to_string(p));
  }
  const auto started = begin_collective<T>(m, mask, collective::alltoall, "alltoall", in, out,
                                           (p - 1) * bytes<T>(in.size()) / p, p);
  if (!started) return;
  const auto& site = *started;
  const MPI_Comm comm(m.communicator(mask));
  const std::size_t n = in.size() / p;  // a block
  const MPI_Datatype type = mpi_type<T>();
  if (n <= mpi_count_limit) {
    checked(MPI_Alltoall(in.data(), as_count(n), type, out.data(), as_count(n), type, comm),
            "MPI_Alltoall", site);
    return;
  }
  // as allgather does: a piece of every block at once
  for_each_piece(n, [&](std::size_t at, std::size_t c) {
    const strided_type block(type, c, n);
    checked(MPI_Alltoall(in.data() + at, 1, block.get(), out.data() + at, 1, block.get(), comm),
            "MPI_Alltoall", site);
  });
}

// alltoall_counted<T>(m, mask, send_counts): an alltoall of blocks of send_counts[j] values to
// member j over the mesh dims in mask, counted once (this member's own block not among the
// bytes), after checking there is one count a member; its group's size, this member's place in
// it and the values sent
struct alltoall_group {
  std::size_t p, me, values;
};
template <class T>
MESHPP_KERNEL alltoall_group alltoall_counted(const mesh_base& m, unsigned mask,
                                              std::span<const std::size_t> send_counts) {
  const std::size_t p = static_cast<std::size_t>(m.group_size(mask));
  const std::size_t me = static_cast<std::size_t>(m.group_rank(mask));
  check_block_counts("meshpp::alltoall", send_counts, p);
  const std::size_t values =
      std::accumulate(send_counts.begin(), send_counts.end(), std::size_t{0});
  m.counters().record(collective::alltoall, mask, values, bytes<T>(values - send_counts[me]));
  return {p, me, values};
}

// alltoall_blocks_where<T>(m, mask, send_counts, send_block, recv_counts, recv_block):
// alltoall<over<...>>::run_blocks_where over the mesh dims in mask
template <class T, class SendBlock, class RecvBlock>
void alltoall_blocks_where(const mesh_base& m, unsigned mask,
                           std::span<const std::size_t> send_counts, SendBlock&& send_block,
                           std::span<const std::size_t> recv_counts, RecvBlock&& recv_block) {
  const std::size_t me = static_cast<std::size_t>(m.group_rank(mask));
  const auto p = static_cast<std::size_t>(m.group_size(mask));
  check_block_counts("meshpp::alltoall", send_counts, p);
  check_block_counts("meshpp::alltoall", recv_counts, p);
  if (send_counts[me] != recv_counts[me]) {
    throw error("meshpp::alltoall: this member's own block is " + std::to_string(send_counts[me]) +
                " values sent and " + std::to_string(recv_counts[me]) + " received");
  }
  const auto g = alltoall_counted<T>(m, mask, send_counts);
  if (m.planning() || g.p == 1) return;
  const auto& comm = m.communicator(mask);
  auto site = collective_site<T>(m, "alltoall", mask, g.values);
  site.count_agrees = false;
  before_collective(MPI_Comm(comm), site);
  exchange_messages(
      MPI_Comm(comm), mpi_type<T>(), sizeof(T),
      [&](std::size_t j) {
        return std::pair{static_cast<const void*>(send_block(j)), send_counts[j]};
      },
      [&](std::size_t j) {
        return std::pair{static_cast<void*>(recv_block(j)), recv_counts[j]};
      },
      site);
}

// alltoall_blocks_run(m, mask, send, send_counts, recv, recv_counts): alltoall<over<...>>::
// run_blocks over the mesh dims in mask
template <class T>
MESHPP_KERNEL void alltoall_blocks_run(const mesh_base& m, unsigned mask, std::span<const T> send,
                                       std::span<const std::size_t> send_counts, std::span<T> recv,
                                       std::span<const std::size_t> recv_counts) {
  const std::size_t p = static_cast<std::size_t>(m.group_size(mask));
  const std::size_t me = static_cast<std::size_t>(m.group_rank(mask));
  check_block_counts("meshpp::alltoall", send_counts, p);
  check_block_counts("meshpp::alltoall", recv_counts, p);
  const auto send_at = block_offsets(send_counts);
  const auto recv_at = block_offsets(recv_counts);
  if (send.size() != send_at[p] || recv.size() != recv_at[p]) {
    throw error("meshpp::alltoall: the buffers (" + std::to_string(send.size()) + " and " +
                std::to_string(recv.size()) + " values) do not match the block counts");
  }
  alltoall_blocks_where<T>(
      m, mask, send_counts, [&](std::size_t j) { return send.data() + send_at[j]; }, recv_counts,
      [&](std::size_t j) { return recv.data() + recv_at[j]; });
  if (!m.planning())
    std::copy_n(send.data() + send_at[me], send_counts[me], recv.data() + recv_at[me]);
}

// alltoall_in_pieces<T>(m, mask, send_counts, bound, move): alltoall<over<...>>::run_in_pieces
// over the mesh dims in mask
template <class T, class Move>
void alltoall_in_pieces(const mesh_base& m, unsigned mask, std::span<const std::size_t> send_counts,
                        std::size_t bound, Move&& move) {
  alltoall_counted<T>(m, mask, send_counts);
  if (m.planning()) return;
  const auto& comm = m.communicator(mask);
  // the call names the bound, which every member shares (its values where the split is even;
  // where it is not, each member's count is its own)
  before_collective(MPI_Comm(comm), collective_site<T>(m, "alltoall", mask, bound));
  alltoall_exchange<T> exchange(comm, bound);
  move(exchange);
}

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

template <class Over>
struct allgather;
// [x] |-> [x_0, x_1, ..., x_{p-1}]   blocks in mesh-coordinate order of the group
template <class... Ms>
struct allgather<over<Ms...>> {
  template <class Mesh, class T>
  static void run(const Mesh& m, std::span<const T> in, std::span<T> out) {
    detail::allgather_over(m, Mesh::template mask_v<Ms...>, in, out);
  }

  // run_blocks(m, in, out, counts): member j's block holds counts[j] values (the same counts on
  // every member); out receives them back to back in member order. MPI_Allgatherv, or
  // point-to-point messages when the total outgrows MPI's int (the total is the same on every
  // member, so is the choice).
  template <class Mesh, class T>
  static void run_blocks(const Mesh& m, std::span<const T> in, std::span<T> out,
                         std::span<const std::size_t> counts) {
    detail::allgather_blocks_run(m, Mesh::template mask_v<Ms...>, in, out, counts);
  }
};

template <class Over>
struct alltoall;
// [x_0, ..., x_{p-1}] on member i |-> [x_i of member 0, ..., x_i of member p-1]
template <class... Ms>
struct alltoall<over<Ms...>> {
  template <class Mesh, class T>
  static void run(const Mesh& m, std::span<const T> in, std::span<T> out) {
    detail::alltoall_over(m, Mesh::template mask_v<Ms...>, in, out);
  }

  // run_blocks(m, send, send_counts, recv, recv_counts): blocks of different sizes, back to
  // back in member order: send_counts[j] values to member j, recv_counts[j] from member j;
  // each member knows only its own counts. This member's own block is copied.
  template <class Mesh, class T>
  static void run_blocks(const Mesh& m, std::span<const T> send,
                         std::span<const std::size_t> send_counts, std::span<T> recv,
                         std::span<const std::size_t> recv_counts) {
    detail::alltoall_blocks_run(m, Mesh::template mask_v<Ms...>, send, send_counts, recv,
                                recv_counts);
  }

  // run_blocks_where<T>(m, send_counts, send_block, recv_counts, recv_block): the same alltoall
  // of blocks, each where it lies: send_block(j) is where the send_counts[j] values for member
  // j start, recv_block(j) where the recv_counts[j] values from member j go (neither is asked
  // for this member's own block, which the caller copies). Point-to-point messages, as a
  // permute (comm/permute.hpp) sends them: each member knows only its own counts. Counted as
  // one alltoall of all the values sent, this member's own block not among the bytes.
  template <class T, class Mesh, class SendBlock, class RecvBlock>
  static void run_blocks_where(const Mesh& m, std::span<const std::size_t> send_counts,
                               SendBlock&& send_block, std::span<const std::size_t> recv_counts,
                               RecvBlock&& recv_block) {
    detail::alltoall_blocks_where<T>(m, Mesh::template mask_v<Ms...>, send_counts, send_block,
                                     recv_counts, recv_block);
  }

  // run_in_pieces<T>(mesh, send_counts, bound, move): the same alltoall of blocks, send_counts[j]
  // values to member j, for blocks that do not lie one after another in one buffer (a
  // relayout's blocks are boxes of the tensor). Counted once, as run_blocks_where counts it;
  // move(exchange) moves the data, calling exchange(send, send_offsets, send_counts, recv,
  // recv_offsets, recv_counts) (detail::alltoall_exchange<T>) for each piece, and copies this
  // member's own block itself. Every offset plus its count stays below bound, a size every
  // member passes alike.
  template <class T, class Mesh, class Move>
  static void run_in_pieces(const Mesh& m, std::span<const std::size_t> send_counts,
                            std::size_t bound, Move&& move) {
    detail::alltoall_in_pieces<T>(m, Mesh::template mask_v<Ms...>, send_counts, bound, move);
  }
};

namespace detail {
// the input size (bytes on every member) from which an even reduce_scatter calls
// MPI_Reduce_scatter_block rather than MPI_Reduce_scatter (reduce_scatter::run); tests lower
// it to run the block form
inline std::size_t reduce_scatter_block_from = std::size_t{32} << 20;

// the mean block (bytes) from which a reduce_scatter sum of float or double over more than 2
// members runs the ring below rather than MPI's call (2 members always run it); tests lower it
// to run the ring at 3 and 4 ranks
inline std::size_t reduce_scatter_ring_from = std::size_t{64} << 10;

struct sum_ring_a {};  // staging<T, sum_ring_a/b>: the partial sums a ring member receives and
struct sum_ring_b {};  // passes on, alternately (ring_sum_scatter over more than 2 members)

// ring_pass<T>(comm, p, me, largest, size, first, spare, out, add, site, tag): the schedule of
// meshpp's reduce-scatter rings (ring_sum_scatter below; comm/reduce_scatter_ring.hpp, whose
// blocks a gemm makes). Member r sends to r + 1 and receives from r - 1 in p - 1 MPI_Sendrecv
// calls: at step t (1 .. p - 1) it sends what it holds of block (r - t) mod p (`first` at step
// 1: block r - 1) and receives the partial sum of block (r - 1 - t) mod p into whichever of
// spare[0] and spare[1] it is not sending from (at the last step its own block, r, into out);
// add(b, dst) then adds its own part of block b there. Each block's sum is so taken in ring
// order, from the member after its owner to the owner: a fixed order. size(b): block b's
// values, largest the largest of them (every member's); messages go in pieces of the largest
// block, at most mpi_count_limit values each, as many calls on every member.
template <class T, class Size, class Add>
void ring_pass(MPI_Comm comm, std::size_t p, std::size_t me, std::size_t largest, Size&& size,
               const T* first, std::array<T*, 2> spare, T* out, Add&& add, const call_site& site,
               int tag) {
  auto block_at = [&](std::size_t t) { return (me + 2 * p - 1 - t) % p; };  // t = 0: me - 1
  const int right = static_cast<int>((me + 1) % p), left = static_cast<int>((me + p - 1) % p);
  const MPI_Datatype type = mpi_type<T>();
  const T* send = first;
  std::size_t sending = size(block_at(0));
  for (std::size_t t = 1; t < p; ++t) {
    const std::size_t b = block_at(t), n = size(b);
    T* dst = t + 1 == p ? out : (send == spare[0] ? spare[1] : spare[0]);
    for_each_piece(std::max<std::size_t>(largest, 1), [&](std::size_t from, std::size_t c) {
      const std::size_t out_c = from < sending ? std::min(c, sending - from) : 0;
      const std::size_t in_c = from < n ? std::min(c, n - from) : 0;
      checked(MPI_Sendrecv(send + std::min(from, sending), as_count(out_c), type, right, tag,
                           dst + std::min(from, n), as_count(in_c), type, left, tag, comm,
                           MPI_STATUS_IGNORE),
              "MPI_Sendrecv", site);
    });
    add(b, dst);
    send = dst;
    sending = n;
  }
}

// ring_sum_scatter<T>(comm, p, me, in, at, out, site): the reduce_scatter sum of blocks [at[j],
// at[j + 1]) of in (j < p, the same offsets on every member) into out on member j, by
// ring_pass: the first message goes straight from in, and each member adds its own values to
// what it receives in place, in SIMD batches (core/lanes.hpp). Every member sends every block
// but its own once, as MPI_Reduce_scatter does. Over more than 2 members the partial sums pass
// through two staging buffers of the largest block, kept for the thread (core/blocks.hpp). in
// and out must not overlap, as in MPI.
// At 2 ranks it took 0.29-0.45 of MPI_Reduce_scatter_block's time from 64 KiB to 64 MiB of
// input, where MPI_Reduce_scatter with equal counts took 0.70-1.0 (Open MPI 4.1 on an Intel
// Xeon, 2026-12-02; README, Collectives).
template <class T>
void ring_sum_scatter(MPI_Comm comm, std::size_t p, std::size_t me, const T* in,
                      std::span<const std::size_t> at, T* out, const call_site& site) {
  auto size = [&](std::size_t b) { return at[b + 1] - at[b]; };
  std::size_t largest = 0;
  for (std::size_t b = 0; b < p; ++b) largest = std::max(largest, size(b));
  const std::array<T*, 2> spare{p > 2 ? staging<T, sum_ring_a>(largest) : nullptr,
                                p > 2 ? staging<T, sum_ring_b>(largest) : nullptr};
  constexpr int tag = 0x7273;  // "rs"
  ring_pass<T>(
      comm, p, me, largest, size, in + at[(me + p - 1) % p], spare, out,
      [&](std::size_t b, T* dst) {
        for_each_lane<T>(
            size(b), [](auto& d, const auto& own) { d = own + d; }, dst, in + at[b]);
      },
      site, tag);
}

// sum_ring_type<Op, T>: reduce_scatter may run ring_sum_scatter (a sum of float or double; a
// compile-time test, so that types SIMD batches do not take, long double, still compile)
template <class Op, class T>
inline constexpr bool sum_ring_type = std::is_same_v<Op, op::sum> &&
                                      (std::is_same_v<T, float> || std::is_same_v<T, double>);

// uses_sum_ring(p, in_bytes): whether such a reduce_scatter runs the ring (the same answer on
// every member: p and the input size are every member's)
inline bool uses_sum_ring(std::size_t p, std::size_t in_bytes) {
  return p == 2 || in_bytes / p >= reduce_scatter_ring_from;
}
}  // namespace detail

namespace detail {
// reduce_scatter_over(m, mask, in, out, op, sum_ring): reduce_scatter<over<...>, Op>::run over
// the mesh dims in mask; sum_ring: the ring of ring_sum_scatter may run (a sum of float or
// double, sum_ring_type)
template <class T>
MESHPP_KERNEL void reduce_scatter_over(const mesh_base& m, unsigned mask, std::span<const T> in,
                                       std::span<T> out, MPI_Op op, bool sum_ring) {
  const std::size_t p = static_cast<std::size_t>(m.group_size(mask));
  if (in.size() != out.size() * p) {
    throw error("meshpp::reduce_scatter: the input holds " + std::to_string(in.size()) +
                " values; " + std::to_string(p) + " blocks of " + std::to_string(out.size()) +
                " expected");
  }
  const auto started = begin_collective<T>(m, mask, collective::reduce_scatter, "reduce_scatter",
                                           in, out, (p - 1) * bytes<T>(in.size()) / p, p);
  if (!started) return;
  const auto& site = *started;
  const MPI_Comm comm(m.communicator(mask));
  const MPI_Datatype type = mpi_type<T>();
  const std::size_t n = out.size();
  if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
    if (sum_ring && uses_sum_ring(p, bytes<T>(in.size()))) {
      std::vector<std::size_t> at(p + 1);
      for (std::size_t j = 0; j <= p; ++j) at[j] = j * n;
      ring_sum_scatter<T>(comm, p, static_cast<std::size_t>(m.group_rank(mask)), in.data(),
                          std::span<const std::size_t>(at), out.data(), site);
      return;
    }
  }
  // p blocks of c values each. Open MPI 4.1 runs MPI_Reduce_scatter and
  // MPI_Reduce_scatter_block by different algorithms: at 2 ranks here, with an input of
  // 256 KiB to 16 MiB, MPI_Reduce_scatter with equal counts took 0.68-0.87 of the block
  // call's time, at 64 KiB the same, at 64 MiB 1.03-1.12 (bench/allreduce, 6 runs; the last
  // figure from the 4 before this switch). So the counts form below 32 MiB of input, the
  // block form from there (the size is every member's).
  std::vector<int> counts(p);
  auto even_blocks = [&](const T* from, T* to, std::size_t c) {
    if (bytes<T>(c * p) >= reduce_scatter_block_from) {
      checked(MPI_Reduce_scatter_block(from, to, as_count(c), type, op, comm),
              "MPI_Reduce_scatter_block", site);
      return;
    }
    std::fill(counts.begin(), counts.end(), as_count(c));
    checked(MPI_Reduce_scatter(from, to, counts.data(), type, op, comm), "MPI_Reduce_scatter",
            site);
  };
  if (n <= mpi_count_limit) {
    even_blocks(in.data(), out.data(), n);
    return;
  }
  // blocks too large for one count: piece [at, at + c) of every block, staged side by side
  // (MPI's reductions take no derived datatypes), at most 2^26 values a block at a time
  const std::size_t piece = std::min<std::size_t>(mpi_count_limit, std::size_t(1) << 26);
  std::vector<T> staged(p * std::min(piece, n));
  for_each_piece(
      n,
      [&](std::size_t at, std::size_t c) {
        for (std::size_t j = 0; j < p; ++j)
          std::copy_n(in.data() + j * n + at, c, staged.data() + j * c);
        even_blocks(staged.data(), out.data() + at, c);
      },
      piece);
}

// reduce_scatter_blocks_over(m, mask, in, out, counts, op, sum_ring): reduce_scatter<over<...>,
// Op>::run_blocks over the mesh dims in mask
template <class T>
MESHPP_KERNEL void reduce_scatter_blocks_over(const mesh_base& m, unsigned mask,
                                              std::span<const T> in, std::span<T> out,
                                              std::span<const std::size_t> counts, MPI_Op op,
                                              bool sum_ring) {
  // (not structured bindings: clang 14 does not let lambdas capture them)
  const auto blocks = blocks_of("meshpp::reduce_scatter", m, mask, counts, in.size(), out.size());
  const std::size_t p = blocks.p, me = blocks.me;
  const auto& at = blocks.at;
  // even: the same call, simpler checks
  if (all_equal(counts)) return reduce_scatter_over(m, mask, in, out, op, sum_ring);
  const auto started = begin_collective<T>(m, mask, collective::reduce_scatter, "reduce_scatter",
                                           in, out, bytes<T>(in.size() - out.size()), p);
  if (!started) return;
  const auto& site = *started;
  const MPI_Comm comm(m.communicator(mask));
  const MPI_Datatype type = mpi_type<T>();
  if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
    if (sum_ring && uses_sum_ring(p, bytes<T>(in.size()))) {
      ring_sum_scatter<T>(comm, p, me, in.data(), std::span<const std::size_t>(at), out.data(),
                          site);
      return;
    }
  }
  if (at[p] <= mpi_count_limit) {
    const auto c = as_counts(counts, at).first;
    checked(MPI_Reduce_scatter(in.data(), out.data(), c.data(), type, op, comm),
            "MPI_Reduce_scatter", site);
    return;
  }
  for (std::size_t j = 0; j < p; ++j) {
    for_each_piece(counts[j], [&](std::size_t from, std::size_t c) {
      checked(MPI_Reduce(in.data() + at[j] + from, j == me ? out.data() + from : nullptr,
                         as_count(c), type, op, as_int(j), comm),
              "MPI_Reduce", site);
    });
  }
}
}  // namespace detail

template <class Over, class Op = op::sum>
struct reduce_scatter;
// [x_0, ..., x_{p-1}] on every member |-> member j holds Op over members of x_j
template <class... Ms, class Op>
struct reduce_scatter<over<Ms...>, Op> {
  template <class Mesh, class T>
  static void run(const Mesh& m, std::span<const T> in, std::span<T> out) {
    detail::reduce_scatter_over(m, Mesh::template mask_v<Ms...>, in, out, Op::mpi(),
                                detail::sum_ring_type<Op, T>);
  }

  // run_blocks(m, in, out, counts): block j (counts[j] values, blocks back to back in member
  // order, the same counts on every member) reduced to member j. MPI_Reduce_scatter, or one
  // MPI_Reduce per block (in pieces) when the total outgrows MPI's int (the total is the same
  // on every member, so is the choice).
  template <class Mesh, class T>
  static void run_blocks(const Mesh& m, std::span<const T> in, std::span<T> out,
                         std::span<const std::size_t> counts) {
    detail::reduce_scatter_blocks_over(m, Mesh::template mask_v<Ms...>, in, out, counts, Op::mpi(),
                                       detail::sum_ring_type<Op, T>);
  }
};

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

}  // namespace meshpp
