// training: one training step (SGD or Adam) of the Mesh-TensorFlow README's MNIST network
// (examples/mnist/mnist.cpp) over every rank, under the data layout (batch:all) or the model layout
// (hidden:all), against the same step written by hand with raw cblas_sgemm, raw MPI_Allreduce
// and the optimizer as a plain loop, in the same run.
//
//   images[batch, rows, cols] w1[rows, cols, hidden] w2[hidden, classes]
//   meshpp: relu(einsum) -> einsum -> softmax_cross_entropy -> reduce_mean -> backward -> step
//   data (batch:all): each rank its rows of the batch; by hand one MPI_Allreduce of both weight
//     gradients packed together and one of the loss's scalar sum (as meshpp's reduce_mean does);
//     with Adam, meshpp's ranks share each weight's update and allgather it
//     (optim/optimizer.hpp, sharded updates; SGD does not shard), the hand-written step
//     updates all of both weights on every rank, as a plain data-parallel loop (and DDP) does
//   model (hidden:all): each rank its columns of w1 and rows of w2, the whole batch; by hand
//     one MPI_Allreduce of the logits (their sum over hidden), nothing else: the weights and
//     their gradients are split, so no gradient is summed and each rank updates its share
//
// Before timing, both take one step from the same weights and the largest difference of the
// updated weights is printed (max_abs_diff): the two do the same arithmetic.
//
// Prints the usual bench line plus examples per second of both, the share of meshpp's step
// spent in the optimizer's update (timed inside the step, after the gradients are complete;
// Adam under the data layout at several ranks: this rank's share of it and the allgather),
// and each rank's peak resident memory (getrusage, the largest over the ranks). bench/run puts
// the 1-rank and n-rank lines side by side to give the scaling efficiency (n-rank rate /
// (n x 1-rank rate)).
//   mpiexec -n 2 build/bench/training [--batch 100] [--hidden 1024] [--optimizer sgd|adam]
//                                     [--layout data|model] [--sharded-updates on|off|measured]
// (--sharded-updates: optimizer::set_sharding(sharding::on, off or measured), to measure what
// sharding Adam's update among the replicas gains; measured, the library's default, unless
// given; --shard 1|2: optimizer::set_shard(shard_level::state or gradients), the state kept in
// shares and, at 2, the gradients reduce-scattered: docs/training.md, Training what does not
// fit)
#include <meshpp/meshpp.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include <cblas.h>
#include <mpi.h>

#include "bench.hpp"
#include "cli.hpp"

namespace mp = meshpp;
MESHPP_DIM(batch);
MESHPP_DIM(rows);
MESHPP_DIM(cols);
MESHPP_DIM(hidden);
MESHPP_DIM(classes);
MESHPP_DIM(all);

namespace {
constexpr std::size_t side = 28, pixels = side * side, nclasses = 10;
constexpr float learning_rate = 0.1f;
constexpr float adam_rate = 1e-3f, beta1 = 0.9f, beta2 = 0.999f, epsilon = 1e-8f;

// The hand-written step on this rank's slice: plain arrays, cblas_sgemm; data layout: its rows
// of the batch, one MPI_Allreduce for both weight gradients and one for the loss; model layout:
// its columns of hidden (h is the local count), one MPI_Allreduce of the logits.
struct by_hand {
  std::size_t b, local_b, h;
  bool adam = false, model = false;
  std::vector<float> x, w1, w2, hid, logits, dlogits, dhid, grads, m, v;
  std::vector<int> labels;
  long t = 0;

  void step() {
    const int lb = static_cast<int>(local_b), nh = static_cast<int>(h), np = int(pixels),
              nc = int(nclasses);
    // hid = relu(x w1), logits = hid w2
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, lb, nh, np, 1.0f, x.data(), np,
                w1.data(), nh, 0.0f, hid.data(), nh);
    for (float& v : hid) v = v < 0 ? 0 : v;
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, lb, nc, nh, 1.0f, hid.data(), nh,
                w2.data(), nc, 0.0f, logits.data(), nc);
    if (model)  // each rank's logits are its hidden columns' share: sum them
      MPI_Allreduce(MPI_IN_PLACE, logits.data(), static_cast<int>(logits.size()), MPI_FLOAT,
                    MPI_SUM, MPI_COMM_WORLD);
    // softmax cross-entropy, mean over the global batch
    double loss = 0;
    for (std::size_t n = 0; n < local_b; ++n) {
      const float* z = &logits[n * nclasses];
      float* d = &dlogits[n * nclasses];
      const float m = *std::max_element(z, z + nclasses);
      float s = 0;
      for (std::size_t c = 0; c < nclasses; ++c) s += (d[c] = std::exp(z[c] - m));
      loss += std::log(s) + m - z[labels[n]];
      for (std::size_t c = 0; c < nclasses; ++c)
        d[c] = (d[c] / s - (int(c) == labels[n] ? 1.0f : 0.0f)) / float(b);
    }
    if (!model) MPI_Allreduce(MPI_IN_PLACE, &loss, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    // grads = [dw1 | dw2]: dw2 = hid^T dlogits, dhid = dlogits w2^T (relu'), dw1 = x^T dhid
    float* dw1 = grads.data();
    float* dw2 = grads.data() + pixels * h;
    cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, nh, nc, lb, 1.0f, hid.data(), nh,
                dlogits.data(), nc, 0.0f, dw2, nc);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, lb, nh, nc, 1.0f, dlogits.data(), nc,
                w2.data(), nc, 0.0f, dhid.data(), nh);
    for (std::size_t i = 0; i < dhid.size(); ++i)
      if (hid[i] <= 0) dhid[i] = 0;
    cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, np, nh, lb, 1.0f, x.data(), np,
                dhid.data(), nh, 0.0f, dw1, nh);
    if (!model)
      MPI_Allreduce(MPI_IN_PLACE, grads.data(), static_cast<int>(grads.size()), MPI_FLOAT, MPI_SUM,
                    MPI_COMM_WORLD);
    if (!adam) {
      for (std::size_t i = 0; i < w1.size(); ++i) w1[i] -= learning_rate * dw1[i];
      for (std::size_t i = 0; i < w2.size(); ++i) w2[i] -= learning_rate * dw2[i];
      return;
    }
    // Adam as a plain loop over [w1 | w2], the gradients in the same order
    ++t;
    const float c1 = 1.0f / (1.0f - std::pow(beta1, float(t)));
    const float c2 = 1.0f / (1.0f - std::pow(beta2, float(t)));
    for (std::size_t i = 0; i < grads.size(); ++i) {
      float& p = i < w1.size() ? w1[i] : w2[i - w1.size()];
      const float g = grads[i];
      m[i] = beta1 * m[i] + (1 - beta1) * g;
      v[i] = beta2 * v[i] + (1 - beta2) * g * g;
      p -= adam_rate * (m[i] * c1) / (std::sqrt(v[i] * c2) + epsilon);
    }
  }
};

// run<Mesh>(b, h, adam, layout): the comparison under Mesh's layout; prints its JSON line
template <class Mesh>
void run(std::size_t b, std::size_t h, bool adam, const std::string& layout, mp::sharding sharded,
         int shard) {
  const int n = boost::mpi::communicator().size();
  Mesh mesh({n});
  const auto sizes =
      mp::extents{batch{} = b, rows{} = side, cols{} = side, hidden{} = h, classes{} = nclasses};
  const float l1 = std::sqrt(6.0f / float(pixels + h)), l2 = std::sqrt(6.0f / float(h + 10));

  // meshpp: the example's step
  const auto x = mp::random_uniform<float, batch, rows, cols>(mesh, sizes, 7, 0.0f, 1.0f);
  const auto y = mp::generate<std::int32_t, batch>(
      mesh, sizes, [](const auto& i) { return static_cast<std::int32_t>(i[0] * 7 % nclasses); });
  mp::variable w1(mp::random_uniform<float, rows, cols, hidden>(mesh, sizes, 1, -l1, l1), "w1");
  mp::variable w2(mp::random_uniform<float, hidden, classes>(mesh, sizes, 2, -l2, l2), "w2");
  std::unique_ptr<mp::optimizer> opt;
  if (adam)
    opt = std::make_unique<mp::adam>(mp::adam_options{.learning_rate = adam_rate}, w1, w2);
  else
    opt = std::make_unique<mp::sgd>(mp::sgd_options{.learning_rate = learning_rate}, w1, w2);
  opt->set_sharding(sharded);
  opt->set_shard(static_cast<mp::shard_level>(shard));
  std::vector<double> update_s;  // the optimizer's update alone, per meshpp step
  auto meshpp_step = [&] {
    auto hid = mp::relu(mp::einsum<mp::shape<batch, hidden>>(x, w1));
    auto logits = mp::einsum<mp::shape<batch, classes>>(hid, w2);
    auto loss = mp::reduce_mean(mp::softmax_cross_entropy<classes>(logits, y));
    mp::backward(loss);
    if (shard < 2) {    // (at level 2 they are complete at the end of backward, in shares)
      (void)w1.grad();  // the gradients' sums complete here, so the update alone is timed below
      (void)w2.grad();
    }
    const auto t0 = std::chrono::steady_clock::now();
    opt->step();
    update_s.push_back(
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  };

  // by hand: the same values in plain arrays (this rank's slices of x, labels and weights)
  const auto local = [](const auto& t) {
    return std::vector<float>(t.local().data(), t.local().data() + t.local().size());
  };
  by_hand hand;
  hand.model = layout == "model";
  hand.b = b;
  hand.local_b = x.local_shape()[0];
  hand.h = w2.value().local_shape()[0];
  hand.x = local(x);
  hand.w1 = local(w1.value());
  hand.w2 = local(w2.value());
  hand.labels.assign(y.local().data(), y.local().data() + y.local().size());
  hand.hid.resize(hand.local_b * hand.h);
  hand.dhid.resize(hand.local_b * hand.h);
  hand.logits.resize(hand.local_b * nclasses);
  hand.dlogits.resize(hand.local_b * nclasses);
  hand.grads.resize(pixels * hand.h + hand.h * nclasses);
  hand.adam = adam;
  hand.m.assign(hand.grads.size(), 0.0f);
  hand.v.assign(hand.grads.size(), 0.0f);

  // one step of each from the same weights: the largest difference of the results, over ranks
  meshpp_step();
  hand.step();
  double diff = 0;
  const auto w1_now = local(w1.value()), w2_now = local(w2.value());
  for (std::size_t i = 0; i < w1_now.size(); ++i)
    diff = std::max(diff, double(std::fabs(w1_now[i] - hand.w1[i])));
  for (std::size_t i = 0; i < w2_now.size(); ++i)
    diff = std::max(diff, double(std::fabs(w2_now[i] - hand.w2[i])));
  MPI_Allreduce(MPI_IN_PLACE, &diff, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  // past sharding::measured's trial (its choice at a variable's 7th update), so that every
  // timed step updates the way it chose
  for (int k = 0; k < 6; ++k) meshpp_step();
  update_s.clear();

  const auto t = bench::compare(mesh.world(), meshpp_step, [&] { hand.step(); });
  const double update = bench::median(update_s);
  const double peak_mib = bench::peak_resident_mib(mesh.world());
  const std::string name = "mnist model " + std::string(adam ? "Adam" : "SGD") + " step, batch " +
                           std::to_string(b) + ", hidden " + std::to_string(h) + ", " +
                           (hand.model ? "model-parallel" : "data-parallel") +
                           (sharded == mp::sharding::measured ? ""
                            : sharded == mp::sharding::on     ? ", updates sharded"
                                                              : ", updates not sharded") +
                           (shard ? ", shard level " + std::to_string(shard) : std::string());
  if (mesh.rank() == 0) {
    std::printf(
        "{\"bench\": \"training\", \"case\": \"%s\", \"ranks\": %d, \"meshpp_s\": %.6e, "
        "\"baseline\": \"cblas_sgemm + MPI_Allreduce\", \"baseline_s\": %.6e, \"time_ratio\": "
        "%.4f, \"examples_per_second\": %.1f, \"baseline_examples_per_second\": %.1f, "
        "\"update_s\": %.6e, \"update_share\": %.4f, \"peak_rss_mib\": %.1f, "
        "\"max_abs_diff\": %.3e}\n",
        name.c_str(), n, t.meshpp_s, t.baseline_s, t.meshpp_s / t.baseline_s,
        double(b) / t.meshpp_s, double(b) / t.baseline_s, update, update / t.meshpp_s, peak_mib,
        diff);
  }
}
}  // namespace

int main(int argc, char** argv) {
  mp::environment env(argc, argv);
  std::size_t b = 100, h = 1024;
  std::string optimizer = "sgd", layout = "data";
  std::string sharded_updates = "measured";
  int shard = 0;
  examples::cli cli("bench/training",
                    "one training step of the MNIST network under a layout against the same step "
                    "by hand (cblas_sgemm, MPI_Allreduce); one JSON line");
  cli.add("--batch", b, "examples per step");
  cli.add("--hidden", h, "the hidden layer's width");
  cli.choose("--optimizer", optimizer, {"sgd", "adam"}, "the optimizer");
  cli.choose("--layout", layout, {"data", "model"}, "the layout (batch:all or hidden:all)");
  cli.choose("--sharded-updates", sharded_updates, {"on", "off", "measured"},
             "the update sharded among the replicas (optimizer::set_sharding)");
  cli.add("--shard", shard,
          "kept in shares over the replicas: 0 nothing, 1 the optimizer state, 2 the state and "
          "the gradients' sums (optimizer::set_shard)");
  cli.parse(argc, argv);
  if (shard < 0 || shard > 2) cli.fail("--shard must be 0, 1 or 2");
  if (shard > 0 && layout == "model")
    cli.fail("--shard needs --layout data: the model layout replicates no weight");
  const mp::sharding sharded = bench::sharding_named(sharded_updates);
  const bool adam = optimizer == "adam";
  if (layout == "model")
    run<mp::mesh<mp::axes<all>, mp::layout<mp::split<hidden, all>>>>(b, h, adam, layout, sharded,
                                                                     shard);
  else
    run<mp::mesh<mp::axes<all>, mp::layout<mp::split<batch, all>>>>(b, h, adam, layout, sharded,
                                                                    shard);
  return 0;
}
