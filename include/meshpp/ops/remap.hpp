// meshpp/ops/remap.hpp — detail: moving ranges of one split dim between ranks.
//
// remap_along<Dim>(t, delta, wrap, out_range, out, out_extent) fills out (this rank's output
// range of Dim, all other dims as in t's slice) with out[o] = t[o + delta] along Dim (indices
// taken modulo Dim's size when wrap; else positions whose source falls outside t are left as
// they are). When Dim is split over mesh dim m, every rank knows every member's input stripe
// and output range, so each computes the contiguous pieces it sends to and receives from
// each member, and one collective permute over m moves exactly those pieces; what stays on
// the rank is copied locally. slice, pad, concat, split_along, shift and halo_exchange are this.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <span>
#include <vector>

#include "meshpp/comm/permute.hpp"
#include "meshpp/core/blocks.hpp"
#include "meshpp/core/divides.hpp"
#include "meshpp/core/layout.hpp"
#include "meshpp/core/shape.hpp"
#include "meshpp/core/tensor.hpp"

namespace meshpp {

/// What shift and halo_exchange read beyond the ends of a dim.
enum class boundary { zero, wrap };

namespace detail {

struct index_range {
  long lo, hi;  // [lo, hi)
};
struct remap_piece {
  long out, in, len;
};

// stripe_ranges(size, parts)(q): the range of member q's stripe of a dim of `size` split over
// `parts` members (near-equal blocks, the last ones shorter: core/divides.hpp)
inline auto stripe_ranges(std::size_t size, int parts) {
  return [size, parts](int q) {
    const auto p = static_cast<std::size_t>(parts), c = static_cast<std::size_t>(q);
    const auto lo = static_cast<long>(stripe_begin(size, p, c));
    return index_range{lo, lo + static_cast<long>(stripe_size(size, p, c))};
  };
}

// parts_of<Dim>(t): the number of members Dim of t is split over (1 when it is whole)
template <class Dim, class Tensor>
int parts_of(const Tensor& t) {
  using L = typename Tensor::layout_type;
  if constexpr (is_split_in_v<L, Dim>)
    return t.mesh().template size<mesh_dim_of_t<L, Dim>>();
  else
    return 1;
}

// remap_pieces(out, src, delta, size, wrap, pieces): the runs of output indices in `out` whose
// sources (o + delta, modulo size when wrap) lie in `src`
inline void remap_pieces(index_range out, index_range src, long delta, long size, bool wrap,
                         std::vector<remap_piece>& pieces) {
  if (!wrap) {
    const long lo = std::max({out.lo + delta, src.lo, 0L});
    const long hi = std::min({out.hi + delta, src.hi, size});
    if (lo < hi) pieces.push_back({lo - delta, lo, hi - lo});
    return;
  }
  for (long o = out.lo; o < out.hi;) {
    const long i = ((o + delta) % size + size) % size;
    const long len = std::min(out.hi - o, size - i);
    const long lo = std::max(i, src.lo), hi = std::min(i + len, src.hi);
    if (lo < hi) pieces.push_back({o + (lo - i), lo, hi - lo});
    o += len;
  }
}

template <class Dim, class Tensor, class OutRange>
void remap_along(const Tensor& t, long delta, bool wrap, OutRange&& out_range,
                 typename Tensor::value_type* out,
                 const std::array<std::size_t, Tensor::rank>& out_extent) {
  using T = typename Tensor::value_type;
  using L = typename Tensor::layout_type;
  constexpr std::size_t n = Tensor::rank;
  constexpr std::size_t ax = index_of_v<typename Tensor::shape_type, Dim>;
  const auto ext = t.local_shape();
  const long size = static_cast<long>(t.template extent<Dim>());
  // the values of one index along Dim: the other dims' local extents (not size / ext[ax]: a
  // rank whose stripe of Dim is empty still holds the other dims as its group does, and must
  // take part alike)
  std::size_t inner = 1;
  for (std::size_t i = 0; i < n; ++i) inner *= i == ax ? 1 : ext[i];
  const std::array<std::size_t, n> zero{};
  auto box_of = [&](long len) {
    auto b = ext;
    b[ax] = static_cast<std::size_t>(len);
    return b;
  };
  auto at = [&](long i) {
    auto a = zero;
    a[ax] = static_cast<std::size_t>(i);
    return a;
  };

  const int p = parts_of<Dim>(t);
  int me = 0;
  if constexpr (is_split_in_v<L, Dim>) me = t.mesh().template coordinate<mesh_dim_of_t<L, Dim>>();
  const index_range mine = out_range(me);
  const auto in_range = stripe_ranges(t.template extent<Dim>(), p);
  const long first = in_range(me).lo;  // this rank's first index along Dim

  // what stays here
  std::vector<remap_piece> pieces;
  remap_pieces(mine, in_range(me), delta, size, wrap, pieces);
  for (const auto& pc : pieces) {
    copy_box(t.local().data(), ext, at(pc.in - first), out, out_extent, at(pc.out - mine.lo),
             box_of(pc.len));
  }
  if constexpr (is_split_in_v<L, Dim>) {
    using M = mesh_dim_of_t<L, Dim>;
    // Every rank can tell whether anything crosses between any two members (all ranges are
    // known everywhere): if nothing does (a shift by 0, a slice within each stripe), every
    // rank skips the permute alike.
    bool anything_crosses = false;
    for (int q = 0; q < p && !anything_crosses; ++q) {
      for (int r = 0; r < p && !anything_crosses; ++r) {
        if (q == r) continue;
        std::vector<remap_piece> probe;
        remap_pieces(out_range(r), in_range(q), delta, size, wrap, probe);
        anything_crosses = !probe.empty() && inner != 0;
      }
    }
    if (!anything_crosses) return;
    std::vector<std::vector<remap_piece>> to(p), from(p);
    std::vector<std::size_t> send_counts(p, 0), recv_counts(p, 0);
    std::size_t send_total = 0, recv_total = 0;
    for (int q = 0; q < p; ++q) {
      if (q == me) continue;
      remap_pieces(out_range(q), in_range(me), delta, size, wrap, to[q]);
      remap_pieces(mine, in_range(q), delta, size, wrap, from[q]);
      for (const auto& pc : to[q]) send_counts[q] += static_cast<std::size_t>(pc.len) * inner;
      for (const auto& pc : from[q]) recv_counts[q] += static_cast<std::size_t>(pc.len) * inner;
      send_total += send_counts[q];
      recv_total += recv_counts[q];
    }
    scratch<T> send(send_total), recv(recv_total);
    std::size_t pos = 0;
    for (int q = 0; q < p; ++q) {
      for (const auto& pc : to[q]) {
        copy_box(t.local().data(), ext, at(pc.in - first), send.data() + pos, box_of(pc.len), zero,
                 box_of(pc.len));
        pos += static_cast<std::size_t>(pc.len) * inner;
      }
    }
    permute<over<M>>::run(t.mesh(), std::span<const T>(send.data(), send.size()),
                          std::span<const std::size_t>(send_counts),
                          std::span<T>(recv.data(), recv.size()),
                          std::span<const std::size_t>(recv_counts));
    pos = 0;
    for (int q = 0; q < p; ++q) {
      for (const auto& pc : from[q]) {
        copy_box(recv.data() + pos, box_of(pc.len), zero, out, out_extent, at(pc.out - mine.lo),
                 box_of(pc.len));
        pos += static_cast<std::size_t>(pc.len) * inner;
      }
    }
  }
}

// with_size<Dim>(sizes, n): the same extents with Dim's size n
template <class Dim, class... Dims>
extents<Dims...> with_size(const extents<Dims...>& e, std::size_t n) {
  return extents<Dims...>{
      dim_extent<Dims>{std::is_same_v<Dims, Dim> ? n : e.template get<Dims>()}...};
}

// block_ranges<Dim>(out): member q's output range along Dim under out's layout, as a function
// of q
template <class Dim, class Tensor>
auto block_ranges(const Tensor& out) {
  return stripe_ranges(out.template extent<Dim>(), parts_of<Dim>(out));
}

}  // namespace detail
}  // namespace meshpp
