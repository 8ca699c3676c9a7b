// meshpp/comm/detail/ring_schedule.hpp — the schedule of meshpp's reduce-scatter rings
// (ring_pass), the ring that reduce_scatter's sum of float or double runs (ring_sum_scatter),
// and when it runs it rather than MPI's call.
//
// Member r sends to r + 1 and receives from r - 1 in p - 1 MPI_Sendrecv calls, each block's
// sum taken in ring order, from the member after its owner to the owner: a fixed order. Used by
// reduce_scatter (comm/reduce_scatter.hpp) and by the rings whose blocks a gemm makes
// (comm/reduce_scatter_ring.hpp).
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <span>
#include <type_traits>

#include <mpi.h>

#include "meshpp/comm/over.hpp"
#include "meshpp/core/blocks.hpp"
#include "meshpp/core/checked.hpp"
#include "meshpp/core/lanes.hpp"

namespace meshpp::detail {

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
// At 2 ranks it takes well under MPI_Reduce_scatter_block's time (docs/computation.md,
// Collectives).
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
}  // namespace meshpp::detail
