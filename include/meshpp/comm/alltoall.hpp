// meshpp/comm/alltoall.hpp — alltoall<over<Ms...>>: member i's block j goes to member j, which
// holds them in member order.
//
//   alltoall<over<cols>>::run(mesh, in, out)                               blocks of one size
//   alltoall<over<cols>>::run_blocks(mesh, send, send_counts, recv, recv_counts)
//   alltoall<over<cols>>::run_blocks_where<T>(mesh, send_counts, send_block, recv_counts,
//   recv_block) alltoall<over<cols>>::run_in_pieces<T>(mesh, counts, bound, move)     blocks where
//   they lie
//
// Counted as the values of all this member's send blocks and the bytes of those it sends to
// other members, every form alike.
#pragma once

#include <numeric>

#include <algorithm>
#include <cstddef>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include <mpi.h>

#include "meshpp/comm/detail/alltoall_exchange.hpp"
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
MESHPP_KERNEL void alltoall_over(const mesh_base& m, unsigned mask, std::span<const T> in,
                                 std::span<T> out);
template <class T>
MESHPP_KERNEL void alltoall_blocks_run(const mesh_base& m, unsigned mask, std::span<const T> send,
                                       std::span<const std::size_t> send_counts, std::span<T> recv,
                                       std::span<const std::size_t> recv_counts);
template <class T, class SendBlock, class RecvBlock>
void alltoall_blocks_where(const mesh_base& m, unsigned mask,
                           std::span<const std::size_t> send_counts, SendBlock&& send_block,
                           std::span<const std::size_t> recv_counts, RecvBlock&& recv_block);
template <class T, class Move>
void alltoall_in_pieces(const mesh_base& m, unsigned mask, std::span<const std::size_t> send_counts,
                        std::size_t bound, Move&& move);
}  // namespace detail

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
#ifdef MESHPP_KERNEL_INSTANCE
MESHPP_KERNEL_INSTANCE void alltoall_over<float>(const mesh_base&, unsigned, std::span<const float>,
                                                 std::span<float>);
MESHPP_KERNEL_INSTANCE void alltoall_over<double>(const mesh_base&, unsigned,
                                                  std::span<const double>, std::span<double>);
#endif

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
#ifdef MESHPP_KERNEL_INSTANCE
MESHPP_KERNEL_INSTANCE alltoall_group alltoall_counted<float>(const mesh_base&, unsigned,
                                                              std::span<const std::size_t>);
MESHPP_KERNEL_INSTANCE alltoall_group alltoall_counted<double>(const mesh_base&, unsigned,
                                                               std::span<const std::size_t>);
#endif

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
#ifdef MESHPP_KERNEL_INSTANCE
MESHPP_KERNEL_INSTANCE void alltoall_blocks_run<float>(const mesh_base&, unsigned,
                                                       std::span<const float>,
                                                       std::span<const std::size_t>,
                                                       std::span<float>,
                                                       std::span<const std::size_t>);
MESHPP_KERNEL_INSTANCE void alltoall_blocks_run<double>(const mesh_base&, unsigned,
                                                        std::span<const double>,
                                                        std::span<const std::size_t>,
                                                        std::span<double>,
                                                        std::span<const std::size_t>);
#endif

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
}  // namespace detail

}  // namespace meshpp
