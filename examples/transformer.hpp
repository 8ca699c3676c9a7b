// transformer.hpp: the language model, its data and its training loop for
// examples/transformer.cpp (which says what it does). run<Mesh, Residual> is compiled once per
// layout, each in its own translation unit (transformer_data.cpp, transformer_model.cpp,
// transformer_data_model.cpp, transformer_model_residual.cpp, and their _blocks and _run
// parts), so that no translation unit holds two layouts.
#pragma once

#include <meshpp/io/text.hpp>
#include <meshpp/meshpp.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

namespace mp = meshpp;

// tensor dims
MESHPP_DIM(batch);
MESHPP_DIM(length);
MESHPP_DIM(memory_length);
MESHPP_DIM(d_model);
MESHPP_DIM(heads);
MESHPP_DIM(d_k);
MESHPP_DIM(d_v);
MESHPP_DIM(d_ff);
MESHPP_DIM(vocab);
// mesh dims
MESHPP_DIM(all);
MESHPP_DIM(rows);
MESHPP_DIM(cols);

namespace transformer_example {

struct options {
#ifdef MESHPP_DEFAULT_TEXT
  std::string data = MESHPP_DEFAULT_TEXT;
#else
  std::string data = "kjv.txt";
#endif
  std::string layout = "data";
  std::string optimizer = "adam";
  std::size_t layers = 2, d_model = 128, heads = 4, d_ff = 512, seq = 128, batch = 32;
  std::size_t steps = 3000, warmup = 100, log_every = 50;
  double learning_rate = 2e-3;     // the peak, after warmup; cosine decay to a tenth at the end
  std::size_t eval_windows = 512;  // validation windows of seq characters (0: none)
  // the held-out 5%: blocks of this many characters from every part of the text (every 20th
  // block); 0: the last 5% in one piece
  std::size_t validation_block = 16384;
  // the vocab dim's size is the alphabet's rounded up to a multiple of this (1: unpadded, split
  // unevenly where the mesh dim does not divide it)
  std::size_t pad_vocab = 8;
  std::string prompt = "And God said";
  std::size_t sample_length = 200;
  double temperature = 0.8;
  std::uint64_t seed = 1;
  bool json = false;
  std::string checkpoint;            // a file: saved every checkpoint_every steps and at the end
  std::size_t checkpoint_every = 0;  // 0: at the end only
  bool resume = false;               // start from the checkpoint (any layout, any rank count)
  std::size_t stop_after = 0;        // > 0: stop after this step (saving first), as if preempted
  // --profile: time every operation of the steps after this run's first, and print them beside
  // the plan's prediction on the machine model in `machine` (README "Prediction against what
  // ran")
  bool profile = false;
  std::string machine = "meshpp-machine.txt";  // the model --layout auto and --profile price on
};

using dims = mp::nn::transformer_dims<length, memory_length, d_model, heads, d_k, d_v, d_ff>;
using sizes_t = mp::extents<batch, length, memory_length, d_model, heads, d_k, d_v, d_ff, vocab>;

inline sizes_t model_sizes(const options& o, std::size_t batch_size, std::size_t vocab_size) {
  return sizes_t{batch{} = batch_size,        length{} = o.seq,  memory_length{} = o.seq,
                 d_model{} = o.d_model,       heads{} = o.heads, d_k{} = o.d_model / o.heads,
                 d_v{} = o.d_model / o.heads, d_ff{} = o.d_ff,   vocab{} = vocab_size};
}

// stream_of<Residual, Hidden>::type: Hidden laid out by the rules Residual (void: Hidden itself)
template <class Residual, class Hidden>
struct stream_of {
  using type = mp::tensor<typename Hidden::value_type, typename Hidden::shape_type,
                          mp::layout_for_t<Residual, typename Hidden::shape_type>,
                          typename Hidden::mesh_type>;
};
template <class Hidden>
struct stream_of<void, Hidden> {
  using type = Hidden;
};

/// The decoder-only language model: token and position embeddings, `layers` Transformer
/// blocks, a final layer norm, and an unembedding to vocab logits. Residual: the rules of the
/// blocks' residual stream (nn/transformer.hpp), or void: as the mesh lays it out.
template <class Mesh, class Residual = void>
struct language_model {
  using ids_t = mp::tensor_of<std::int32_t, mp::shape<batch, length>, Mesh>;
  using positions_t = mp::tensor_of<float, mp::shape<length, d_model>, Mesh>;
  using logits_t = mp::tensor_of<float, mp::shape<batch, length, vocab>, Mesh>;
  using loss_t = mp::tensor_of<float, mp::shape<>, Mesh>;
  using hidden_t = mp::tensor_of<float, mp::shape<batch, length, d_model>, Mesh>;
  // the blocks' residual stream: hidden_t, or laid out by Residual
  using stream_t = typename stream_of<Residual, hidden_t>::type;
  using block_t = mp::nn::transformer_block<float, Mesh, dims, Residual>;

  mp::embedding<float, vocab, mp::shape<d_model>, Mesh> tokens;
  mp::variable<positions_t> positions;
  std::vector<block_t> blocks;
  mp::layer_norm_layer<float, d_model, Mesh> final_norm;
  mp::dense<float, mp::shape<d_model>, mp::shape<vocab>, Mesh, mp::activation::identity, false>
      unembed;

  language_model(const Mesh& m, const sizes_t& sizes, const options& o)
      : tokens(m, sizes, o.seed, "tokens"),
        positions(mp::random_normal<positions_t>(
                      m, sizes, o.seed + 1, 0.0f,
                      static_cast<float>(1.0 / std::sqrt(static_cast<double>(o.d_model)))),
                  "positions"),
        final_norm(m, sizes, 1e-5, "final_norm"),
        unembed(m, sizes, o.seed + 2, "unembed") {
    for (std::size_t i = 0; i < o.layers; ++i)
      blocks.emplace_back(m, sizes, o.seed + 100 * (i + 1), mp::nn::block_options{},
                          "block" + std::to_string(i));
  }

  // logits(ids): ids [batch, length] -> traced logits [batch, length, vocab] (defined in
  // transformer_run.hpp, compiled with each layout)
  mp::traced<logits_t> logits(const ids_t& ids) const;
  // loss(ids, targets): the mean cross-entropy of the next characters, traced (a scalar)
  mp::traced<loss_t> loss(const ids_t& ids, const ids_t& targets) const;
  // through_blocks(x): the stream x [batch, length, d_model] through every block in turn,
  // returned as the mesh lays it out (defined in transformer_blocks.hpp and compiled in a
  // translation unit of its own)
  mp::traced<hidden_t> through_blocks(const mp::traced<stream_t>& x) const;

  template <class Optimizer>
  void add_to(Optimizer& opt) const {
    mp::add_variables(opt, tokens);
    opt.add(positions);
    for (const auto& b : blocks) mp::add_variables(opt, b);
    mp::add_variables(opt, final_norm, unembed);
  }
};

// optimizer_for(o, model): the optimizer --optimizer names, holding every variable of model
// (behind the base class, so the training loop is compiled once)
template <class Model>
std::unique_ptr<mp::optimizer> optimizer_for(const options& o, const Model& model) {
  auto holding_all = [&](auto opt) {
    model.add_to(*opt);
    return std::unique_ptr<mp::optimizer>(std::move(opt));
  };
  if (o.optimizer == "sgd")
    return holding_all(
        std::make_unique<mp::sgd>(mp::sgd_options{.learning_rate = o.learning_rate}));
  return holding_all(
      std::make_unique<mp::adam>(mp::adam_options{.learning_rate = o.learning_rate}));
}

// planned_step<Mesh>(m, o, vocab, steady): one training step as a plan runs it (on a planned
// mesh m): the model made, the loss, backward and the optimizer (the ids are a tensor of the
// right sizes: a plan reads none). With steady, a first step is taken and the counters reset
// before the step counted, so the plan is of a step after the first, as a timed run measures:
// neither the model's variables nor the optimizer's slots are made in it.
template <class Mesh, class Residual = void>
void planned_step(const Mesh& m, const options& o, std::size_t vocab, bool steady = false) {
  const auto sizes = model_sizes(o, o.batch, vocab);
  const language_model<Mesh, Residual> model(m, sizes, o);
  const typename language_model<Mesh, Residual>::ids_t ids(m, sizes);
  const auto opt = optimizer_for(o, model);
  for (int step = steady ? 0 : 1; step < 2; ++step) {
    if (step == 1 && steady) m.counters().reset();
    mp::backward(model.loss(ids, ids));
    opt->step();
  }
}

// run<Mesh>(mesh, text, o): trains, evaluates and samples; prints as examples/transformer.cpp
// says
template <class Mesh, class Residual = void>
void run(const Mesh& mesh, const mp::text_corpus& text, const options& o);

}  // namespace transformer_example

// The three layouts of the Mesh-TensorFlow paper's section 9 (the mesh fitted to the ranks)
using mesh_data = mp::mesh<mp::axes<all>, mp::layout<mp::split<batch, all>>>;
using mesh_model =
    mp::mesh<mp::axes<all>,
             mp::layout<mp::split<vocab, all>, mp::split<d_ff, all>, mp::split<heads, all>>>;
using mesh_data_model =
    mp::mesh<mp::axes<rows, cols>, mp::layout<mp::split<batch, rows>, mp::split<vocab, cols>,
                                              mp::split<d_ff, cols>, mp::split<heads, cols>>>;
// model+residual: the model layout's mesh, with the blocks' residual stream [batch, length,
// d_model] split over batch across the same ranks (nn/transformer.hpp, Residual)
using residual_over_all = mp::layout<mp::split<batch, all>>;

// Compiled in transformer_<layout>.cpp (the model's objects, which the tests link too), so that
// a program including this header compiles none of it again.
namespace transformer_example {
extern template struct language_model<mesh_data>;
extern template struct language_model<mesh_model>;
extern template struct language_model<mesh_data_model>;
extern template struct language_model<mesh_model, residual_over_all>;
extern template void run(const mesh_data&, const mp::text_corpus&, const options&);
extern template void run(const mesh_model&, const mp::text_corpus&, const options&);
extern template void run(const mesh_data_model&, const mp::text_corpus&, const options&);
extern template void run<mesh_model, residual_over_all>(const mesh_model&, const mp::text_corpus&,
                                                        const options&);
// planned_step of each layout, compiled beside its run<Mesh> (transformer_<layout>_run.cpp):
// the plans, layout searches and --profile of transformer.cpp and run<Mesh> share them
extern template void planned_step(const mesh_data&, const options&, std::size_t, bool);
extern template void planned_step(const mesh_model&, const options&, std::size_t, bool);
extern template void planned_step(const mesh_data_model&, const options&, std::size_t, bool);
extern template void planned_step<mesh_model, residual_over_all>(const mesh_model&, const options&,
                                                                 std::size_t, bool);
}  // namespace transformer_example
