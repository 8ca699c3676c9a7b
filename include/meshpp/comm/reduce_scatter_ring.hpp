// meshpp/comm/reduce_scatter_ring.hpp — a reduce_scatter whose blocks are made as the ring
// reaches them: each member adds its own part of a block straight onto the partial sum it
// received, so no member ever holds all p partial blocks, and the sum costs no pass of its own.
//
//   reduce_scatter_ring<over<cols>>::run<T>(mesh, out, make)   out: this member's block
//   allreduce_ring<over<cols>>::run<T>(mesh, out, make)        out: all p blocks; the ring,
//                                                               then an allgather in place
//     make(b, dst, accumulate): this member's part of block b written to dst (accumulate
//     false) or added to what dst holds (true); a gemm with beta 0 or 1, in einsum
//
// [x_0, ..., x_{p-1}] made on demand on every member |-> member j holds the sum of x_j
//
// Ring schedule over the p members of the group (member r sends to r+1, receives from r-1):
// at step t = 0 member r makes block (r - 1) mod p; at step t = 1 .. p-1 it receives the
// partial sum of block (r - 1 - t) mod p from r-1, adds its own part of that block, and (for
// t < p-1) passes it on; the last block it completes is its own, received straight into `out`.
// So every member sends p-1 blocks and receives p-1 (one MPI_Sendrecv per step), the
// bandwidth-optimal volume of a reduce_scatter, and is counted as one: p * block values,
// (p-1) * block values' bytes sent. Each block's sum is taken in ring order, starting at the
// member after its owner and ending at the owner: a fixed order for given mesh sizes.
#pragma once

#include <algorithm>
#include <cstddef>
#include <span>
#include <string>
#include <utility>

#include <mpi.h>
#include <boost/mpi/communicator.hpp>

#include "meshpp/comm/collectives.hpp"
#include "meshpp/comm/detail/ring_schedule.hpp"
#include "meshpp/core/blocks.hpp"
#include "meshpp/core/checked.hpp"
#include "meshpp/core/error.hpp"

namespace meshpp {

namespace detail {
struct ring_sent {};      // staging<T, ring_sent>: the partial block this member passes on
struct ring_received {};  // staging<T, ring_received>: the one it receives (more than 2 members)

// ring_reduce_scatter<T>(comm, out, make): the ring of the header comment over `comm`, this
// member's summed block into out (ring_pass, comm/detail/ring_schedule.hpp: the first block made
// into one staging buffer, the partial sums received into the other and back); not counted (the
// callers count what they stand for)
template <class T, class Make>
void ring_reduce_scatter(const boost::mpi::communicator& comm, std::span<T> out, Make&& make) {
  const std::size_t p = static_cast<std::size_t>(comm.size());
  const std::size_t block = out.size();
  if (p == 1) {
    make(std::size_t{0}, out.data(), false);
    return;
  }
  const std::size_t me = static_cast<std::size_t>(comm.rank());
  T* send = staging<T, ring_sent>(block);
  T* recv = p > 2 ? staging<T, ring_received>(block) : nullptr;
  make((me + p - 1) % p, send, false);
  const call_site site{"reduce_scatter (ring)", 0, {}, type_name<T>(), block};
  constexpr int tag = 0x7267;  // "rg": the ring's blocks
  ring_pass<T>(
      MPI_Comm(comm), p, me, block, [&](std::size_t) { return block; }, send, {send, recv},
      out.data(), [&](std::size_t b, T* dst) { make(b, dst, true); }, site, tag);
}

// reduce_scatter_ring_over<T>(m, mask, out, make): reduce_scatter_ring<over<...>>::run over
// the mesh dims in mask
template <class T, class Make>
void reduce_scatter_ring_over(const mesh_base& m, unsigned mask, std::span<T> out, Make&& make) {
  const std::size_t p = static_cast<std::size_t>(m.group_size(mask));
  m.counters().record(collective::reduce_scatter, mask, p * out.size(),
                      (p - 1) * bytes<T>(out.size()));
  if (m.planning()) return;  // neither the blocks nor their sums are made
  const auto& comm = m.communicator(mask);
  if (p > 1)
    before_collective(MPI_Comm(comm),
                      collective_site<T>(m, "reduce_scatter", mask, p * out.size()));
  ring_reduce_scatter<T>(comm, out, make);
}

// allreduce_ring_over<T>(m, mask, out, make): allreduce_ring<over<...>>::run over the mesh dims
// in mask
template <class T, class Make>
void allreduce_ring_over(const mesh_base& m, unsigned mask, std::span<T> out, Make&& make) {
  const std::size_t p = static_cast<std::size_t>(m.group_size(mask));
  const std::size_t block = out.size() / p;
  if (block * p != out.size()) {
    throw error("meshpp::allreduce_ring: " + std::to_string(out.size()) +
                " values do not split into blocks for the group size " + std::to_string(p));
  }
  m.counters().record(collective::allreduce, mask, out.size(),
                      2 * (p - 1) * bytes<T>(out.size()) / p);
  if (m.planning()) return;
  const auto& comm = m.communicator(mask);
  const auto site = collective_site<T>(m, "allreduce", mask, out.size());
  if (p > 1) before_collective(MPI_Comm(comm), site);
  const std::size_t me = static_cast<std::size_t>(comm.rank());
  ring_reduce_scatter<T>(comm, out.subspan(me * block, block), make);
  if (p == 1) return;
  // the blocks' allgather in place: one call, or a piece of every block at a time through a
  // type whose extent is the whole block
  const MPI_Datatype type = mpi_type<T>();
  if (block <= mpi_count_limit) {
    checked(MPI_Allgather(MPI_IN_PLACE, 0, type, out.data(), as_count(block), type, MPI_Comm(comm)),
            "MPI_Allgather", site);
    return;
  }
  for (std::size_t at = 0; at < block;) {
    const std::size_t c = std::min(block - at, mpi_count_limit);
    const strided_type piece(type, c, block);
    checked(MPI_Allgather(MPI_IN_PLACE, 0, type, out.data() + at, 1, piece.get(), MPI_Comm(comm)),
            "MPI_Allgather", site);
    at += c;
  }
}

// what both ring policies answer before running: members(mesh), p, the size of the group
template <class... Ms>
struct ring_group {
  template <class Mesh>
  static std::size_t members(const Mesh& m) {
    return static_cast<std::size_t>(m.group_size(Mesh::template mask_v<Ms...>));
  }
};
}  // namespace detail

template <class Over>
struct reduce_scatter_ring;
// [x_0, ..., x_{p-1}] made on demand |-> member j holds the sum of x_j   (one reduce_scatter)
template <class... Ms>
struct reduce_scatter_ring<over<Ms...>> : detail::ring_group<Ms...> {
  // run<T>(mesh, out, make): out is this member's block (its size, every member's block size)
  template <class T, class Mesh, class Make>
  static void run(const Mesh& m, std::span<T> out, Make&& make) {
    detail::reduce_scatter_ring_over<T>(m, Mesh::template mask_v<Ms...>, out, make);
  }
};

template <class Over>
struct allreduce_ring;
// [x_0, ..., x_{p-1}] made on demand |-> every member holds [sum x_0, ..., sum x_{p-1}]
//   the ring above, then one MPI_Allgather in place: counted as one allreduce of p blocks
template <class... Ms>
struct allreduce_ring<over<Ms...>> : detail::ring_group<Ms...> {
  // run<T>(mesh, out, make): out holds p blocks, block j at out + j * out.size() / p
  template <class T, class Mesh, class Make>
  static void run(const Mesh& m, std::span<T> out, Make&& make) {
    detail::allreduce_ring_over<T>(m, Mesh::template mask_v<Ms...>, out, make);
  }
};

}  // namespace meshpp
