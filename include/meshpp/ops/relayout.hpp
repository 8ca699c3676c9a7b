// meshpp/ops/relayout.hpp — relayout<NewRules>(t): the same tensor under another layout.
//
//   auto model = relayout<layout<split<hidden, all>>>(data_parallel);   // batch:all -> hidden:all
//
// Per mesh dim m, from the dim a split over m before to the dim b split over it after:
//   [a/m] |-> [a]          a before, none after: allgather over m
//   [b]   |-> [b/m]        none before, b after: local slice, no communication
//   [a/m, b] |-> [a, b/m]  a before, b after: one alltoall over m
// A transition touching several mesh dims composes these one mesh dim at a time, in the order
// that moves the least data: first every free slice (it shrinks what later steps move), then
// the alltoalls (they move the same amount), then the allgathers (they grow it). A dim moving
// from one mesh dim to another is gathered off the first and sliced onto the second; a cycle
// of dims trading mesh dims (x:rows, y:cols -> y:rows, x:cols) cannot be done by single-mesh-dim
// alltoalls under block layouts, and is broken with one allgather (then alltoall, then slice).
// A dim split unevenly (near-equal blocks, the last ones shorter) moves the same way, its
// blocks of their own sizes: an allgather of blocks (MPI_Allgatherv), an alltoall of blocks
// (MPI_Alltoallv), a slice of this rank's stripe.
// Every collective goes through the policies of comm/collectives.hpp and is counted.
// In an alltoall, this rank's own block is copied straight from the input to the result; the
// other blocks go to and from MPI where they lie when they are one run of memory, and through a
// small staging buffer, piece by piece, when they are strided (alltoall_step below); among the
// ranks of one node they are copied once, straight between the ranks' memory.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <span>
#include <type_traits>
#include <utility>
#include <vector>

#include "meshpp/comm/collectives.hpp"
#include "meshpp/comm/single_copy.hpp"
#include "meshpp/core/blocks.hpp"
#include "meshpp/core/divides.hpp"
#include "meshpp/core/layout.hpp"
#include "meshpp/core/row_major.hpp"
#include "meshpp/core/shape.hpp"
#include "meshpp/core/tensor.hpp"
#include "meshpp/core/traverse.hpp"
#include "meshpp/expr/expression.hpp"

namespace meshpp {

namespace offending {
template <class Rule, class OtherRule>
inline constexpr bool relayout_target_puts_two_dims_on_one_mesh_dim =
    std::is_same_v<Rule, detail::no_dim>;
template <class Rule, class Axes>
inline constexpr bool relayout_target_names_a_mesh_dim_the_mesh_lacks =
    std::is_same_v<Rule, detail::no_dim>;
}  // namespace offending

namespace detail {

enum class relayout_step_kind { slice, alltoall, allgather };
struct relayout_step {
  relayout_step_kind kind;
  int mesh_dim;  // axis index
  int leaving;   // tensor dim index split over mesh_dim before (or -1)
  int arriving;  // tensor dim index split over mesh_dim after (or -1)
};

// assignment<S, L, AxesShape>(): for each mesh axis, the index in S of the dim L splits over
// it, or -1.
template <class S, class L, class AxesShape>
constexpr std::array<int, AxesShape::rank> assignment() {
  std::array<int, AxesShape::rank> a{};
  a.fill(-1);
  for_each_index<S::rank>([&](auto i) {
    using d = dim_at_t<S, i.value>;
    if constexpr (is_split_in_v<L, d>) a[index_of_v<AxesShape, mesh_dim_of_t<L, d>>] = int(i.value);
  });
  return a;
}

template <std::size_t K>
struct relayout_plan {
  std::array<relayout_step, 3 * K + 1> steps{};
  std::size_t count = 0;
};

// plan_relayout(from, to): the steps, per the order in the header comment
template <std::size_t K>
constexpr relayout_plan<K> plan_relayout(std::array<int, K> cur, const std::array<int, K>& to) {
  relayout_plan<K> plan;
  auto split_anywhere = [&](int d) {
    for (int v : cur) {
      if (v == d) return true;
    }
    return false;
  };
  while (cur != to) {
    bool progress = false;
    for (std::size_t m = 0; m < K; ++m) {  // free slices
      if (cur[m] == -1 && to[m] != -1 && !split_anywhere(to[m])) {
        plan.steps[plan.count++] = {relayout_step_kind::slice, int(m), -1, to[m]};
        cur[m] = to[m];
        progress = true;
      }
    }
    if (progress) continue;
    for (std::size_t m = 0; m < K; ++m) {  // alltoalls
      if (cur[m] != -1 && to[m] != -1 && cur[m] != to[m] && !split_anywhere(to[m])) {
        plan.steps[plan.count++] = {relayout_step_kind::alltoall, int(m), cur[m], to[m]};
        cur[m] = to[m];
        progress = true;
        break;
      }
    }
    if (progress) continue;
    // allgathers: one mesh dim that must be freed, preferring one that stays free
    std::size_t pick = K;
    for (std::size_t m = 0; m < K; ++m) {
      if (cur[m] != -1 && cur[m] != to[m] && (pick == K || to[m] == -1)) pick = m;
      if (pick != K && to[pick] == -1) break;
    }
    plan.steps[plan.count++] = {relayout_step_kind::allgather, int(pick), cur[pick], -1};
    cur[pick] = -1;
  }
  return plan;
}

// run_on_axis<Mesh>(m, f): f(MeshDim*) for the mesh dim with axis index m
template <class Mesh, class F>
void run_on_axis(int m, F&& f) {
  using axes = typename Mesh::axes_type::shape_type;
  for_each_index<axes::rank>([&](auto i) {
    if (int(i.value) == m) f(static_cast<dim_at_t<axes, i.value>*>(nullptr));
  });
}

// outermost(ext, d): every dim before d has extent 1, so blocks along d are contiguous
template <std::size_t N>
bool outermost(const std::array<std::size_t, N>& ext, int d) {
  return std::all_of(ext.begin(), ext.begin() + d, [](std::size_t e) { return e == 1; });
}

// The local extents after step s, of a tensor of global sizes `global`: the arriving dim (whole
// before) becomes this rank's stripe of it, the leaving dim whole.
template <class Mesh, std::size_t N>
std::array<std::size_t, N> extent_after(const Mesh& mesh, const relayout_step& s,
                                        std::array<std::size_t, N> ext,
                                        const std::array<std::size_t, N>& global) {
  run_on_axis<Mesh>(s.mesh_dim, [&]<class M>(M*) {
    const std::size_t p = static_cast<std::size_t>(mesh.template size<M>());
    const std::size_t c = static_cast<std::size_t>(mesh.template coordinate<M>());
    if (s.arriving >= 0) {
      const auto a = static_cast<std::size_t>(s.arriving);
      ext[a] = stripe_size(global[a], p, c);
    }
    if (s.leaving >= 0)
      ext[static_cast<std::size_t>(s.leaving)] = global[static_cast<std::size_t>(s.leaving)];
  });
  return ext;
}

// with_extent(ext, d, n): ext with dim d's extent n
template <std::size_t N>
std::array<std::size_t, N> with_extent(std::array<std::size_t, N> ext, int d, std::size_t n) {
  ext[static_cast<std::size_t>(d)] = n;
  return ext;
}

// box_is_contiguous(shape, box): a box of these extents, anywhere in an array of `shape`, is
// one run of memory (every dim after its first of extent above 1 is whole)
template <std::size_t N>
bool box_is_contiguous(const std::array<std::size_t, N>& shape,
                       const std::array<std::size_t, N>& box) {
  std::size_t i = 0;
  while (i < N && box[i] == 1) ++i;
  for (++i; i < N; ++i) {
    if (box[i] != shape[i]) return false;
  }
  return true;
}

// The bytes an alltoall step stages at a time, in all its blocks together. Blocks that are
// not one run of memory on this side are packed into (or unpacked from) a buffer this big, one
// piece at a time: it stays in cache between the pack and the send (or the receive and the
// unpack), and it is all a relayout of any size holds beyond its input and output. 1 MiB: at
// 256 KiB the MPI call per piece cost more than the cache saved (measured at 2 ranks). A
// variable, not a constant, so tests can move small tensors in many pieces; every rank of a
// group must see the same value, or their pieces, and so their MPI calls, would not match.
inline std::size_t alltoall_staging_bytes = std::size_t{1} << 20;

// for_each_piece(box, budget, f): f(at, piece) for pieces of at most `budget` values (at
// least one value each) that tile the box: whole inner dims, a range of one dim, single
// indices of the dims outside it. A piece of a box that is one run of memory is one too.
template <std::size_t N, class F>
void for_each_piece(const std::array<std::size_t, N>& box, std::size_t budget, F&& f) {
  if constexpr (N > 0) {
    if (element_count(box) == 0) return;
    std::size_t k = N - 1, inner = 1;  // inner: the values of dims after k
    while (k > 0 && inner * box[k] <= budget) {
      inner *= box[k];
      --k;
    }
    const std::size_t rows = std::min(box[k], std::max<std::size_t>(1, budget / inner));
    std::array<std::size_t, N> outside = box, piece = box;  // outside: the dims before k
    for (std::size_t i = 0; i < k; ++i) piece[i] = 1;
    for (std::size_t i = k; i < N; ++i) outside[i] = 1;
    for_each_position(outside, [&](std::array<std::size_t, N> at) {
      for (at[k] = 0; at[k] < box[k]; at[k] += rows) {
        piece[k] = std::min(rows, box[k] - at[k]);
        f(std::as_const(at), std::as_const(piece));
      }
    });
  }
}

struct send_staging;
struct receive_staging;

// [a/m, b] |-> [a, b/m] over the members of M: block j of b (a box of src: this rank's stripe
// of a, stripe j of b) to member j, and member j's block (its stripe of a, this rank's stripe
// of b) into stripe j of a (a box of dst). Where a or b splits unevenly the blocks differ in
// size (stripes of their own lengths). This member's own block never leaves the rank: it is
// copied from src to dst directly. The others go to MPI from where they lie when they are one
// run of memory on that side (b, or a, outermost); otherwise they are packed (or unpacked)
// piece by piece through a staging buffer of alltoall_staging_bytes, one MPI_Alltoallv per
// piece, the own block's piece copied alongside. So every value is copied once on each side,
// as MPI_Alltoall copies it, plus one copy in cache on the side where its block is strided.
// Every member cuts the same pieces, those of the largest block (stripe 0 of a and of b): a
// block's piece is the part of such a piece inside it, so the pieces of the block member i
// sends to member j match on both sides, and all members make the same MPI calls.
// MPI derived datatypes (MPI_Alltoallw of subarrays) would spare the staging copy in
// principle, but Open MPI 4.1's shared-memory transport packs them through its own fragments:
// measured at 2 ranks, from 10% faster to 1.35x slower than this, and 2-4.5x slower in runs
// where writing memory that the other rank had just read was slow. Among the ranks of one
// node none of this runs: each block is copied once, straight between the ranks' memory
// (copy_directly below, comm/single_copy.hpp).
template <class M, class Mesh, class T, std::size_t N>
void alltoall_step(const Mesh& mesh, const relayout_step& s, const T* src,
                   const std::array<std::size_t, N>& ext, T* dst,
                   const std::array<std::size_t, N>& out_ext,
                   const std::array<std::size_t, N>& global) {
  const std::size_t p = static_cast<std::size_t>(mesh.template size<M>());
  const std::size_t c = static_cast<std::size_t>(mesh.template coordinate<M>());
  const auto arriving = static_cast<std::size_t>(s.arriving);
  const auto leaving = static_cast<std::size_t>(s.leaving);
  // the block member i sends to member j: stripe i of a, stripe j of b
  auto block = [&](std::size_t i, std::size_t j) {
    auto b = ext;
    b[leaving] = stripe_size(global[leaving], p, i);
    b[arriving] = stripe_size(global[arriving], p, j);
    return b;
  };
  // where block j lies in src (send) and in dst (receive), plus an index inside the block
  auto send_at = [&](std::size_t j, std::array<std::size_t, N> at) {
    at[arriving] += stripe_begin(global[arriving], p, j);
    return at;
  };
  auto recv_at = [&](std::size_t j, std::array<std::size_t, N> at) {
    at[leaving] += stripe_begin(global[leaving], p, j);
    return at;
  };
  // the part of the piece at `at` that lies inside box b (no values if none)
  auto clip = [](const std::array<std::size_t, N>& b, const std::array<std::size_t, N>& at,
                 std::array<std::size_t, N> piece) {
    for (std::size_t d = 0; d < N; ++d)
      piece[d] = at[d] < b[d] ? std::min(piece[d], b[d] - at[d]) : 0;
    return piece;
  };
  const std::array<std::size_t, N> zero{};
  // every other member's block is one run of memory on this side, or empty (a loop: clang 14
  // cannot compile libstdc++ 12's views)
  auto direct = [&](const std::array<std::size_t, N>& e, bool sending) {
    for (std::size_t j = 0; j < p; ++j) {
      const auto b = sending ? block(c, j) : block(j, c);
      if (j != c && element_count(b) > 0 && !box_is_contiguous(e, b)) return false;
    }
    return true;
  };
  const bool send_direct = direct(ext, true), recv_direct = direct(out_ext, false);
  // one piece of all of a block when every member sends and receives where the blocks lie:
  // decided on the largest block (as it lies on member 0), the same way on every member
  const auto largest = block(0, 0);
  const bool whole =
      p == 1 || (box_is_contiguous(with_extent(ext, s.leaving, largest[leaving]), largest) &&
                 box_is_contiguous(with_extent(out_ext, s.arriving, largest[arriving]), largest));
  const std::size_t budget =
      whole ? element_count(largest)
            : std::max<std::size_t>(1, alltoall_staging_bytes / sizeof(T) / (p - 1));
  const std::size_t stage_size = (p - 1) * std::min(budget, element_count(largest));
  std::vector<std::size_t> send_counts(p);
  for (std::size_t j = 0; j < p; ++j) send_counts[j] = element_count(block(c, j));
  // Among the ranks of one node, every block goes straight from its sender's src to its
  // receiver's dst, one copy whatever the strides (comm/single_copy.hpp), moved by the member
  // whose side of it has more runs, so that the other's pages are pinned in few long runs.
  // False, with nothing done that the MPI path below does not redo, where the group cannot.
  auto src_ext = [&](std::size_t i) {  // member i's src: its stripe of a, the rest as here
    return with_extent(ext, s.leaving, stripe_size(global[leaving], p, i));
  };
  auto dst_ext = [&](std::size_t j) {  // member j's dst: its stripe of b
    return with_extent(out_ext, s.arriving, stripe_size(global[arriving], p, j));
  };
  // the runs of memory a non-empty box makes in a row-major array of `shape`: one run spans
  // the last dim the box does not cover whole and every dim after it, so the runs are the
  // product of the box's extents before that dim
  auto runs = [](const std::array<std::size_t, N>& box, const std::array<std::size_t, N>& shape) {
    std::size_t whole_from = N;  // the dims from here on are covered whole
    while (whole_from > 0 && box[whole_from - 1] == shape[whole_from - 1]) --whole_from;
    std::size_t n = 1;
    for (std::size_t d = 0; d + 1 < whole_from; ++d) n *= box[d];
    return n;
  };
  // whether member i writes its block for member j (else member j reads it): the same answer
  // on both, from the block's runs in i's src and in j's dst
  auto writes = [&](std::size_t i, std::size_t j) {
    const auto b = block(i, j);
    return runs(b, dst_ext(j)) < runs(b, src_ext(i));
  };
  auto copy_directly = [&](MPI_Comm comm) {
    const call_site site{"alltoall", 0, {}, type_name<T>(), 0};
    const single_copy_group& peers = single_copy_peers(comm, site);
    if (!peers.usable()) return false;
    copy_box(src, ext, send_at(c, zero), dst, out_ext, recv_at(c, zero), block(c, c));
    const auto address = share_addresses(comm, {src, dst}, site);  // member j's at 2j, 2j + 1
    // box b between this member's `here` (extents here_ext, at here_at) and member j's memory
    // at `there` (extents there_ext, at there_at)
    auto copy_block = [&](std::size_t j, remote_copy::way way, const std::array<std::size_t, N>& b,
                          T* here, const std::array<std::size_t, N>& here_ext,
                          const std::array<std::size_t, N>& here_at, std::uintptr_t there,
                          const std::array<std::size_t, N>& there_ext,
                          const std::array<std::size_t, N>& there_at) {
      strided_cursor<T*, N> mine{here + linear_index(here_at, here_ext),
                                 row_major_strides<N>(here_ext)};
      strided_cursor<std::ptrdiff_t, N> theirs{
          static_cast<std::ptrdiff_t>(linear_index(there_at, there_ext)),
          row_major_strides<N>(there_ext)};
      auto both = group(mine, theirs);
      remote_copy copy(peers.pids[j], way);
      for_each_row(b, both, [&](std::size_t n) {
        copy.add(mine.ptr, there + static_cast<std::uintptr_t>(theirs.ptr) * sizeof(T),
                 n * sizeof(T));
      });
      return copy.flush();
    };
    bool ok = true;
    for (std::size_t j = 0; j < p && ok; ++j) {
      if (j == c) continue;
      const auto out = block(c, j), in = block(j, c);
      if (element_count(out) > 0 && writes(c, j))  // (the kernel only reads src)
        ok = copy_block(j, remote_copy::write, out, const_cast<T*>(src), ext, send_at(j, zero),
                        address[2 * j + 1], dst_ext(j), recv_at(c, zero));
      if (ok && element_count(in) > 0 && !writes(j, c))
        ok = copy_block(j, remote_copy::read, in, dst, out_ext, recv_at(j, zero), address[2 * j],
                        src_ext(j), send_at(c, zero));
    }
    if (!all_copied(comm, ok, site)) return false;  // (which may free peers: not used after)
    ++single_copy_steps;
    return true;
  };
  alltoall<over<M>>::template run_in_pieces<T>(
      mesh, std::span<const std::size_t>(send_counts), p * element_count(largest),
      [&](auto& exchange) {  // (not called on a planned mesh: no staging there)
        if (p > 1 && single_copy_relayout && copy_directly(exchange.communicator())) return;
        T* const send_stage = send_direct ? nullptr : staging<T, send_staging>(stage_size);
        T* const recv_stage = recv_direct ? nullptr : staging<T, receive_staging>(stage_size);
        std::vector<std::size_t> send_offsets(p), recv_offsets(p), sent(p), received(p);
        std::vector<std::array<std::size_t, N>> in(p);  // the received pieces
        for_each_piece(largest, budget, [&](const auto& at, const auto& piece) {
          // own piece first: the rows of src it reads hold the others' pieces too
          const auto own = clip(block(c, c), at, piece);
          if (element_count(own) > 0)
            copy_box(src, ext, send_at(c, at), dst, out_ext, recv_at(c, at), own);
          std::size_t staged_out = 0, staged_in = 0;  // values staged so far, p - 1 in a row
          for (std::size_t j = 0; j < p; ++j) {
            if (j == c) continue;
            const auto out = clip(block(c, j), at, piece);
            in[j] = clip(block(j, c), at, piece);
            sent[j] = element_count(out);
            received[j] = element_count(in[j]);
            if (sent[j] == 0) {
              send_offsets[j] = 0;
            } else if (send_direct) {
              send_offsets[j] = linear_index(send_at(j, at), ext);
            } else {
              copy_box(src, ext, send_at(j, at), send_stage + staged_out, out, zero, out);
              send_offsets[j] = std::exchange(staged_out, staged_out + sent[j]);
            }
            recv_offsets[j] = received[j] == 0 ? 0
                              : recv_direct    ? linear_index(recv_at(j, at), out_ext)
                                               : std::exchange(staged_in, staged_in + received[j]);
          }
          exchange(send_direct ? src : send_stage, send_offsets.data(), sent.data(),
                   recv_direct ? dst : recv_stage, recv_offsets.data(), received.data());
          if (recv_direct) return;
          for (std::size_t j = 0; j < p; ++j) {
            if (j == c || received[j] == 0) continue;
            copy_box(recv_stage + recv_offsets[j], in[j], zero, dst, out_ext, recv_at(j, at),
                     in[j]);
          }
        });
      });
}

// apply_step(mesh, s, src, src_ext, dst, global): one step, from src (extents src_ext) into dst
// (extents extent_after(s, src_ext, global)).
template <class Mesh, class T, std::size_t N>
void apply_step(const Mesh& mesh, const relayout_step& s, const T* src,
                const std::array<std::size_t, N>& ext, T* dst,
                const std::array<std::size_t, N>& global) {
  run_on_axis<Mesh>(s.mesh_dim, [&]<class M>(M*) {
    const std::size_t p = static_cast<std::size_t>(mesh.template size<M>());
    const std::size_t c = static_cast<std::size_t>(mesh.template coordinate<M>());
    const std::array<std::size_t, N> zero{};
    const auto out_ext = extent_after(mesh, s, ext, global);
    const std::size_t count = element_count(ext);
    auto at = [&](int d, std::size_t i) { return with_extent(zero, d, i); };
    if (s.kind == relayout_step_kind::slice) {
      // [b] |-> [b/m]   keep this rank's stripe of b
      copy_box(src, ext,
               at(s.arriving, stripe_begin(global[static_cast<std::size_t>(s.arriving)], p, c)),
               dst, out_ext, zero, out_ext);
    } else if (s.kind == relayout_step_kind::allgather) {
      // [a/m] |-> [a]   gather the stripes of a (of their own sizes where a splits unevenly),
      // in coordinate order
      const auto leaving = static_cast<std::size_t>(s.leaving);
      std::vector<std::size_t> counts(p);
      for (std::size_t j = 0; j < p; ++j)
        counts[j] = element_count(with_extent(ext, s.leaving, stripe_size(global[leaving], p, j)));
      const bool in_place = outermost(out_ext, s.leaving);
      scratch<T> blocks(in_place ? 0 : element_count(out_ext));
      T* gathered = in_place ? dst : blocks.data();
      allgather<over<M>>::run_blocks(mesh, std::span<const T>(src, count),
                                     std::span<T>(gathered, element_count(out_ext)),
                                     std::span<const std::size_t>(counts));
      if (!in_place && !mesh.planning()) {
        for (std::size_t j = 0, pos = 0; j < p; pos += counts[j], ++j) {
          const auto b = with_extent(ext, s.leaving, stripe_size(global[leaving], p, j));
          copy_box(blocks.data() + pos, b, zero, dst, out_ext,
                   at(s.leaving, stripe_begin(global[leaving], p, j)), b);
        }
      }
    } else {
      alltoall_step<M>(mesh, s, src, ext, dst, out_ext, global);
    }
  });
}

}  // namespace detail

// relayout<NewRules>(t): t laid out by NewRules (restricted to t's dims). Communicates
// exactly as the header comment says; returns a copy when the layout does not change.
template <class NewRules, class Tensor>
requires is_tensor_v<Tensor> && is_layout_v<NewRules>
auto relayout(const Tensor& t) {
  using S = typename Tensor::shape_type;
  using Mesh = typename Tensor::mesh_type;
  using T = typename Tensor::value_type;
  using to_layout = layout_for_t<NewRules, S>;
  using axes = typename Mesh::axes_type::shape_type;
  static_assert(offending::relayout_target_puts_two_dims_on_one_mesh_dim<
                    typename detail::mesh_dim_clash<to_layout>::first,
                    typename detail::mesh_dim_clash<to_layout>::second>,
                "meshpp::relayout<Rules>(t): the new layout puts two dims of t on one mesh dim "
                "(illegal layout, Mesh-TensorFlow paper 8.5)");
  static_assert(offending::relayout_target_names_a_mesh_dim_the_mesh_lacks<
                    detail::unknown_mesh_dim_in_t<axes, to_layout>, typename Mesh::axes_type>,
                "meshpp::relayout<Rules>(t): the new layout splits a dim over a mesh dim the "
                "mesh does not have");
  using result_t = tensor<T, S, to_layout, Mesh>;
  if constexpr (std::is_same_v<to_layout, typename Tensor::layout_type>) {
    return result_t(t);
  } else {
    const auto scope = t.mesh().counters().operation([] {
      return "relayout " + to_string(S{}) + " " + to_string(typename Tensor::layout_type{}) +
             " -> " + to_string(to_layout{});
    });
    constexpr auto plan =
        detail::plan_relayout(detail::assignment<S, typename Tensor::layout_type, axes>(),
                              detail::assignment<S, to_layout, axes>());
    // Steps run from buffer to buffer; the last writes straight into the result.
    result_t out(t.mesh(), t.sizes(), result_t::uninitialized);
    t.mesh().counters().streamed(
        [&] { return t.local().size() * sizeof(typename Tensor::value_type); });
    detail::scratch<T> current, next;
    const T* src = t.local().data();
    auto ext = t.local_shape();
    for (std::size_t i = 0; i < plan.count; ++i) {
      const auto out_ext = detail::extent_after(t.mesh(), plan.steps[i], ext, t.global_shape());
      T* dst = out.local().data();
      if (i + 1 < plan.count) {
        next.resize(detail::element_count(out_ext));
        dst = next.data();
      }
      detail::apply_step(t.mesh(), plan.steps[i], src, ext, dst, t.global_shape());
      std::swap(current, next);  // scratch: no zeroing, no copying
      src = current.data();
      ext = out_ext;
    }
    return out;
  }
}

}  // namespace meshpp
