// transformer: the Mesh-TensorFlow paper's Transformer (section 9) as a decoder-only,
// character-level language model, trained on the King James Bible under any of the paper's
// three layouts, or the model layout with a split residual stream (model+residual).
//
//   x = tokens[ids] + positions                      embedding [vocab, d_model], [length, d_model]
//   x = transformer_block(x), --layers times         attention + ReLU feed-forward, pre-norm
//   logits = einsum(layer_norm(x), w_out[d_model, vocab])
//   loss = mean softmax_cross_entropy<vocab>(logits, next characters)
//
// The model is written once; --layout picks the mesh and its rules (the mesh fitted to the
// number of ranks n):
//   data        mesh all:n          batch:all
//   model       mesh all:n          vocab:all, d_ff:all, heads:all
//   data+model  mesh rows x cols    batch:rows; vocab, d_ff, heads: cols
//   model+residual  as model, and the blocks' residual stream [batch, length, d_model] split
//               over batch across the same ranks (nn/transformer.hpp, Residual)
//
//   mpiexec -n 2 build/examples/transformer --layout data
//   [--data FILE] [--layers 2] [--d-model 128] [--heads 4] [--d-ff 512] [--seq 128]
//   [--batch 32] [--steps 3000] [--warmup 100] [--learning-rate 2e-3] [--clip-norm 0]
//   [--optimizer adam|sgd]
//   [--eval-windows 512] [--validation-block 16384] [--pad-vocab 8] [--prompt TEXT]
//   [--sample-length 200] [--temperature 0.8] [--seed 1]
//   [--log-every 50] [--json] [--checkpoint FILE [--checkpoint-every N] [--resume]]
//   [--stop-after N] [--plan RANKS] [--machine FILE] [--memory-budget MIB] [--profile]
//
// --layout auto chooses the layout before training (docs/plans.md, "Layout search"): it plans one
// step under each of the four layouts, data+model on every mesh shape of the ranks, prices each
// plan on the machine model in --machine FILE (default meshpp-machine.txt, written by
// examples/calibrate; built-in defaults without it), prints the candidates ranked with their
// terms (compute, passes, communication, memory), and trains the fastest that fits in
// --memory-budget MiB per rank. With --plan RANKS as well, it ranks them for RANKS ranks and
// stops.
//
// --profile times every operation of the steps after the first (counters by operation, timed)
// and prints, on rank 0 at the end, each beside its price in the plan of one step on the
// machine model (--machine): what the search predicts against what ran (docs/plans.md, "Prediction
// against what ran").
//
// --plan RANKS prints the plan of one training step under --layout on a mesh of RANKS ranks
// (docs/plans.md): per operation, the collectives, values and bytes each rank sends, the einsum
// flops and the bytes of the tensors made, as rank 0 would; nothing is trained and nothing is
// communicated, so any number of ranks is planned from one process.
//
// The learning rate rises linearly over --warmup steps to --learning-rate, then falls along a
// cosine to a tenth of it at --steps (mp::warmup_cosine). --clip-norm X > 0 scales the gradients
// down to a global norm of X before each step where it is larger (mp::clip_grad_norm: one
// allreduce of one value a step); 0, the default, clips nothing. Plans (--plan, --layout auto,
// --profile) leave the clipping out.
//
// Checkpoints (docs/checkpoints.md; needs parallel HDF5): --checkpoint FILE saves every
// variable, the optimizer's state and the step to FILE every N steps and at the end; --resume
// starts from FILE, under any layout and rank count, and goes on to the same --steps.
// --stop-after N ends the run after step N of the --steps schedule (saving first), as a job
// preempted there would: the learning rate follows --steps, so a shorter --steps would not do.
//
// Data: any UTF-8 text (--data), by default the King James Bible that the build writes from
// Debian's bible-kjv-text (build/data/kjv.txt); 5% is held out for validation, every 20th block
// of --validation-block characters (0: the last 5%). The vocab is the text's alphabet padded to
// a multiple of --pad-vocab (1: unpadded, the vocab dim split unevenly where its mesh dim
// does not divide it: docs/concepts.md, "Uneven splits"). Every rank reads the file; each builds
// only its own slice of each batch, from the global index, so the windows drawn and the
// initial weights are the same under every layout and rank count.
//
// Output (rank 0): a progress line every --log-every steps (step, loss, bits per character,
// tokens/s); at the end the validation bits per character (or "no validation" and why) and a
// sample of --sample-length characters after --prompt. With --json, JSON lines only on stdout
// (the tables of --layout auto go to stderr) in the examples' schema (docs/training.md, "JSON
// lines"): {"record": "step", "step", "loss", "tokens_per_second"} per progress line,
// {"record": "evaluation", "step", "val_bpc" (null without validation)} and {"record":
// "final", "val_bpc", "seconds", "layout", "ranks", "mesh", "steps", "batch", "seq",
// "tokens_per_second", "sample"}.
//
// The model, its layouts and the training loop are in transformer.hpp, compiled once for every
// layout in transformer_layouts.cpp; this file reads the options and picks the layout by name
// or by the search, in the same process (meshpp/plan/choice.hpp).
#include "transformer.hpp"

#include "cli.hpp"

#include <meshpp/plan/enumerate.hpp>
#include <meshpp/plan/search.hpp>

#include <array>
#include <cmath>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

namespace {

using transformer_example::options;
int plan_ranks = 0;            // --plan RANKS: plan a step on that many ranks instead of training
double memory_budget_mib = 0;  // --memory-budget: 0, the machine's (or none)
// where the tables of --layout auto and --plan go: stdout, or stderr under --json (whose stdout
// is JSON lines only)
std::FILE* human = stdout;

options parse(int argc, char** argv) {
  options o;
  examples::cli cli("transformer",
                    "the paper's Transformer as a character-level language model, trained under "
                    "a layout");
  cli.choose("--layout", o.layout, {"data", "model", "data+model", "model+residual", "auto"},
             "how the model is split over the ranks (auto: the layout search's choice)");
  cli.add("--data", o.data, "the training text", "FILE");
  cli.add("--layers", o.layers, "decoder layers");
  cli.add("--d-model", o.d_model, "the model's width (a multiple of --heads)");
  cli.add("--heads", o.heads, "attention heads");
  cli.add("--d-ff", o.d_ff, "the feed-forward layers' width");
  cli.add("--seq", o.seq, "characters per window");
  cli.add("--batch", o.batch, "windows per step");
  cli.add("--pad-vocab", o.pad_vocab, "the vocab rounded up to a multiple of this (1: unpadded)");
  cli.add("--steps", o.steps, "training steps");
  cli.add("--warmup", o.warmup, "warmup steps of the schedule (a tenth of --steps if not fewer)");
  cli.add("--learning-rate", o.learning_rate, "the peak step size, after warmup");
  cli.add("--clip-norm", o.clip_norm, "the gradients' global norm clipped to this (0: none)");
  cli.add("--shard", o.shard,
          "kept in shares over the data-parallel ranks: 0 nothing, 1 the optimizer state, 2 the "
          "state and the gradients' sums");
  cli.choose("--optimizer", o.optimizer, {"adam", "sgd"}, "the optimizer");
  cli.add("--eval-windows", o.eval_windows, "validation windows (0: no validation)");
  cli.add("--validation-block", o.validation_block,
          "held-out blocks of this many characters (0: the last 5% in one piece)");
  cli.add("--prompt", o.prompt, "the start of the sample generated at the end");
  cli.add("--sample-length", o.sample_length, "characters generated (0: no sample)");
  cli.add("--temperature", o.temperature, "the sampling temperature");
  cli.add("--seed", o.seed, "the seed of the initial values, the data order and the sample");
  cli.add("--log-every", o.log_every, "steps between progress lines");
  cli.add("--json", o.json, "progress as JSON lines");
  examples::add_checkpoint_flags(cli, o.checkpoint, o.checkpoint_every, o.resume);
  cli.add("--stop-after", o.stop_after, "stop after this step, saving first (0: run to the end)");
  cli.add("--plan", plan_ranks, "plan a step on this many ranks instead of training (0: train)",
          "RANKS");
  cli.add("--machine", o.machine, "the machine model --layout auto and --profile price on", "FILE");
  cli.add("--memory-budget", memory_budget_mib,
          "the layout search's memory limit per rank in MiB (0: the machine's)", "MIB");
  cli.add("--profile", o.profile, "time every operation beside the plan's prediction");
  cli.parse(argc, argv);
  if (memory_budget_mib < 0) cli.fail("--memory-budget must not be negative");
  if (o.layers == 0 || o.d_model == 0 || o.heads == 0 || o.d_ff == 0 || o.seq == 0 ||
      o.batch == 0 || o.log_every == 0)
    cli.fail(
        "--layers, --d-model, --heads, --d-ff, --seq, --batch and --log-every must be "
        "positive");
  if (o.d_model % o.heads != 0)
    cli.fail("--d-model (" + std::to_string(o.d_model) + ") must be a multiple of --heads (" +
             std::to_string(o.heads) + ")");
  examples::check_checkpoint_flags(cli, o.checkpoint, o.checkpoint_every, o.resume);
  if (!(o.learning_rate > 0)) cli.fail("--learning-rate must be positive");
  if (!(o.clip_norm >= 0)) cli.fail("--clip-norm must be >= 0 (0: no clipping)");
  if (o.shard < 0 || o.shard > 3) cli.fail("--shard must be 0, 1, 2 or 3");
  if (!(o.temperature > 0)) cli.fail("--temperature must be positive");
  if (plan_ranks < 0) cli.fail("--plan must be at least 1 rank");
  if (o.warmup >= o.steps && o.steps > 0) o.warmup = o.steps / 10;
  if (plan_ranks < 0) throw mp::error("transformer: --plan must be at least 1 rank");
  return o;
}

// enumerate_layouts(ranks, o, vocab): every legal layout of the model's dims over the mesh
// shapes of `ranks` ranks (one mesh dim; two and three where ranks factors so), priced from a
// plan of the model whole (plan/enumerate.hpp) without compiling any of them; the top ten of each
// printed (re-priced with their gemm shapes timed), with the winner as the mesh type to paste.
// Called on rank 0 alone.
void enumerate_layouts(int ranks, const options& o, std::size_t vocab) {
  const auto reference = transformer_example::step_plan({"data", {1}}, o, vocab);
  mp::layout_enumeration layouts(reference, mp::machine_model::load_or_defaults(o.machine),
                                 memory_budget_mib * (1 << 20));
  std::vector<std::vector<mp::mesh_axis>> meshes{{{"all", ranks}}};
  for (int r = 2; r < ranks; ++r)
    if (ranks % r == 0) meshes.push_back({{"rows", r}, {"cols", ranks / r}});
  for (int a = 2; a < ranks; ++a)  // and three, where ranks has three factors
    for (int b = 2; a * b < ranks; ++b)
      if (ranks % (a * b) == 0 && ranks / (a * b) >= 2)
        meshes.push_back({{"x", a}, {"y", b}, {"z", ranks / (a * b)}});
  std::fprintf(human, "\n%s",
               mp::enumeration_report(layouts, meshes, 10, /*time_shapes*/ true).c_str());
}
// try_enumerate_layouts: enumerate_layouts, its error printed rather than thrown (it runs on
// rank 0 alone, so a throw would not fail every rank together, and it only informs)
void try_enumerate_layouts(int ranks, const options& o, std::size_t vocab) {
  try {
    enumerate_layouts(ranks, o, vocab);
  } catch (const std::exception& e) {
    std::fprintf(human, "\nevery layout, estimated: not available: %s\n", e.what());
  }
}

// search_layouts(ranks, o, vocab): every layout planned for `ranks` ranks (data+model on every
// mesh shape), priced on the machine model, ranked; printed on rank 0
mp::layout_search search_layouts(int ranks, const options& o, std::size_t vocab) {
  const bool talk = boost::mpi::communicator().rank() == 0;
  auto machine = mp::machine_model::load_or_defaults(o.machine);
  if (talk) {
    std::fprintf(human, "layout search for %d ranks, priced on %s\n", ranks,
                 machine.source.c_str());
  }
  mp::layout_search search(std::move(machine), memory_budget_mib * (1 << 20));
  transformer_example::add_layouts(search, ranks, o, vocab);
  // each product priced at the rate of its own shape, all the candidates' shapes timed together
  search.time_gemm_shapes();
  if (talk) {
    std::fprintf(human, "%s", search.table().c_str());
    std::fflush(human);
    try_enumerate_layouts(ranks, o, vocab);  // rank 0 alone: it only prints, and takes seconds
  }
  return search;
}

}  // namespace

int main(int argc, char** argv) {
  mp::environment env(argc, argv);
  try {
    const options o = parse(argc, argv);  // the same arguments, so the same verdict, everywhere
    if (o.json) human = stderr;
    const boost::mpi::communicator world;
    const auto text = mp::load_text(
        world, o.data,
        mp::text_options{.pad_to = o.pad_vocab, .validation_block = o.validation_block});
    if (text.train_ids.size() <= o.seq + 1)
      throw mp::error("transformer: the training text is shorter than one window (--seq + 1)");
    using transformer_example::layouts;
    if (o.layout == "auto") {
      const auto search =
          search_layouts(plan_ranks > 0 ? plan_ranks : world.size(), o, text.vocab_size());
      if (plan_ranks > 0) return 0;
      // rank 0's pick (the layout and its mesh shape) trained on every rank, in this process
      const auto pick = layouts::agreed(search.best(), world);
      options chosen = o;
      chosen.layout = pick.name;
      transformer_example::train(pick, text, chosen);
    } else if (plan_ranks > 0) {
      const auto p = transformer_example::step_plan(layouts::fitted(o.layout, plan_ranks), o,
                                                    text.vocab_size());
      if (world.rank() == 0) std::fprintf(human, "%s", p.report().c_str());
    } else {
      transformer_example::train(layouts::fitted(o.layout, world.size()), text, o);
    }
  } catch (const mp::error& e) {
    // every rank threw (before any rank went on); each says why
    std::fprintf(stderr, "transformer: rank %d: %s\n", boost::mpi::communicator().rank(), e.what());
    return 1;
  }
  return 0;
}
