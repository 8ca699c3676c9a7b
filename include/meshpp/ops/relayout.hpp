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
// Every collective goes through the policies of comm/collectives.hpp and is counted.
#pragma once

#include <array>
#include <cstddef>
#include <span>
#include <type_traits>
#include <vector>

#include "meshpp/comm/collectives.hpp"
#include "meshpp/core/blocks.hpp"
#include "meshpp/core/layout.hpp"
#include "meshpp/core/shape.hpp"
#include "meshpp/core/tensor.hpp"
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

// outermost_v(ext, d): every dim before d has extent 1, so blocks along d are contiguous
template <std::size_t N>
bool outermost(const std::array<std::size_t, N>& ext, int d) {
  for (int i = 0; i < d; ++i) {
    if (ext[static_cast<std::size_t>(i)] != 1) return false;
  }
  return true;
}

// The local extents after step s.
template <class Mesh, std::size_t N>
std::array<std::size_t, N> extent_after(const Mesh& mesh, const relayout_step& s,
                                        std::array<std::size_t, N> ext) {
  run_on_axis<Mesh>(s.mesh_dim, [&]<class M>(M*) {
    const std::size_t p = static_cast<std::size_t>(mesh.template size<M>());
    if (s.arriving >= 0) ext[static_cast<std::size_t>(s.arriving)] /= p;
    if (s.leaving >= 0) ext[static_cast<std::size_t>(s.leaving)] *= p;
  });
  return ext;
}

// apply_step(mesh, s, src, src_ext, dst): one step, from src (extents src_ext) into dst
// (extents extent_after(s, src_ext)). Blocks that are contiguous already go to and from MPI
// in place; only the others are packed or unpacked (one copy).
template <class Mesh, class T, std::size_t N>
void apply_step(const Mesh& mesh, const relayout_step& s, const T* src,
                const std::array<std::size_t, N>& ext, T* dst) {
  run_on_axis<Mesh>(s.mesh_dim, [&]<class M>(M*) {
    const std::size_t p = static_cast<std::size_t>(mesh.template size<M>());
    const std::size_t c = static_cast<std::size_t>(mesh.template coordinate<M>());
    const std::array<std::size_t, N> zero{};
    const auto out_ext = extent_after(mesh, s, ext);
    const std::size_t count = element_count(ext);
    auto at = [&](int d, std::size_t i) {
      auto a = zero;
      a[static_cast<std::size_t>(d)] = i;
      return a;
    };
    if (s.kind == relayout_step_kind::slice) {
      // [b] |-> [b/m]   keep this rank's stripe of b
      copy_box(src, ext, at(s.arriving, c * out_ext[s.arriving]), dst, out_ext, zero, out_ext);
    } else if (s.kind == relayout_step_kind::allgather) {
      // [a/m] |-> [a]   gather the stripes of a, in coordinate order
      const bool in_place = outermost(out_ext, s.leaving);
      scratch<T> blocks(in_place ? 0 : count * p);
      T* gathered = in_place ? dst : blocks.data();
      allgather<over<M>>::run(mesh, std::span<const T>(src, count),
                              std::span<T>(gathered, count * p));
      if (!in_place) {
        for (std::size_t j = 0; j < p; ++j) {
          copy_box(blocks.data() + j * count, ext, zero, dst, out_ext,
                   at(s.leaving, j * ext[s.leaving]), ext);
        }
      }
    } else {
      // [a/m, b] |-> [a, b/m]   block j of b to member j; member j's stripe of a back
      auto chunk = ext;
      chunk[s.arriving] /= p;
      const std::size_t chunk_size = element_count(chunk);
      const bool send_in_place = outermost(ext, s.arriving);
      const bool recv_in_place = outermost(out_ext, s.leaving);
      scratch<T> packed(send_in_place ? 0 : count), received(recv_in_place ? 0 : count);
      if (!send_in_place) {
        for (std::size_t j = 0; j < p; ++j) {
          copy_box(src, ext, at(s.arriving, j * chunk[s.arriving]), packed.data() + j * chunk_size,
                   chunk, zero, chunk);
        }
      }
      T* into = recv_in_place ? dst : received.data();
      alltoall<over<M>>::run(mesh, std::span<const T>(send_in_place ? src : packed.data(), count),
                             std::span<T>(into, count));
      if (!recv_in_place) {
        for (std::size_t j = 0; j < p; ++j) {
          copy_box(received.data() + j * chunk_size, chunk, zero, dst, out_ext,
                   at(s.leaving, j * chunk[s.leaving]), chunk);
        }
      }
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
    constexpr auto plan =
        detail::plan_relayout(detail::assignment<S, typename Tensor::layout_type, axes>(),
                              detail::assignment<S, to_layout, axes>());
    // Steps run from buffer to buffer; the last writes straight into the result.
    result_t out(t.mesh(), t.sizes(), result_t::uninitialized);
    detail::scratch<T> current, next;
    const T* src = t.local().data();
    auto ext = t.local_shape();
    for (std::size_t i = 0; i < plan.count; ++i) {
      const auto out_ext = detail::extent_after(t.mesh(), plan.steps[i], ext);
      T* dst = out.local().data();
      if (i + 1 < plan.count) {
        next.resize(detail::element_count(out_ext));
        dst = next.data();
      }
      detail::apply_step(t.mesh(), plan.steps[i], src, ext, dst);
      std::swap(current, next);  // scratch: no zeroing, no copying
      src = current.data();
      ext = out_ext;
    }
    return out;
  }
}

}  // namespace meshpp
