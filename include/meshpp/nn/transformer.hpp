// meshpp/nn/transformer.hpp — a Transformer block: self-attention and a ReLU feed-forward
// layer, each behind a layer normalisation and added back to its input (pre-normalisation, as
// Mesh-TensorFlow's and tensor2tensor's Transformers).
//
//   using dims = mp::nn::transformer_dims<length, memory_length, d_model, heads, d_k, d_v, d_ff>;
//   mp::nn::transformer_block<float, mesh_t, dims> block(mesh, sizes, /*seed*/ 11);
//   x = block(x);                // x [batch, length, d_model] -> traced, the same dims
//   mp::add_variables(optimizer, block);
//
//   x = x + attention(layer_norm(x))                            nn/attention.hpp
//   x = x + dense<d_ff -> d_model>(relu(dense<d_model -> d_ff>(layer_norm(x))))
// with dropout (rate `residual_dropout`) on each branch before the sum when training.
// Communication beyond the attention's (see nn/attention.hpp): the second dense layer contracts
// d_ff: with d_ff split over cols (the paper's model-parallel layout), one allreduce over cols
// of the [batch, length, d_model] slice forward, and one for dx of the first layer backward; the
// layer norms and residual sums communicate nothing while d_model is whole.
//
// A split residual stream (Residual, e.g. layout<split<batch, all>> under heads:all and
// d_ff:all): the block's input and output, the layer norms, the residual sums and dropout
// are laid out by Residual, so each rank normalises and adds only its stripe of the stream
// rather than all of it on every rank; the stream is allgathered (relayout) before each
// branch, whose last product (the attention's output projection, contracting heads; the
// second dense layer, contracting d_ff) reduce_scatters its sums into Residual's layout
// instead of allreducing them (einsum<Out, OutRules>), the stream's element-wise work divided
// among the ranks (the idea of Megatron-LM's sequence parallelism, Korthikanti et al. 2022,
// here over any dim of the stream). Forward, a reduce_scatter and an allgather move an
// allreduce's bytes. Backward is the transpose, as Megatron's: the gathers' adjoints
// reduce_scatter the branch inputs' partial gradients into the split stream (deferred partial
// sums reaching a split tensor, autodiff/traced.hpp), and the reduce_scatters' adjoints
// allgather the stream's gradient; the layer norms' and the second dense layer's bias
// gradients (vectors of d_model) are summed over Residual's mesh dims.
#pragma once

#include <cstdint>
#include <string>
#include <tuple>
#include <type_traits>

#include "meshpp/autodiff/elementwise.hpp"
#include "meshpp/autodiff/movement.hpp"
#include "meshpp/core/layout.hpp"
#include "meshpp/core/shape.hpp"
#include "meshpp/nn/attention.hpp"
#include "meshpp/nn/dense.hpp"
#include "meshpp/nn/dropout.hpp"
#include "meshpp/nn/embedding.hpp"
#include "meshpp/nn/layer_norm.hpp"

namespace meshpp::nn {

// The layers of meshpp, under the nn namespace too
using meshpp::dense;
using meshpp::dropout_layer;
using meshpp::embedding;
using meshpp::layer_norm_layer;

/// @brief The dims of a Transformer block: those of attention_dims, and Hidden, the
/// feed-forward layer's inner dim (d_ff).
template <class Length, class Memory, class Model, class Heads, class Key, class Value,
          class Hidden>
struct transformer_dims : attention_dims<Length, Memory, Model, Heads, Key, Value> {
  using hidden = Hidden;
};

/// Options of transformer_block: the attention's, and dropout on each residual branch.
struct block_options {
  attention_options attention{};
  double residual_dropout = 0.0;
};

/// @brief A pre-normalisation Transformer block; see the top of this header.
/// @tparam T    element type (float, double)
/// @tparam Mesh the mesh; every variable is laid out by its rules
/// @tparam Dims transformer_dims<...>
/// @tparam Residual the rules of the residual stream (see the top of this header), or void:
///   laid out as the mesh lays it out
template <class T, class Mesh, class Dims, class Residual = void>
class transformer_block {
  using Model = typename Dims::model;
  using Hidden = typename Dims::hidden;
  static_assert(std::is_void_v<Residual> || is_layout_v<Residual>,
                "meshpp::nn::transformer_block<T, Mesh, Dims, Residual>: Residual must be a "
                "layout<...> of rules, or void");

 public:
  using value_type = T;

  // transformer_block(mesh, sizes, seed, options = {}, name = "block"): sizes must give the
  // attention's dims and Hidden. Seeds: seed .. seed + 3 the attention, + 4 and + 5 the dense
  // layers, + 6 the residual dropout.
  template <class... E>
  transformer_block(const Mesh& m, const extents<E...>& sizes, std::uint64_t seed,
                    block_options options = {}, std::string name = "block")
      : norm1_(m, sizes, 1e-5, name + "/norm1"),
        attention_(m, sizes, seed, options.attention, name + "/attention"),
        norm2_(m, sizes, 1e-5, name + "/norm2"),
        expand_(m, sizes, seed + 4, name + "/expand"),
        contract_(m, sizes, seed + 5, name + "/contract"),
        residual_dropout_(options.residual_dropout),
        seed_(seed + 6) {
    detail::check_dropout_rate(options.residual_dropout);
  }

  // block(x): x [..., Length, Model] (traced or plain) -> traced, x's dims in x's order
  // With Residual, x is laid out by it (relayout<Residual>(x) first, a free slice where x is
  // whole) and so is the result.
  template <class In>
  auto operator()(const In& x) const {
    if constexpr (std::is_void_v<Residual>) {
      auto a = attention_(norm1_(x));
      auto h = x + branch(a);
      auto f = contract_(expand_(norm2_(h)));
      return h + branch(f);
    } else {
      using XS = typename std::remove_cvref_t<In>::shape_type;
      static_assert(
          std::is_same_v<typename std::remove_cvref_t<In>::layout_type, layout_for_t<Residual, XS>>,
          "meshpp::nn::transformer_block<..., Residual>(x): x must be laid out by "
          "Residual (relayout<Residual>(x) first)");
      auto a = attention_.template apply<Residual>(whole(norm1_(x)));
      auto h = x + branch(a);
      auto f = contract_.template apply<Residual>(expand_(whole(norm2_(h))));
      return h + branch(f);
    }
  }

  // the layers, for inspection and for optimizers that treat them apart
  const layer_norm_layer<T, Model, Mesh>& norm1() const { return norm1_; }
  const multihead_attention<T, Mesh, Dims>& attention() const { return attention_; }
  multihead_attention<T, Mesh, Dims>& attention() { return attention_; }
  const layer_norm_layer<T, Model, Mesh>& norm2() const { return norm2_; }
  const dense<T, shape<Model>, shape<Hidden>, Mesh, activation::relu>& expand() const {
    return expand_;
  }
  const dense<T, shape<Hidden>, shape<Model>, Mesh>& contract() const { return contract_; }

  // variables(): norm1's, the attention's, norm2's, then the two dense layers'
  auto variables() const {
    return std::tuple_cat(norm1_.variables(), attention_.variables(), norm2_.variables(),
                          expand_.variables(), contract_.variables());
  }

  // set_inference(on): dropout off (evaluation, generation) or on (training)
  void set_inference(bool on) {
    inference_ = on;
    attention_.set_inference(on);
  }

 private:
  // whole(y): y relayouted to the mesh's own layout of its dims (an allgather over Residual's
  // mesh dims)
  template <class Y>
  static auto whole(const Y& y) {
    return relayout<typename Mesh::template layout_for<typename Y::shape_type>>(y);
  }

  template <class B>
  B branch(const B& b) const {
    if (residual_dropout_ == 0.0 || inference_) return b;
    return dropout(b, residual_dropout_, seed_, step_++);
  }

  layer_norm_layer<T, Model, Mesh> norm1_;
  multihead_attention<T, Mesh, Dims> attention_;
  layer_norm_layer<T, Model, Mesh> norm2_;
  dense<T, shape<Model>, shape<Hidden>, Mesh, activation::relu> expand_;
  dense<T, shape<Hidden>, shape<Model>, Mesh> contract_;
  double residual_dropout_;
  std::uint64_t seed_;
  bool inference_ = false;
  mutable std::uint64_t step_ = 0;
};

}  // namespace meshpp::nn
