// meshpp/nn/fused_attention.hpp — the core of multi-head attention, scores, softmax and the
// weighted sum of the values, one head of one sequence at a time while its scores are in cache.
//
//   auto o = mp::detail::fused_attention<Length, Memory, Heads, Key, Value>(q, k, v, causal);
//   // q [X, Length, Heads, Key] (scaled), k [X, Memory, Heads, Key], v [X, Memory, Heads, Value]
//   // -> o [X, Length, Heads, Value], traced; the same values as
//   //   p = softmax<Memory>(einsum<[X, Heads, Length, Memory]>(q, k), causal<Length>{})
//   //   o = einsum<[X, Length, Heads, Value]>(p, v)
//
// Why: unfused, each of attention's products reads or writes the scores [X, Heads, Length,
// Memory], which for a batch of sequences are larger than the caches (32 x 4 heads x 128 x 128
// floats are 8 MiB): the six products per block (two forward, four backward) and the softmax
// and its gradient each stream them from memory, and their small gemms (128 x 128 x 32) ran at
// half the rate they reach on operands in cache (docs/transformer.md). Here each head of
// each sequence is one tile: its scores are computed, turned into probabilities in place,
// stored, and multiplied by the values while they are in L2; backward reads each tile of the
// probabilities once and computes the gradients of the values, the scores and then the queries
// and keys while the tile's scores' gradient is in cache.
//
// The same arithmetic as the unfused layer, in the same order: the same gemm calls per tile
// (row-major; scores NT L x M x Key, output NN L x Value x M; backward dv TN M x Value x L, dp
// NT L x M x Value, dq NN L x Key x M, dk TN M x Key x L), the same rows of softmax and of its
// gradient (ops/softmax.hpp, autodiff/softmax.hpp): its results equal the unfused ones.
// multihead_attention uses it when Length, Memory, Key and Value are whole on every rank (the
// batch dims and Heads may be split: each rank's tiles are its own) and dropout is off; else it
// runs the unfused operations, which communicate what a split of those dims implies.
// Communication: none. Counters: its products are counted as einsums (record_einsum: their
// flops and gemm shapes, so plans and profiles price them), its probabilities as one pass
// written forward and one read backward. Where no gradient is recorded (no_grad, or no input
// requires one) the probabilities are not kept: each tile's go through one tile of scratch,
// and no pass is counted.
#pragma once

#include <algorithm>
#include <cstddef>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "meshpp/autodiff/record.hpp"
#include "meshpp/autodiff/softmax.hpp"
#include "meshpp/core/error.hpp"
#include "meshpp/core/layout.hpp"
#include "meshpp/core/shape.hpp"
#include "meshpp/core/tensor.hpp"
#include "meshpp/ops/einsum_kernel.hpp"
#include "meshpp/ops/operands.hpp"
#include "meshpp/ops/softmax.hpp"

namespace meshpp::detail {

// laid_out_by_mesh_rules_v<X>: X is the tensor type its mesh's rules give its shape
template <class X>
inline constexpr bool laid_out_by_mesh_rules_v = std::is_same_v<
    X, tensor_of<typename X::value_type, typename X::shape_type, typename X::mesh_type>>;

// fused_attention_fits_v<Length, Memory, Key, Value, Q, K, V>: q, k and v laid out by their
// mesh's rules (so their batch and heads slices are one another's and those of the
// probabilities and output, which the tiles index alike), none splitting Length, Memory, Key
// or Value (each tile, a head of a sequence, whole on one rank)
template <class Length, class Memory, class Key, class Value, class... Tensors>
inline constexpr bool fused_attention_fits_v =
    (... &&
     (laid_out_by_mesh_rules_v<Tensors> && !is_split_in_v<typename Tensors::layout_type, Length> &&
      !is_split_in_v<typename Tensors::layout_type, Memory> &&
      !is_split_in_v<typename Tensors::layout_type, Key> &&
      !is_split_in_v<typename Tensors::layout_type, Value>));

// attention_tiles: the sizes of one rank's tiles and where each lies. q, k, v and o are
// [X, position, Heads, d] (rows of a head lie Heads x d apart), p is [X, Heads, Length, Memory]
// (each tile a contiguous Length x Memory matrix).
struct attention_tiles {
  std::size_t sequences = 0, heads = 0, length = 0, memory = 0, key = 0, value = 0;

  std::size_t count() const { return sequences * heads; }
  // the first element of tile t (sequence t / heads, head t % heads) in each tensor
  std::size_t q(std::size_t t) const { return at(t, length, key); }
  std::size_t k(std::size_t t) const { return at(t, memory, key); }
  std::size_t v(std::size_t t) const { return at(t, memory, value); }
  std::size_t o(std::size_t t) const { return at(t, length, value); }
  std::size_t p(std::size_t t) const { return t * length * memory; }
  // seen(r, causal): the entries of score row r (a Length index) the softmax reads
  std::size_t seen(std::size_t r, bool causal) const {
    return causal ? std::min(memory, r + 1) : memory;
  }

 private:
  std::size_t at(std::size_t t, std::size_t positions, std::size_t d) const {
    return (t / heads) * positions * heads * d + (t % heads) * d;
  }
};

// tiles_of<Length>(q, k, v): the tiles of this rank's slices (q, k
// and v laid out by one mesh's rules and agreeing on the sizes of their shared dims, which
// fused_attention checks: their batch and heads slices are the same)
template <class Length, class Q, class K, class V>
attention_tiles tiles_of(const Q& q, const K& k, const V& v) {
  using QS = typename Q::shape_type;
  constexpr std::size_t at = index_of_v<QS, Length>;
  const auto& e = q.local_shape();
  attention_tiles t;
  t.sequences = 1;
  for (std::size_t d = 0; d < at; ++d) t.sequences *= e[d];
  t.length = e[at];
  t.heads = e[at + 1];
  t.key = e[at + 2];
  t.memory = k.local_shape()[at];
  t.value = v.local_shape()[at + 2];
  return t;
}

// attention_forward_tile(t, tiles, q, k, v, pt, o, causal): tile t's scores into pt (Length x
// Memory: its place in the kept probabilities, or a one-tile scratch), turned into
// probabilities row by row in place (as softmax<Memory>(s, causal<Length>{}) and
// softmax<Memory>(s) compute each row), then o = p v
template <class T>
void attention_forward_tile(std::size_t t, const attention_tiles& n, const T* q, const T* k,
                            const T* v, T* pt, T* o, bool causal) {
  const std::size_t ldq = n.heads * n.key, ldv = n.heads * n.value, m = n.memory;
  gemm<T>(false, true, n.length, m, n.key, q + n.q(t), ldq, k + n.k(t), ldq, pt, m);
  for (std::size_t r = 0; r < n.length; ++r) {
    T* row = pt + r * m;
    const std::size_t w = causal_columns<T>(m, n.seen(r, causal));
    std::fill(row + n.seen(r, causal), row + w, -std::numeric_limits<T>::infinity());
    const T scale = softmax_row(row, w);
    std::fill(row + w, row + m, T(0) * scale);
  }
  gemm<T>(false, false, n.length, n.value, m, pt, m, v + n.v(t), ldv, o + n.o(t), ldv);
}

// attention_backward_tile(t, tiles, q, k, v, p, g, ds, dq, dk, dv, causal): from o's gradient
// g: dv = p^T g; then, where dq or dk is wanted, dp = g v^T and ds = p (dp - sum dp p) row by
// row in the scratch ds (one tile), dq = ds k, dk = ds^T q. Null outputs are not wanted.
template <class T>
void attention_backward_tile(std::size_t t, const attention_tiles& n, const T* q, const T* k,
                             const T* v, const T* p, const T* g, T* ds, T* dq, T* dk, T* dv,
                             bool causal) {
  const std::size_t ldq = n.heads * n.key, ldv = n.heads * n.value, m = n.memory;
  const T* pt = p + n.p(t);
  if (dv) gemm<T>(true, false, m, n.value, n.length, pt, m, g + n.o(t), ldv, dv + n.v(t), ldv);
  if (!dq && !dk) return;
  gemm<T>(false, true, n.length, m, n.value, g + n.o(t), ldv, v + n.v(t), ldv, ds, m);
  for (std::size_t r = 0; r < n.length; ++r) {
    const std::size_t at = r * m;
    softmax_backward_row(pt + at, ds + at, ds + at, m, causal_columns<T>(m, n.seen(r, causal)));
  }
  if (dq) gemm<T>(false, false, n.length, n.key, m, ds, m, k + n.k(t), ldq, dq + n.q(t), ldq);
  if (dk) gemm<T>(true, false, m, n.key, n.length, ds, m, q + n.q(t), ldq, dk + n.k(t), ldq);
}

// requires_grad_of(x): x is traced and gradients can flow back through it (a plain tensor or
// expression: a constant)
template <class X>
bool requires_grad_of(const X& x) {
  if constexpr (is_traced_operand_v<X>)
    return x.requires_grad();
  else
    return false;
}

// fused_attention<Length, Memory, Heads, Key, Value>(q, k, v, causal): see the top of this
// header. q, k, v traced (or plain) tensors of one mesh, laid out by its rules, with
// fused_attention_fits_v; the result is o [X, Length, Heads, Value], traced.
template <class Length, class Memory, class Heads, class Key, class Value, class Q, class K,
          class V>
auto fused_attention(const Q& q, const K& k, const V& v, bool causal) {
  using QT = std::remove_cvref_t<decltype(handle_value(input_handle(q)))>;
  using T = typename QT::value_type;
  using Mesh = typename QT::mesh_type;
  using QS = typename QT::shape_type;
  using X = shape_difference_t<QS, shape<Length, Heads, Key>>;
  static_assert(std::is_same_v<QS, shape_concat_t<X, shape<Length, Heads, Key>>>,
                "meshpp::detail::fused_attention: q must be [X, Length, Heads, Key]");
  using KS = shape_concat_t<X, shape<Memory, Heads, Key>>;
  using VS = shape_concat_t<X, shape<Memory, Heads, Value>>;
  using KT = std::remove_cvref_t<decltype(handle_value(input_handle(k)))>;
  using VT = std::remove_cvref_t<decltype(handle_value(input_handle(v)))>;
  static_assert(
      std::is_same_v<typename KT::shape_type, KS> && std::is_same_v<typename VT::shape_type, VS> &&
          std::is_same_v<typename KT::value_type, T> && std::is_same_v<typename VT::value_type, T>,
      "meshpp::detail::fused_attention: q, k and v must be [X, Length, Heads, Key], "
      "[X, Memory, Heads, Key] and [X, Memory, Heads, Value] of one element type");
  static_assert(fused_attention_fits_v<Length, Memory, Key, Value, QT, KT, VT>,
                "meshpp::detail::fused_attention: q, k and v must be laid out by the mesh's "
                "rules, none splitting Length, Memory, Key or Value (each rank holds whole "
                "heads of whole sequences)");
  using PT = tensor_of<T, shape_concat_t<X, shape<Heads, Length, Memory>>, Mesh>;
  using OT = tensor_of<T, shape_concat_t<X, shape<Length, Heads, Value>>, Mesh>;
  // the probabilities, kept from forward for backward; where no gradient is recorded (a no_grad
  // scope, or no input that requires one) each tile's go through a one-tile scratch instead
  auto kept = std::make_shared<std::optional<PT>>();
  const bool keep =
      grad_enabled() && (requires_grad_of(q) || requires_grad_of(k) || requires_grad_of(v));

  const auto name = [] {
    return detail::listed_operation(
        operation_kind::attention, "attention",
        {dim_names_v<QS>, dim_names_v<KS>, dim_names_v<VS>, dim_names_v<typename OT::shape_type>});
  };
  // the products as einsums would count them: calls of one gemm shape per tile
  const auto count = [](const Mesh& mesh, std::size_t tiles, gemm_shape s) {
    mesh.counters().record_einsum(2ull * tiles * s.m * s.n * s.k, s, tiles);
  };

  auto forward = [kept, keep, causal, name, count](const auto& qv, const auto& kv, const auto& vv) {
    const Mesh& mesh = qv.mesh();
    // global sizes: the same on every rank, so any error is raised on all of them
    constexpr const char* what = "meshpp::nn::multihead_attention (fused attention)";
    check_operands<shape_concat_t<X, shape<Heads, Key>>>(what, "q and k", as_expression(qv),
                                                         as_expression(kv));
    check_operands<shape_concat_t<X, shape<Heads>>>(what, "q and v", as_expression(qv),
                                                    as_expression(vv));
    check_operands<shape<Memory>>(what, "k and v", as_expression(kv), as_expression(vv));
    const auto scope = mesh.counters().operation(name);
    const auto n = tiles_of<Length>(qv, kv, vv);
    OT o(mesh, sizes_from<typename OT::shape_type>(as_expression(qv), as_expression(vv)),
         OT::uninitialized);
    if (keep) {  // the probabilities, written in place tile by tile
      kept->emplace(mesh, sizes_from<typename PT::shape_type>(as_expression(qv), as_expression(kv)),
                    PT::uninitialized);
      mesh.counters().streamed([&] { return (*kept)->local().size() * sizeof(T); });
    }
    count(mesh, n.count(), {n.length, n.memory, n.key, false, true});
    count(mesh, n.count(), {n.length, n.value, n.memory, false, false});
    if (!mesh.planning()) {
      std::vector<T> scratch(keep ? 0 : n.length * n.memory);
      for (std::size_t t = 0; t < n.count(); ++t) {
        attention_forward_tile(t, n, qv.local().data(), kv.local().data(), vv.local().data(),
                               keep ? (*kept)->local().data() + n.p(t) : scratch.data(),
                               o.local().data(), causal);
      }
    }
    return o;
  };

  auto backward = [kept, causal, name, count](const OT&, const OT& g, const auto& qi,
                                              const auto& ki, const auto& vi) {
    const auto& qv = qi.value();
    const auto& kv = ki.value();
    const auto& vv = vi.value();
    const Mesh& mesh = qv.mesh();
    const auto scope = mesh.counters().operation(name);
    const auto n = tiles_of<Length>(qv, kv, vv);
    std::optional<QT> dq;
    std::optional<KT> dk;
    std::optional<VT> dv;
    if (qi.wants_grad()) dq.emplace(mesh, qv.sizes(), QT::uninitialized);
    if (ki.wants_grad()) dk.emplace(mesh, kv.sizes(), KT::uninitialized);
    if (vi.wants_grad()) dv.emplace(mesh, vv.sizes(), VT::uninitialized);
    if (!kept->has_value())  // keep above is record_node's own condition: not reached
      throw error(
          "meshpp: internal error: fused attention's backward step ran without the "
          "probabilities its forward step keeps");
    const PT& p = **kept;
    mesh.counters().streamed([&] { return p.local().size() * sizeof(T); });  // p read
    if (dv) count(mesh, n.count(), {n.memory, n.value, n.length, true, false});
    if (dq || dk) count(mesh, n.count(), {n.length, n.memory, n.value, false, true});
    if (dq) count(mesh, n.count(), {n.length, n.key, n.memory, false, false});
    if (dk) count(mesh, n.count(), {n.memory, n.key, n.length, true, false});
    if (!mesh.planning()) {
      std::vector<T> ds(dq || dk ? n.length * n.memory : 0);  // one tile's scores' gradient
      for (std::size_t t = 0; t < n.count(); ++t) {
        attention_backward_tile(
            t, n, qv.local().data(), kv.local().data(), vv.local().data(), p.local().data(),
            g.local().data(), ds.data(), dq ? dq->local().data() : nullptr,
            dk ? dk->local().data() : nullptr, dv ? dv->local().data() : nullptr, causal);
      }
    }
    if (dq) qi.add_grad(std::move(*dq));
    if (dk) ki.add_grad(std::move(*dk));
    if (dv) vi.add_grad(std::move(*dv));
  };
  return record(std::move(forward), std::move(backward), q, k, v);
}

}  // namespace meshpp::detail
