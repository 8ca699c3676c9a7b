// meshpp/nn/attention.hpp — multi-head self-attention over named dims (Vaswani et al. 2017;
// Mesh-TensorFlow paper section 9), with an optional causal mask and dropout.
//
//   using dims = mp::nn::attention_dims<length, memory_length, d_model, heads, d_k, d_v>;
//   mp::nn::multihead_attention<float, mesh_t, dims> attend(mesh, sizes, /*seed*/ 7);
//   auto y = attend(x);          // x [batch, length, d_model], traced or plain -> traced, x's dims
//   mp::add_variables(optimizer, attend);   // wq, wk, wv, wo
//
// Memory is a second name for the positions, the keys' and values' position dim: the scores
// s[heads, length, memory_length] need both at once, and names are types. With X the dims of x
// other than Length and Model (batch, ...), and x_m = rename<Length, Memory>(x):
//   q = einsum(x,   wq[Model, Heads, Key])   / sqrt(d_k)    [X, Length, Heads, Key]
//   k = einsum(x_m, wk[Model, Heads, Key])                  [X, Memory, Heads, Key]
//   v = einsum(x_m, wv[Model, Heads, Value])                [X, Memory, Heads, Value]
//   s = einsum(q, k)                                        [X, Heads, Length, Memory]
//   p = softmax<Memory>(s, memory <= length) (causal; else softmax<Memory>(s)), then dropout
//   o = einsum(p, v)                                        [X, Length, Heads, Value]
//   y = einsum(o, wo[Heads, Value, Model])                  [x's dims]
// s, p and o are one fused operation (nn/fused_attention.hpp: a head of a sequence at a time,
// its scores in cache; the same results exactly) where Length, Memory, Key and Value are whole
// on every rank and no dropout is drawn; else the operations above, one by one.
// Communication, as the layouts imply (the paper's model-parallel layout splits Heads over cols,
// its data-parallel one the batch over rows):
//   q, k, v, s, p, o   local: every einsum keeps Heads (and the batch) in its output
//   y                  contracts Heads: allreduce over cols of the [X, Length, Model] slice
//   backward           dx sums three einsums that contract Heads (q, k, v): their partial sums
//                      add up locally, then one allreduce over cols (deferred sums,
//                      autodiff/traced.hpp); dwq..dwo contract the batch: partial sums over
//                      rows, summed in backward()'s bucket (the data-parallel gradient sum)
// The weights are Glorot-uniform from the seed (seed, seed + 1, seed + 2, seed + 3 for wq, wk,
// wv, wo), generated from the global index: the same under every layout and rank count.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <tuple>
#include <type_traits>

#include "meshpp/autodiff/einsum.hpp"
#include "meshpp/autodiff/elementwise.hpp"
#include "meshpp/autodiff/movement.hpp"
#include "meshpp/autodiff/softmax.hpp"
#include "meshpp/autodiff/traced.hpp"
#include "meshpp/core/blocks.hpp"
#include "meshpp/core/create.hpp"
#include "meshpp/core/shape.hpp"
#include "meshpp/nn/dropout.hpp"
#include "meshpp/nn/fused_attention.hpp"

namespace meshpp::nn {

/// @brief The dims self-attention works with, by role.
/// @tparam Length the query position dim (x has it)
/// @tparam Memory the key and value position dim (a second name for the positions)
/// @tparam Model  the model dim (x has it)
/// @tparam Heads  the attention heads
/// @tparam Key    per head: the query and key size (d_k)
/// @tparam Value  per head: the value size (d_v)
template <class Length, class Memory, class Model, class Heads, class Key, class Value>
struct attention_dims {
  using length = Length;
  using memory = Memory;
  using model = Model;
  using heads = Heads;
  using key = Key;
  using value = Value;
};

/// Options of multihead_attention: a causal mask (each position attends to itself and the
/// positions before it), and dropout of the attention probabilities (0: none).
struct attention_options {
  bool causal = true;
  double dropout = 0.0;
};

/// @brief Multi-head self-attention: see the top of this header for what it computes and
/// communicates.
/// @tparam T    element type (float, double)
/// @tparam Mesh the mesh; the weights are laid out by its rules
/// @tparam Dims attention_dims<...> (or a type with the same member types)
template <class T, class Mesh, class Dims>
class multihead_attention {
  using Length = typename Dims::length;
  using Memory = typename Dims::memory;
  using Model = typename Dims::model;
  using Heads = typename Dims::heads;
  using Key = typename Dims::key;
  using Value = typename Dims::value;

 public:
  using value_type = T;
  using query_weight_type = tensor_of<T, shape<Model, Heads, Key>, Mesh>;
  using value_weight_type = tensor_of<T, shape<Model, Heads, Value>, Mesh>;
  using output_weight_type = tensor_of<T, shape<Heads, Value, Model>, Mesh>;

  // multihead_attention(mesh, sizes, seed, options = {}, name = "attention"): sizes must give
  // Length, Model, Heads, Key and Value (Memory is taken as Length's size)
  template <class... E>
  multihead_attention(const Mesh& m, const extents<E...>& sizes, std::uint64_t seed,
                      attention_options options = {}, std::string name = "attention")
      : wq_(glorot<query_weight_type>(m, sizes, seed), name + "/wq"),
        wk_(glorot<query_weight_type>(m, sizes, seed + 1), name + "/wk"),
        wv_(glorot<value_weight_type>(m, sizes, seed + 2), name + "/wv"),
        wo_(glorot<output_weight_type>(m, sizes, seed + 3), name + "/wo"),
        options_(options),
        seed_(seed) {
    detail::check_dropout_rate(options.dropout);
  }

  // attend(x): x [X..., Length, Model] (traced or plain) -> traced, x's dims in x's order.
  // Dropout (when its rate is not 0 and inference is false) draws a new mask each call.
  template <class In>
  auto operator()(const In& x) const {
    return apply<void>(x);
  }

  // apply<OutRules>(x): the same, the result laid out by OutRules (void: as the mesh lays it
  // out); the output projection contracts Heads, so OutRules splitting a dim of x over Heads'
  // mesh dim reduce_scatters its sums instead of allreducing them (einsum<Out, OutRules>)
  template <class OutRules, class In>
  auto apply(const In& x) const {
    using XS = typename std::remove_cvref_t<In>::shape_type;
    static_assert(contains_v<XS, Length> && contains_v<XS, Model>,
                  "meshpp::nn::multihead_attention(x): x must have the Length and Model dims");
    static_assert(!contains_v<XS, Memory> && !contains_v<XS, Heads> && !contains_v<XS, Key> &&
                      !contains_v<XS, Value>,
                  "meshpp::nn::multihead_attention(x): x must not have the Memory, Heads, Key "
                  "or Value dims");
    using rest = shape_difference_t<XS, shape<Length, Model>>;
    // q, k, v and o keep the heads beside the features ([X, Length, Heads, Key]), as the
    // projections' gemms write them for an x stored [X..., Length, Model]: the products per
    // head read and write them in place, as matrices whose rows lie Heads x Key apart
    // (ops/einsum.hpp), and no einsum of the layer, forward or backward, copies an operand or
    // a result into another order (x in another order is copied where it is read)
    using q_shape = shape_concat_t<rest, shape<Length, Heads, Key>>;
    using k_shape = shape_concat_t<rest, shape<Memory, Heads, Key>>;
    using v_shape = shape_concat_t<rest, shape<Memory, Heads, Value>>;
    using s_shape = shape_concat_t<rest, shape<Heads, Length, Memory>>;
    using o_shape = shape_concat_t<rest, shape<Length, Heads, Value>>;

    const auto scale =
        static_cast<T>(1.0 / std::sqrt(static_cast<double>(wq_.value().template extent<Key>())));
    const auto q = einsum<q_shape>(x, wq_) * scale;
    const auto xm = rename<Length, Memory>(x);
    const auto k = einsum<k_shape>(xm, wk_);
    const auto v = einsum<v_shape>(xm, wv_);
    const auto project = [this](const auto& o) {
      if constexpr (std::is_void_v<OutRules>)
        return einsum<XS>(o, wo_);
      else
        return einsum<XS, OutRules>(o, wo_);
    };
    // scores, softmax and the values' weighted sum a head of a sequence at a time, in cache
    // (nn/fused_attention.hpp), where each rank holds whole heads of whole sequences and no
    // dropout is drawn; else the operations one by one, as the layouts imply
    using QT = typename std::remove_cvref_t<decltype(q)>::tensor_type;
    using KT = typename std::remove_cvref_t<decltype(k)>::tensor_type;
    using VT = typename std::remove_cvref_t<decltype(v)>::tensor_type;
    // (q, k and v laid out by the mesh's rules: x may be laid out otherwise, and then so are
    // they, which the tiles do not index)
    if constexpr (detail::fused_attention_fits_v<Length, Memory, Key, Value, QT, KT, VT>) {
      if (options_.dropout == 0 || inference) {
        return project(
            detail::fused_attention<Length, Memory, Heads, Key, Value>(q, k, v, options_.causal));
      }
    }
    auto s = einsum<s_shape>(q, k);
    // the causal mask applied inside softmax: one recorded step, no mask tensor, each row of
    // the scores read only as far as it is seen
    auto p = options_.causal ? softmax<Memory>(s, causal<Length>{}) : softmax<Memory>(s);
    if (options_.dropout > 0 && !inference) {
      p = dropout(p, options_.dropout, seed_, step_++);
    }
    return project(einsum<o_shape>(p, v));
  }

  // causal_mask(s): memory <= length, a bool tensor [Memory, Length] of the scores' sizes: the
  // mask attention applies (as causal<Length> inside softmax, without this tensor), for a
  // caller that needs it as a tensor
  template <class S>
  auto causal_mask(const S& s) const {
    const auto sizes = s.sizes();
    using M = typename S::mesh_type;  // s's sizes agree on every rank: no agreement needed
    return eval(detail::iota_agreed<tensor_of<std::int32_t, shape<Memory>, M>>(s.mesh(), sizes) <=
                detail::iota_agreed<tensor_of<std::int32_t, shape<Length>, M>>(s.mesh(), sizes));
  }

  // wq(), wk(), wv(), wo(): the variables (handles: copies share the value and the gradient)
  const variable<query_weight_type>& wq() const { return wq_; }
  const variable<query_weight_type>& wk() const { return wk_; }
  const variable<value_weight_type>& wv() const { return wv_; }
  const variable<output_weight_type>& wo() const { return wo_; }
  variable<query_weight_type>& wq() { return wq_; }
  variable<query_weight_type>& wk() { return wk_; }
  variable<value_weight_type>& wv() { return wv_; }
  variable<output_weight_type>& wo() { return wo_; }
  const attention_options& options() const { return options_; }

  // variables(): (wq, wk, wv, wo)
  auto variables() const { return std::tuple(wq_, wk_, wv_, wo_); }

  // inference: true turns dropout off (evaluation, generation); set_inference(on) sets it
  bool inference = false;
  void set_inference(bool on) { inference = on; }

 private:
  // glorot<W>(mesh, sizes, seed): U(-l, l), l = sqrt(6 / (fan_in + fan_out)); the fan-in is
  // the size of the dims W shares with x's side (Model for wq, wk, wv; Heads x Value for wo)
  template <class W, class... E>
  static W glorot(const Mesh& m, const extents<E...>& sizes, std::uint64_t seed) {
    using WS = typename W::shape_type;
    using in = std::conditional_t<std::is_same_v<dim_at_t<WS, 0>, Model>, shape<Model>,
                                  shape<Heads, Value>>;
    const auto all = static_cast<double>(detail::element_count(sizes.template sizes_of<WS>()));
    const auto fan_in = static_cast<double>(detail::element_count(sizes.template sizes_of<in>()));
    const double limit = std::sqrt(6.0 / (fan_in + all / fan_in));
    return random_uniform<W>(m, sizes, seed, static_cast<T>(-limit), static_cast<T>(limit));
  }

  variable<query_weight_type> wq_, wk_;
  variable<value_weight_type> wv_;
  variable<output_weight_type> wo_;
  attention_options options_;
  std::uint64_t seed_;
  mutable std::uint64_t step_ = 0;
};

}  // namespace meshpp::nn
