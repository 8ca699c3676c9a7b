// meshpp/comm/allgather.hpp — allgather<over<Ms...>>: every member of the group over mesh dims
// Ms ends with all members' blocks, in mesh-coordinate order.
//
//   allgather<over<cols>>::run(mesh, in, out)                    blocks all of one size
//   allgather<over<cols>>::run_blocks(mesh, in, out, counts)     blocks of their own sizes
//
// Counted as this rank's input values and the bytes of the others' blocks, either form. Blocks
// past MPI's int go through a strided datatype (even) or point-to-point messages (of their own
// sizes; core/detail/large_counts.hpp).
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
MESHPP_KERNEL void allgather_over(const mesh_base& m, unsigned mask, std::span<const T> in,
                                  std::span<T> out);
template <class T>
MESHPP_KERNEL void allgather_blocks_run(const mesh_base& m, unsigned mask, std::span<const T> in,
                                        std::span<T> out, std::span<const std::size_t> counts);
}  // namespace detail

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

namespace detail {
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
#ifdef MESHPP_KERNEL_INSTANCE
MESHPP_KERNEL_INSTANCE void allgather_over<float>(const mesh_base&, unsigned,
                                                  std::span<const float>, std::span<float>);
MESHPP_KERNEL_INSTANCE void allgather_over<double>(const mesh_base&, unsigned,
                                                   std::span<const double>, std::span<double>);
#endif

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
#ifdef MESHPP_KERNEL_INSTANCE
MESHPP_KERNEL_INSTANCE void allgather_blocks_over<float>(const mesh_base&, unsigned,
                                                         std::span<float>,
                                                         std::span<const std::size_t>);
MESHPP_KERNEL_INSTANCE void allgather_blocks_over<double>(const mesh_base&, unsigned,
                                                          std::span<double>,
                                                          std::span<const std::size_t>);
#endif

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
#ifdef MESHPP_KERNEL_INSTANCE
MESHPP_KERNEL_INSTANCE void allgather_blocks_run<float>(const mesh_base&, unsigned,
                                                        std::span<const float>, std::span<float>,
                                                        std::span<const std::size_t>);
MESHPP_KERNEL_INSTANCE void allgather_blocks_run<double>(const mesh_base&, unsigned,
                                                         std::span<const double>, std::span<double>,
                                                         std::span<const std::size_t>);
#endif
}  // namespace detail

}  // namespace meshpp
