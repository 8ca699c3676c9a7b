// meshpp/comm/detail/collective.hpp — what every collective of comm/ shares: its call site for
// messages and fingerprints, its prologue (counted, announced to the group), and the checks and
// offsets of blocks of their own sizes (a dim split unevenly).
//
// Each call is recorded in the mesh's counters, even over mesh dims of size 1 (the values are
// part of the operation's semantics, as in the paper's Table 1). Every MPI call goes through
// core/checked.hpp: its return code checked, counts of any size, and, with
// MESHPP_CHECK_COLLECTIVES=1, the group's agreement on the call before any data moves.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include <mpi.h>

#include "meshpp/core/checked.hpp"
#include "meshpp/core/counters.hpp"
#include "meshpp/core/error.hpp"
#include "meshpp/core/mesh.hpp"

namespace meshpp::detail {

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
// most mpi_count_limit values (core/checked.hpp)
template <class T>
void allreduce_in_place(MPI_Comm comm, T* data, std::size_t n, MPI_Op op, const call_site& site) {
  allreduce_in_place(comm, static_cast<void*>(data), n, mpi_type<T>(), sizeof(T), op, site);
}
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

}  // namespace meshpp::detail
