// transformer_run.hpp: run<Mesh> of examples/transformer: the training loop, the validation
// bits per character and the sample. Included by the run translation unit of each layout
// (transformer_<layout>_run.cpp); the model it trains is compiled apart
// (transformer_language_model.hpp, transformer_<layout>.cpp).
#pragma once

#include "transformer.hpp"

#include <meshpp/plan/search.hpp>

#include <cmath>
#include <optional>

#ifdef MESHPP_EXAMPLE_CHECKPOINTS
#include <meshpp/io/checkpoint.hpp>  // parallel HDF5 (CMake target meshpp::hdf5)
#endif

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

// the learning rate at step (1-based): linear warmup, then cosine decay to a tenth of the peak
inline double learning_rate_at(const options& o, std::size_t step) {
  if (o.warmup > 0 && step <= o.warmup)
    return o.learning_rate * static_cast<double>(step) / static_cast<double>(o.warmup);
  const double span = static_cast<double>(std::max<std::size_t>(1, o.steps - o.warmup));
  const double t = std::min(1.0, static_cast<double>(step - o.warmup) / span);
  return o.learning_rate * (0.1 + 0.9 * 0.5 * (1.0 + std::cos(3.141592653589793 * t)));
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
    model.add_to(state);
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
      opt->set_learning_rate(learning_rate_at(o, step));
      opt->step();
      if (step % o.log_every == 0 || step == o.steps) {
        const auto now = std::chrono::steady_clock::now();
        const double seconds = std::chrono::duration<double>(now - last).count();
        const std::size_t since = step % o.log_every ? step % o.log_every : o.log_every;
        const double rate = static_cast<double>(since * o.batch * o.seq) / seconds;
        last = now;
        const double value = static_cast<double>(loss.item());
        if (talk && o.json) {
          std::printf("{\"step\": %zu, \"loss\": %.9f, \"tokens_per_second\": %.1f}\n", step, value,
                      rate);
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
    for (auto& b : model.blocks) b.set_inference(true);
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
    if (talk && o.json) {
      std::printf(
          "{\"val_bpc\": %s, \"seconds\": %.3f, \"layout\": \"%s\", \"ranks\": %d, \"mesh\": "
          "%s, \"steps\": %zu, \"batch\": %zu, \"seq\": %zu, \"tokens_per_second\": %.1f, "
          "\"sample\": %s}\n",
          bpc_json, seconds, o.layout.c_str(), mesh.world().size(),
          json_string(mesh.describe()).c_str(), first - 1 + trained, o.batch, o.seq,
          static_cast<double>(trained * o.batch * o.seq) / seconds,
          json_string(o.prompt + text_out).c_str());
    } else if (talk) {
      std::printf("%s after %zu steps (%.1f s training, %s layout, %d ranks)\n", bpc_text,
                  first - 1 + trained, seconds, o.layout.c_str(), mesh.world().size());
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
    std::printf("profile of %zu steps on rank %d of %s, priced on %s\n%s", steps, mesh.rank(),
                mesh.describe().c_str(), machine.source.c_str(),
                mp::profile_table(p, measured, steps, machine).c_str());
  }

  ids_t window_ids(const std::vector<std::size_t>& starts, std::size_t shift) const {
    return window_of(sizes, text.train_ids, starts, shift);
  }
};

template <class Mesh, class Residual>
void run(const Mesh& mesh, const mp::text_corpus& text, const options& o) {
  trainer<Mesh, Residual>(mesh, text, o).train();
}

}  // namespace transformer_example
