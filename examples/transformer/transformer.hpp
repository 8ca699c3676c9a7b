// transformer.hpp: the language model, its layouts and its training loop for
// examples/transformer/transformer.cpp (which says what it does). Every layout is compiled once,
// in transformer_layouts.cpp; this header declares what that file compiles, so the example's main,
// the tests and the bench that include it compile none of the model again.
#pragma once

#include <meshpp/io/text.hpp>
#include <meshpp/meshpp.hpp>
#include <meshpp/plan/choice.hpp>
#include <meshpp/plan/search.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#ifdef MESHPP_EXAMPLE_CHECKPOINTS
#include <meshpp/io/checkpoint.hpp>  // parallel HDF5 (CMake target meshpp::hdf5)
#endif

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
  double learning_rate = 2e-3;  // the peak, after warmup; cosine decay to a tenth at the end
  double clip_norm = 0;         // > 0: the gradients' global norm clipped to this before each step
  int shard = 0;  // mp::shard_level: 1 the optimizer state, 2 and the gradients, in shares
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
  // the plan's prediction on the machine model in `machine` (docs/plans.md, "Prediction against
  // what ran")
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
      : tokens(m, sizes, mp::seed_for(o.seed, "tokens"), "tokens"),
        positions(mp::random_normal<positions_t>(
                      m, sizes, mp::seed_for(o.seed, "positions"), 0.0f,
                      static_cast<float>(1.0 / std::sqrt(static_cast<double>(o.d_model)))),
                  "positions"),
        final_norm(m, sizes, 1e-5, "final_norm"),
        unembed(m, sizes, mp::seed_for(o.seed, "unembed"), "unembed") {
    for (std::size_t i = 0; i < o.layers; ++i) {
      const std::string name = "block" + std::to_string(i);
      blocks.emplace_back(m, sizes, mp::seed_for(o.seed, name), mp::nn::block_options{}, name);
    }
  }

  // layers(): the model's parts, for the optimizer, the checkpoint and the inference switch
  // (meshpp/autodiff/parameters.hpp)
  auto layers() const { return std::tie(tokens, positions, blocks, final_norm, unembed); }

  // logits(ids): ids [batch, length] -> traced logits [batch, length, vocab]. The embedding sum
  // is laid out as the blocks' stream: with Residual, the lookup (vocab split) reduce-scatters
  // its rows straight into the split stream, and positions add to each rank's stripe.
  mp::traced<logits_t> logits(const ids_t& ids) const {
    return unembed(final_norm(through_blocks(tokens.template apply<Residual>(ids) + positions)));
  }
  // loss(ids, targets): the mean cross-entropy of the next characters, traced (a scalar)
  mp::traced<loss_t> loss(const ids_t& ids, const ids_t& targets) const {
    return mp::reduce_mean(mp::softmax_cross_entropy<vocab>(logits(ids), targets));
  }
  // through_blocks(x): the stream x [batch, length, d_model] through every block in turn,
  // returned as the mesh lays it out
  mp::traced<hidden_t> through_blocks(const mp::traced<stream_t>& in) const {
    mp::traced<stream_t> x = in;
    for (const auto& b : blocks) x = b(x);
    if constexpr (std::is_void_v<Residual>) {
      return x;
    } else {
      // the split stream whole again after the last block (an allgather) for the final norm
      // and the unembedding
      return mp::relayout<typename hidden_t::layout_type>(x);
    }
  }
};

// optimizer_for(o, model): the optimizer --optimizer names, holding every variable of model
// (behind the base class, so the training loop is compiled once)
template <class Model>
std::unique_ptr<mp::optimizer> optimizer_for(const options& o, const Model& model) {
  auto holding_all = [&](auto opt) {
    opt->add(model);
    // what is kept in shares over the data-parallel ranks (an error, on every rank, where
    // nothing applies)
    opt->set_shard(static_cast<mp::shard_level>(o.shard));
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

namespace transformer_example {

// splitmix64 draw number i of the stream keyed by seed, as a double in [0, 1)
inline double uniform_draw(std::uint64_t seed, std::uint64_t i) {
  std::uint64_t z = seed * 0x9E3779B97F4A7C15ull + (i + 1) * 0xD1B54A32D192ED03ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  return static_cast<double>(z >> 11) * 0x1.0p-53;
}

// json_string(s): s as a JSON string literal
inline std::string json_string(const std::string& s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c == '\n') {
      out += "\\n";
    } else if (c < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + "\"";
}

// the learning rate of each step: linear warmup over --warmup steps to --learning-rate, then
// cosine decay to a tenth of it at step --steps (parse() keeps --warmup below --steps)
inline mp::warmup_cosine schedule_of(const options& o) {
  return mp::warmup_cosine(o.learning_rate, static_cast<std::int64_t>(std::min(o.warmup, o.steps)),
                           static_cast<std::int64_t>(o.steps), 0.1);
}

template <class Mesh, class Residual>
struct trainer {
  using model_t = language_model<Mesh, Residual>;
  using ids_t = typename model_t::ids_t;

  const Mesh& mesh;
  const mp::text_corpus& text;
  const options& o;
  sizes_t sizes;
  model_t model;

  trainer(const Mesh& m, const mp::text_corpus& t, const options& opt)
      : mesh(m),
        text(t),
        o(opt),
        sizes(model_sizes(opt, opt.batch, t.vocab_size())),
        model(m, sizes, opt) {}

  // ids [batch, length] from `ids` at `starts` (+ shift: 1 for the targets); each rank fills
  // its own slice only, from the global index
  ids_t window_of(const sizes_t& s, const std::vector<std::int32_t>& ids,
                  const std::vector<std::size_t>& starts, std::size_t shift) const {
    return mp::generate<ids_t>(mesh, s,
                               [&](const auto& i) { return ids[starts[i[0]] + i[1] + shift]; });
  }

  std::unique_ptr<mp::optimizer> make_optimizer() const { return optimizer_for(o, model); }

  // validation bits per character over up to o.eval_windows windows of the held-out text;
  // none if that makes fewer than one batch (--batch windows)
  std::optional<double> validation_bpc() const {
    const std::size_t window = o.seq + 1;
    const auto all = mp::evaluation_starts(text.validation_ids.size(), window, o.eval_windows);
    const std::size_t batches = all.size() / o.batch;
    if (batches == 0) return std::nullopt;
    mp::no_grad scope;
    double total = 0;
    for (std::size_t b = 0; b < batches; ++b) {
      const std::vector<std::size_t> starts(all.begin() + b * o.batch,
                                            all.begin() + (b + 1) * o.batch);
      const auto ids = window_of(sizes, text.validation_ids, starts, 0);
      const auto targets = window_of(sizes, text.validation_ids, starts, 1);
      const auto logits = model.logits(ids).value();
      total += static_cast<double>(
          mp::reduce_mean(mp::softmax_cross_entropy<vocab>(logits, targets)).item());
    }
    return total / static_cast<double>(batches) / std::log(2.0);
  }

  // o.sample_length characters after o.prompt, sampled at o.temperature from draws keyed by
  // o.seed: each from the logits of the last position of a window of the last seq characters
  std::string sample() const {
    std::vector<std::int32_t> context = text.encode(o.prompt);
    if (context.empty()) context.push_back(0);
    const std::size_t alphabet = text.alphabet.size();
    // one row per rank, so the batch splits over any mesh dim
    const auto s = model_sizes(o, static_cast<std::size_t>(mesh.world().size()), text.vocab_size());
    mp::no_grad scope;
    std::vector<std::int32_t> produced;
    for (std::size_t i = 0; i < o.sample_length; ++i) {
      const std::size_t n = std::min(context.size(), o.seq);
      const std::size_t first = context.size() - n;
      const auto ids = mp::generate<ids_t>(mesh, s, [&](const auto& at) {
        return at[1] < n ? context[first + at[1]] : std::int32_t{0};
      });
      const auto logits = mp::gather(model.logits(ids).value());  // [rows, seq, vocab], whole
      const float* z = logits.data() + (n - 1) * text.vocab_size();
      double top = -std::numeric_limits<double>::infinity();
      for (std::size_t c = 0; c < alphabet; ++c) top = std::max(top, static_cast<double>(z[c]));
      std::vector<double> p(alphabet);
      double sum = 0;
      for (std::size_t c = 0; c < alphabet; ++c)
        sum += p[c] = std::exp((static_cast<double>(z[c]) - top) / o.temperature);
      double u = uniform_draw(o.seed, i) * sum;
      std::size_t pick = alphabet - 1;
      for (std::size_t c = 0; c < alphabet; ++c) {
        if (u < p[c]) {
          pick = c;
          break;
        }
        u -= p[c];
      }
      context.push_back(static_cast<std::int32_t>(pick));
      produced.push_back(static_cast<std::int32_t>(pick));
    }
    return text.decode(produced);
  }

  void train() {
    const auto opt = make_optimizer();
    const auto schedule = schedule_of(o);
    const bool talk = mesh.rank() == 0;
    const std::size_t window = o.seq + 1;
    // the training state: every variable, the optimizer, the steps done; the windows and the
    // initial weights are functions of the seed (and the model has no dropout), so the seed and
    // the step are all the random state there is
    std::size_t done = 0;
    std::uint64_t seed = o.seed;
#ifdef MESHPP_EXAMPLE_CHECKPOINTS
    std::size_t batch_size = o.batch;
    mp::checkpoint state;
    state.add(model);
    state.add(*opt).add("step", done).add("seed", seed).add("batch", batch_size);
    if (o.resume) {
      mp::load(o.checkpoint, mesh, state);  // every rank alike: a bad file is an error everywhere
      if (batch_size != o.batch)
        throw mp::error("transformer: " + o.checkpoint + " was trained with --batch " +
                        std::to_string(batch_size) + ", not " + std::to_string(o.batch));
      if (talk && !o.json)
        std::printf("resumed from %s after step %zu\n", o.checkpoint.c_str(), done);
    }
    auto save = [&](std::size_t step) {
      done = step;
      mp::save(o.checkpoint, mesh, state);
    };
#else
    auto save = [](std::size_t) {};
#endif
    const std::size_t first = done + 1;  // the first step this run takes
    mesh.world().barrier();
    const auto start = std::chrono::steady_clock::now();
    auto last = start;
    std::size_t trained = 0;
    for (std::size_t step = first; step <= o.steps; ++step) {
      if (o.profile && step == first + 1) {  // the steps after the first, timed by operation
        mesh.counters().reset();
        mesh.counters().by_operation(true, true);
      }
      const auto starts = mp::window_starts(text.train_ids.size(), window, o.batch, seed, step);
      const auto ids = window_ids(starts, 0);
      const auto targets = window_ids(starts, 1);
      auto loss = model.loss(ids, targets);
      mp::backward(loss);
      if (o.clip_norm > 0) mp::clip_grad_norm(*opt, o.clip_norm);  // one allreduce of one value
      mp::apply_schedule(*opt, schedule);  // the rate of step opt->steps() + 1, this one
      opt->step();
      if (step % o.log_every == 0 || step == o.steps) {
        const auto now = std::chrono::steady_clock::now();
        const double seconds = std::chrono::duration<double>(now - last).count();
        const std::size_t since = step % o.log_every ? step % o.log_every : o.log_every;
        const double rate = static_cast<double>(since * o.batch * o.seq) / seconds;
        last = now;
        const double value = static_cast<double>(loss.item());
        if (talk && o.json) {
          std::printf(
              "{\"record\": \"step\", \"step\": %zu, \"loss\": %.9f, \"tokens_per_second\": "
              "%.1f}\n",
              step, value, rate);
        } else if (talk) {
          std::printf("step %6zu  loss %.4f  (%.3f bits/char)  tokens/s %9.1f\n", step, value,
                      value / std::log(2.0), rate);
        }
        std::fflush(stdout);
      }
      ++trained;
      const bool stop = step == o.stop_after;
      if (!o.checkpoint.empty() &&
          ((o.checkpoint_every && step % o.checkpoint_every == 0) || step == o.steps || stop))
        save(step);
      if (stop) break;
    }
    const mp::counters measured = mesh.counters();  // the profile, if --profile
    mesh.counters().by_operation(false);
    mesh.world().barrier();
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (o.profile && trained > 1) print_profile(measured, trained - 1);
    mp::set_inference(model, true);
    // No validation (--eval-windows 0, or fewer windows than one batch) is said so, null in
    // JSON; a loss that is not finite (a diverged run) is printed as it is, null in JSON (which
    // has no NaN)
    const std::optional<double> bpc = o.eval_windows ? validation_bpc() : std::nullopt;
    char bpc_json[32] = "null", bpc_text[96];
    std::snprintf(
        bpc_text, sizeof bpc_text, "no validation (%s)",
        o.eval_windows ? "fewer than --batch windows of held-out text" : "--eval-windows 0");
    if (bpc) {
      if (std::isfinite(*bpc)) std::snprintf(bpc_json, sizeof bpc_json, "%.4f", *bpc);
      std::snprintf(bpc_text, sizeof bpc_text, "validation %.4f bits/char", *bpc);
    }
    const std::string text_out = o.sample_length ? sample() : std::string();
    // the largest peak resident memory over the ranks (collective: every rank asks)
    const double peak_mib = static_cast<double>(mp::peak_resident_bytes(mesh.world())) / (1 << 20);
    if (talk && o.json) {
      std::printf("{\"record\": \"evaluation\", \"step\": %zu, \"val_bpc\": %s}\n",
                  first - 1 + trained, bpc_json);
      std::printf(
          "{\"record\": \"final\", \"val_bpc\": %s, \"seconds\": %.3f, \"layout\": \"%s\", "
          "\"ranks\": %d, \"mesh\": "
          "%s, \"steps\": %zu, \"batch\": %zu, \"seq\": %zu, \"tokens_per_second\": %.1f, "
          "\"peak_rss_mib\": %.1f, \"sample\": %s}\n",
          bpc_json, seconds, o.layout.c_str(), mesh.world().size(),
          json_string(mesh.describe()).c_str(), first - 1 + trained, o.batch, o.seq,
          static_cast<double>(trained * o.batch * o.seq) / seconds, peak_mib,
          json_string(o.prompt + text_out).c_str());
    } else if (talk) {
      std::printf(
          "%s after %zu steps (%.1f s training, %s layout, %d ranks, peak %.0f MiB a rank)\n",
          bpc_text, first - 1 + trained, seconds, o.layout.c_str(), mesh.world().size(), peak_mib);
      std::printf("sample: %s%s\n", o.prompt.c_str(), text_out.c_str());
    }
    std::fflush(stdout);
  }

  // print_profile(measured, steps): each operation's time in the steps profiled beside its
  // price in the plan of one step after the first on this mesh (as this rank), on the machine
  // model in --machine; every rank plans and prices (a bad --machine file fails them all),
  // rank 0 prints
  void print_profile(const mp::counters& measured, std::size_t steps) const {
    auto machine = mp::machine_model::load_or_defaults(o.machine);
    const auto p = mp::make_plan<Mesh>(
        mesh.sizes(),
        [&](const Mesh& m) { planned_step<Mesh, Residual>(m, o, text.vocab_size(), true); },
        mesh.rank());
    mp::time_gemms(machine, p);  // each product priced at the rate of its own shape
    if (mesh.rank() != 0) return;
    // under --json, stderr: stdout holds JSON lines only
    std::fprintf(o.json ? stderr : stdout,
                 "profile of %zu steps on rank %d of %s, priced on %s\n%s", steps, mesh.rank(),
                 mesh.describe().c_str(), machine.source.c_str(),
                 mp::profile_table(p, measured, steps, machine).c_str());
  }

  ids_t window_ids(const std::vector<std::size_t>& starts, std::size_t shift) const {
    return window_of(sizes, text.train_ids, starts, shift);
  }
};

// run<Mesh, Residual>(mesh, text, o): trains, evaluates and samples; prints as
// examples/transformer/transformer.cpp says
template <class Mesh, class Residual = void>
void run(const Mesh& mesh, const mp::text_corpus& text, const options& o) {
  trainer<Mesh, Residual>(mesh, text, o).train();
}

// The layouts --layout names, chosen at run time (meshpp/plan/choice.hpp); model+residual's tag
// is the rules of its residual stream
using layouts = mp::mesh_choice<mp::named<"data", mesh_data>, mp::named<"model", mesh_model>,
                                mp::named<"data+model", mesh_data_model>,
                                mp::named<"model+residual", mesh_model, residual_over_all>>;

// residual_of<Option>: the rules of a candidate's residual stream (void: as the mesh lays it out)
template <class Option>
using residual_of = typename Option::tag;

// The example's entry points, over every layout (compiled in transformer_layouts.cpp):
// train(pick, text, o): run() under the picked layout and mesh shape
void train(const mp::mesh_pick& pick, const mp::text_corpus& text, const options& o);
// step_plan(pick, o, vocab): the plan of one training step (planned_step) under the picked
// layout, on a planned mesh of its shape, as rank 0
mp::plan step_plan(const mp::mesh_pick& pick, const options& o, std::size_t vocab);
// add_layouts(search, ranks, o, vocab): every layout, on every mesh shape of `ranks` ranks, as a
// candidate of the search (one planned step each)
void add_layouts(mp::layout_search& search, int ranks, const options& o, std::size_t vocab);

// Compiled in transformer_layouts.cpp, so that a program including this header (the tests, the
// bench) compiles none of them again
extern template struct language_model<mesh_data>;
extern template struct language_model<mesh_model>;
extern template struct language_model<mesh_data_model>;
extern template struct language_model<mesh_model, residual_over_all>;
extern template void planned_step(const mesh_data&, const options&, std::size_t, bool);
extern template void planned_step(const mesh_model&, const options&, std::size_t, bool);
extern template void planned_step(const mesh_data_model&, const options&, std::size_t, bool);
extern template void planned_step<mesh_model, residual_over_all>(const mesh_model&, const options&,
                                                                 std::size_t, bool);

}  // namespace transformer_example
