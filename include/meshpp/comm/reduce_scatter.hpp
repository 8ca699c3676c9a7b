// meshpp/comm/reduce_scatter.hpp — reduce_scatter<over<Ms...>, Op>: block j of every member's
// input, combined by Op, ends on member j.
//
//   reduce_scatter<over<rows>>::run(mesh, in, out)                  sum; block j to member j
//   reduce_scatter<over<rows>>::run_blocks(mesh, in, out, counts)   blocks of their own sizes
//
// Counted as this rank's input values and the bytes of the others' blocks, either form. A sum
// of float or double runs a ring of MPI_Sendrecv calls of its own (comm/detail/ring_schedule.hpp)
// at 2 members, and over more where the blocks are large; other reductions MPI's calls, staged
// in pieces where a block outgrows MPI's int.
#pragma once

#include <type_traits>

#include <algorithm>
#include <cstddef>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include <mpi.h>

#include "meshpp/comm/detail/collective.hpp"
#include "meshpp/comm/detail/ring_schedule.hpp"
#include "meshpp/comm/over.hpp"
#include "meshpp/core/checked.hpp"
#include "meshpp/core/config.hpp"
#include "meshpp/core/counters.hpp"
#include "meshpp/core/error.hpp"
#include "meshpp/core/mesh.hpp"

namespace meshpp {

namespace detail {
template <class T>
MESHPP_KERNEL void reduce_scatter_over(const mesh_base& m, unsigned mask, std::span<const T> in,
                                       std::span<T> out, MPI_Op op, bool sum_ring);
template <class T>
MESHPP_KERNEL void reduce_scatter_blocks_over(const mesh_base& m, unsigned mask,
                                              std::span<const T> in, std::span<T> out,
                                              std::span<const std::size_t> counts, MPI_Op op,
                                              bool sum_ring);
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

namespace detail {
// the input size (bytes on every member) from which an even reduce_scatter calls
// MPI_Reduce_scatter_block rather than MPI_Reduce_scatter (reduce_scatter::run); tests lower
// it to run the block form
inline std::size_t reduce_scatter_block_from = std::size_t{32} << 20;

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
  // MPI_Reduce_scatter_block by different algorithms; at 2 ranks the counts form is the faster
  // below tens of MiB of input (bench/allreduce). So the counts form below 32 MiB of input, the
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
#ifdef MESHPP_KERNEL_INSTANCE
MESHPP_KERNEL_INSTANCE void reduce_scatter_over<float>(const mesh_base&, unsigned,
                                                       std::span<const float>, std::span<float>,
                                                       MPI_Op, bool);
MESHPP_KERNEL_INSTANCE void reduce_scatter_over<double>(const mesh_base&, unsigned,
                                                        std::span<const double>, std::span<double>,
                                                        MPI_Op, bool);
#endif

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
#ifdef MESHPP_KERNEL_INSTANCE
MESHPP_KERNEL_INSTANCE void reduce_scatter_blocks_over<float>(const mesh_base&, unsigned,
                                                              std::span<const float>,
                                                              std::span<float>,
                                                              std::span<const std::size_t>, MPI_Op,
                                                              bool);
MESHPP_KERNEL_INSTANCE void reduce_scatter_blocks_over<double>(const mesh_base&, unsigned,
                                                               std::span<const double>,
                                                               std::span<double>,
                                                               std::span<const std::size_t>, MPI_Op,
                                                               bool);
#endif
}  // namespace detail
}  // namespace meshpp
