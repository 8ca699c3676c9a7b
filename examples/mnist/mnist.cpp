// mnist: the Mesh-TensorFlow README's example network, trained on Fashion-MNIST under any of
// the README's three layouts.
//
//   images[batch, rows, cols]   w1[rows, cols, hidden]   w2[hidden, classes]
//   hidden = relu(einsum(images, w1))      logits = einsum(hidden, w2)
//   loss   = reduce_mean(softmax_cross_entropy(logits, labels))
//
// The model is written once; --layout picks the mesh and its rules (the mesh fitted to the
// number of ranks n):
//   data        mesh all:n          batch:all                   allreduce of the weight gradients
//   model       mesh all:n          hidden:all                  allreduce of the logits
//   data+model  mesh rows x cols    batch:rows, hidden:cols     both, each over its mesh dim
//
//   mpiexec -n 2 build/examples/mnist --layout data --epochs 5
//   [--data DIR] [--optimizer adam|sgd] [--learning-rate X] [--batch 100] [--hidden 1024]
//   [--layout auto [--machine FILE]]
//   [--schedule constant|cosine [--warmup N]] [--clip-norm X] [--shard 0|1|2]
//   [--steps N] [--log-every N] [--seed S] [--json]
//   [--checkpoint FILE [--checkpoint-every N] [--resume]]
//
// Checkpoints (docs/checkpoints.md; needs parallel HDF5): --checkpoint FILE saves the weights,
// the optimizer's state and the step to FILE every N steps and at the end; --resume starts from
// FILE, under any layout and rank count, and goes on to the same --steps or --epochs total: the
// losses are those of an uninterrupted run.
//
// Data: MNIST-format IDX files (gzip or raw) in DIR, by default Debian's dataset-fashion-mnist
// (/usr/share/datasets/fashion-mnist). Every rank reads them; each builds only its own slice of
// each batch, from the global index, so the data order and the initial weights are the same
// under every layout and rank count (layouts change performance, never results).
//
// Output (rank 0): a progress line every --log-every steps (epoch, step, loss, examples/s) and
// the test accuracy at the end; with --json, instead, JSON lines in the examples' schema
// (docs/training.md, "JSON lines"): {"record": "step", "step", "loss", "epoch",
// "examples_per_second"} per progress line, {"record": "evaluation", "step", "test_accuracy"}
// and {"record": "final", "test_accuracy", "seconds", "layout", "ranks", ...}.
//
// --layout auto chooses the layout before training (docs/plans.md, "Layout search"): one step of
// each layout (data+model on every mesh shape of the ranks) is planned and priced on the machine
// model in --machine FILE (default meshpp-machine.txt, from examples/calibrate; built-in
// defaults without it); rank 0 prints the ranking (not with --json), and every rank trains
// with the first, as if it had been named.
//
// The network, the data and the training loop are in mnist.hpp; this file reads the options
// and picks the layout.
#include "mnist.hpp"

#include "cli.hpp"

#include <meshpp/plan/choice.hpp>
#include <meshpp/plan/search.hpp>

#include <array>
#include <string>

namespace {

// The layouts --layout names, chosen at run time (meshpp/plan/choice.hpp)
using layouts = mp::mesh_choice<mp::named<"data", mesh_data>, mp::named<"model", mesh_model>,
                                mp::named<"data+model", mesh_data_model>>;

options parse(int argc, char** argv) {
  options o;
  examples::cli cli("mnist", "trains a two-layer classifier on Fashion-MNIST under a layout");
  cli.add("--data", o.data, "the Fashion-MNIST directory", "DIR");
  cli.choose("--layout", o.layout, {"data", "model", "data+model", "auto"},
             "how the model is split over the ranks (auto: the layout search's choice)");
  cli.add("--machine", o.machine, "the machine model --layout auto prices on", "FILE");
  cli.choose("--optimizer", o.optimizer, {"adam", "sgd"}, "the optimizer");
  cli.add("--learning-rate", o.learning_rate,
          "the step size, the peak of cosine (negative: the optimizer's own)");
  cli.choose("--schedule", o.schedule, {"constant", "cosine"},
             "the learning rate of each step (cosine: --warmup steps up, then down to a tenth)");
  cli.add("--warmup", o.warmup, "warmup steps of the cosine schedule");
  cli.add("--clip-norm", o.clip_norm, "the gradients' global norm clipped to this (0: none)");
  cli.add("--shard", o.shard,
          "kept in shares over the data-parallel ranks: 0 nothing, 1 the optimizer state, 2 the "
          "state and the gradients' sums");
  cli.add("--batch", o.batch, "examples per step");
  cli.add("--hidden", o.hidden, "the hidden layer's width");
  cli.add("--epochs", o.epochs, "passes over the training set");
  cli.add("--steps", o.steps, "stop after this many steps (0: after --epochs)");
  cli.add("--log-every", o.log_every, "steps between progress lines");
  cli.add("--seed", o.seed, "the seed of the initial values and the data order");
  cli.add("--json", o.json, "progress as JSON lines");
  examples::add_checkpoint_flags(cli, o.checkpoint, o.checkpoint_every, o.resume);
  cli.parse(argc, argv);
  if (o.batch == 0 || o.hidden == 0 || o.log_every == 0)
    cli.fail("--batch, --hidden and --log-every must be positive");
  if (!(o.clip_norm >= 0)) cli.fail("--clip-norm must be >= 0 (0: no clipping)");
  if (o.shard < 0 || o.shard > 3) cli.fail("--shard must be 0, 1, 2 or 3");
  if (o.shard > 0 && o.layout == "auto")
    cli.fail("--shard needs a --layout named: the layout search does not price sharding yet");
  if (o.warmup > 0 && o.schedule != "cosine") cli.fail("--warmup needs --schedule cosine");
  examples::check_checkpoint_flags(cli, o.checkpoint, o.checkpoint_every, o.resume);
  return o;
}

// choose_layout(n, data, o): --layout auto's choice for n ranks: the three layouts planned
// (data+model on every mesh shape), priced on the machine model and ranked, the table printed
// on rank 0; the winner, rank 0's on every rank
mp::mesh_pick choose_layout(int n, const mp::mnist_data& data, const options& o) {
  mp::layout_search search(mp::machine_model::load_or_defaults(o.machine));
  layouts::add_to(search, n, [&](const auto& m) { planned_step(m, data, o); });
  const boost::mpi::communicator world;
  if (world.rank() == 0 && !o.json) {
    std::printf("layout search for %d ranks, priced on %s\n%s", n, search.machine().source.c_str(),
                search.table().c_str());
  }
  return layouts::agreed(search.best(), world);
}

}  // namespace

int main(int argc, char** argv) {
  mp::environment env(argc, argv);
  try {
    const options o = parse(argc, argv);  // the same arguments, so the same verdict, everywhere
    const boost::mpi::communicator world;
    const auto data = mp::load_mnist(world, o.data);
    if (o.batch > data.train_labels.dims[0] || o.batch > data.test_labels.dims[0])
      throw mp::error("mnist: --batch is larger than the training or test set");
    const int n = world.size();
    // the layout named (its mesh fitted to the ranks), or the search's choice
    const auto pick = o.layout == "auto" ? choose_layout(n, data, o) : layouts::fitted(o.layout, n);
    options chosen = o;
    chosen.layout = pick.name;
    layouts::run(pick, [&](const auto& mesh) { train(mesh, data, chosen); });
  } catch (const mp::error& e) {
    // every rank threw (before any rank went on); each says why, since only the rank that met
    // the problem knows the details (a file missing on one node)
    std::fprintf(stderr, "mnist: rank %d: %s\n", boost::mpi::communicator().rank(), e.what());
    return 1;
  }
  return 0;
}
