// mnist.hpp: the network, its data and its training loop for examples/mnist/mnist.cpp (which
// says what it does); train<Mesh> for the 2-D layout is compiled in mnist_2d.cpp.
#pragma once

#include <meshpp/meshpp.hpp>
#ifdef MESHPP_EXAMPLE_CHECKPOINTS
#include <meshpp/io/checkpoint.hpp>  // parallel HDF5 (CMake target meshpp::hdf5)
#endif

#include <array>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <memory>
#include <numeric>
#include <string>
#include <vector>

namespace mp = meshpp;

MESHPP_DIM(batch);
MESHPP_DIM(rows);
MESHPP_DIM(cols);
MESHPP_DIM(hidden);
MESHPP_DIM(classes);
// mesh dims
MESHPP_DIM(all);
MESHPP_DIM(processor_rows);
MESHPP_DIM(processor_cols);

struct options {
  std::string data = mp::default_fashion_mnist_dir;
  std::string layout = "data";  // data, model, data+model, or auto (main resolves it)
  std::string machine = "meshpp-machine.txt";  // --layout auto's machine model (examples/calibrate)
  std::string optimizer = "adam";
  double learning_rate = -1;          // the optimizer's default
  std::string schedule = "constant";  // or cosine: warmup, then decay to a tenth at the last step
  std::size_t warmup = 0;             // steps of linear warmup (cosine)
  double clip_norm = 0;               // > 0: the gradients' global norm clipped to this
  int shard = 0;                      // mp::shard_level: 1 the optimizer state, 2 and gradients
  std::size_t batch = 100, hidden = 1024;
  std::size_t epochs = 5, steps = 0;  // steps > 0: stop after that many steps
  std::size_t log_every = 100;
  std::uint64_t seed = 1;
  bool json = false;
  std::string checkpoint;            // a file: saved every checkpoint_every steps and at the end
  std::size_t checkpoint_every = 0;  // 0: at the end only
  bool resume = false;               // start from the checkpoint (any layout, any rank count)
};

// The order of the training examples in each epoch: a Fisher-Yates shuffle driven by a
// splitmix64 stream, so every rank (and every platform) draws the same order.
inline std::vector<std::uint32_t> epoch_order(std::size_t n, std::uint64_t seed,
                                              std::size_t epoch) {
  std::vector<std::uint32_t> order(n);
  std::iota(order.begin(), order.end(), 0u);
  std::uint64_t state = seed * 0x9E3779B97F4A7C15ull + epoch + 1;
  auto next = [&] {
    std::uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  };
  for (std::size_t i = n; i-- > 1;) std::swap(order[i], order[next() % (i + 1)]);
  return order;
}

template <class Mesh>
struct model {
  using images_t = mp::tensor_of<float, mp::shape<batch, rows, cols>, Mesh>;
  using labels_t = mp::tensor_of<std::int32_t, mp::shape<batch>, Mesh>;

  const Mesh& mesh;
  const mp::mnist_data& data;
  mp::extents<batch, rows, cols, hidden, classes> sizes;
  // Glorot-uniform initial weights, generated from the global index (layout-independent)
  mp::variable<mp::tensor_of<float, mp::shape<rows, cols, hidden>, Mesh>> w1;
  mp::variable<mp::tensor_of<float, mp::shape<hidden, classes>, Mesh>> w2;

  model(const Mesh& m, const mp::mnist_data& d, const options& o)
      : mesh(m),
        data(d),
        sizes{batch{} = o.batch, rows{} = d.rows, cols{} = d.cols, hidden{} = o.hidden,
              classes{} = 10},
        w1(mp::random_uniform<float, rows, cols, hidden>(m, sizes, mp::seed_for(o.seed, "w1"),
                                                         -limit(d.rows * d.cols, o.hidden),
                                                         limit(d.rows * d.cols, o.hidden)),
           "w1"),
        w2(mp::random_uniform<float, hidden, classes>(m, sizes, mp::seed_for(o.seed, "w2"),
                                                      -limit(o.hidden, 10), limit(o.hidden, 10)),
           "w2") {}

  // layers(): the network's variables, for the optimizer and the checkpoint
  // (meshpp/autodiff/parameters.hpp)
  auto layers() const { return std::tie(w1, w2); }

  static float limit(std::size_t fan_in, std::size_t fan_out) {
    return static_cast<float>(std::sqrt(6.0 / static_cast<double>(fan_in + fan_out)));
  }

  // batch `first`.. of the examples `order` lists (each rank fills only its own slice)
  images_t images(const mp::idx_array& src, const std::uint32_t* order) const {
    const std::size_t pixels = data.rows * data.cols;
    return mp::generate<images_t>(mesh, sizes, [&](const auto& i) {
      return static_cast<float>(src.data[order[i[0]] * pixels + i[1] * data.cols + i[2]]) / 255.0f;
    });
  }
  labels_t labels(const mp::idx_array& src, const std::uint32_t* order) const {
    return mp::generate<labels_t>(mesh, sizes, [&](const auto& i) {
      return static_cast<std::int32_t>(src.data[order[i[0]]]);
    });
  }

  // the README's network; x plain, the weights traced or plain
  template <class W1, class W2>
  static auto logits(const images_t& x, const W1& a, const W2& b) {
    auto h = mp::relu(mp::einsum<mp::shape<batch, hidden>>(x, a));
    return mp::einsum<mp::shape<batch, classes>>(h, b);
  }

  // the training loss of a batch, the weights traced: what backward() differentiates
  auto loss(const images_t& x, const labels_t& y) const {
    return mp::reduce_mean(mp::softmax_cross_entropy<classes>(logits(x, w1, w2), y));
  }

  // the fraction of the test set classified right (an argmax equal to the label)
  double test_accuracy() const {
    const std::size_t n =
        data.test_labels.dims[0] / sizes.template get<batch>() * sizes.template get<batch>();
    std::vector<std::uint32_t> order(n);
    std::iota(order.begin(), order.end(), 0u);
    double correct = 0;
    for (std::size_t first = 0; first < n; first += sizes.template get<batch>()) {
      const auto x = images(data.test_images, order.data() + first);
      const auto y = labels(data.test_labels, order.data() + first);
      const auto z = logits(x, w1.value(), w2.value());
      const auto best = mp::reduce_max<classes>(z);
      const auto target = mp::one_hot<classes>(y, sizes);
      const auto picked = mp::reduce_sum<classes>(target * z);
      correct +=
          static_cast<double>(*mp::reduce_sum(mp::cast<float>(picked >= best)).local().data());
    }
    return correct / static_cast<double>(n);
  }
};

// the optimizer --optimizer names, training the network's variables (behind the optimizer
// base class, so the training loop is compiled once per mesh, not once per optimizer too)
template <class Mesh>
std::unique_ptr<mp::optimizer> make_optimizer(const options& o, model<Mesh>& net) {
  std::unique_ptr<mp::optimizer> opt;
  if (o.optimizer == "sgd") {
    opt = std::make_unique<mp::sgd>(
        mp::sgd_options{.learning_rate = o.learning_rate > 0 ? o.learning_rate : 0.1}, net);
  } else {
    opt = std::make_unique<mp::adam>(
        mp::adam_options{.learning_rate = o.learning_rate > 0 ? o.learning_rate : 1e-3}, net);
  }
  // what is kept in shares over the data-parallel ranks (an error, on every rank, where the
  // layout has none)
  opt->set_shard(static_cast<mp::shard_level>(o.shard));
  return opt;
}

// planned_step(mesh, data, o): one step as train() takes it (the network, its optimizer, one
// batch), on images and labels made here, since a plan reads no data: what --layout auto
// plans and prices on a planned mesh (docs/plans.md, "Layout search")
template <class Mesh>
void planned_step(const Mesh& mesh, const mp::mnist_data& data, const options& o) {
  model<Mesh> net(mesh, data, o);
  const auto opt = make_optimizer(o, net);
  const auto x = mp::random_uniform<float, batch, rows, cols>(mesh, net.sizes, 3, 0.0f, 1.0f);
  const auto y = mp::generate<typename model<Mesh>::labels_t>(
      mesh, net.sizes, [](const auto& i) { return static_cast<std::int32_t>(i[0] % 10); });
  mp::backward(net.loss(x, y));
  opt->step();
}

template <class Mesh>
void train(const Mesh& mesh, const mp::mnist_data& data, const options& o) {
  const std::string& layout_name = o.layout;
  model<Mesh> net(mesh, data, o);
  const auto opt = make_optimizer(o, net);
  const bool talk = mesh.rank() == 0;
  const std::size_t n = data.train_labels.dims[0];
  const std::size_t per_epoch = n / o.batch;
  const std::size_t total = o.steps ? o.steps : per_epoch * o.epochs;
  // the training state: the weights, the optimizer, the steps done; the data order and the
  // weights' initial values are functions of the seed, so the seed and the step are all the
  // random state there is (the batch size fixes which examples a step takes)
  std::size_t done = 0;
  std::uint64_t seed = o.seed;
#ifdef MESHPP_EXAMPLE_CHECKPOINTS
  std::size_t batch_size = o.batch;
  mp::checkpoint state;
  state.add(net).add(*opt).add("step", done).add("seed", seed).add("batch", batch_size);
  if (o.resume) {
    mp::load(o.checkpoint, mesh, state);  // every rank alike: a bad file is an error everywhere
    if (batch_size != o.batch)
      throw mp::error("mnist: " + o.checkpoint + " was trained with --batch " +
                      std::to_string(batch_size) + ", not " + std::to_string(o.batch));
    if (talk && !o.json)
      std::printf("resumed from %s after step %zu (seed %llu)\n", o.checkpoint.c_str(), done,
                  static_cast<unsigned long long>(seed));
  }
  auto save = [&](std::size_t step) {
    done = step;
    mp::save(o.checkpoint, mesh, state);
  };
#else
  auto save = [](std::size_t) {};
#endif
  const std::size_t trained = total > done ? total - done : 0;  // steps this run takes
  // the rate of each step: the optimizer's (or --learning-rate) throughout, or warmup and cosine
  const double peak = opt->learning_rate();
  const std::function<double(std::int64_t)> schedule =
      o.schedule == "cosine"
          ? std::function<double(std::int64_t)>(mp::warmup_cosine(
                peak, static_cast<std::int64_t>(o.warmup), static_cast<std::int64_t>(total), 0.1))
          : std::function<double(std::int64_t)>(mp::constant_rate(peak));
  std::vector<std::uint32_t> order;
  mesh.world().barrier();
  const auto start = std::chrono::steady_clock::now();
  auto last = start;
  for (std::size_t step = done + 1; step <= total; ++step) {
    const std::size_t epoch = (step - 1) / per_epoch, in_epoch = (step - 1) % per_epoch;
    if (in_epoch == 0 || order.empty()) order = epoch_order(n, seed, epoch);
    const std::uint32_t* at = order.data() + in_epoch * o.batch;
    const auto x = net.images(data.train_images, at);
    const auto y = net.labels(data.train_labels, at);
    auto loss = net.loss(x, y);
    mp::backward(loss);
    if (o.clip_norm > 0) mp::clip_grad_norm(*opt, o.clip_norm);  // one allreduce of one value
    mp::apply_schedule(*opt, schedule);  // the rate of step opt->steps() + 1, this one
    opt->step();
    if (step % o.log_every == 0 || step == total) {
      const auto now = std::chrono::steady_clock::now();
      const double seconds = std::chrono::duration<double>(now - last).count();
      const std::size_t since = step % o.log_every ? step % o.log_every : o.log_every;
      const double rate = static_cast<double>(since * o.batch) / seconds;
      last = now;
      const double value = static_cast<double>(*loss.value().local().data());
      if (talk && o.json) {
        std::printf(
            "{\"record\": \"step\", \"step\": %zu, \"loss\": %.9f, \"epoch\": %zu, "
            "\"examples_per_second\": %.1f}\n",
            step, value, epoch + 1, rate);
      } else if (talk) {
        std::printf("epoch %zu  step %6zu  loss %.6f  examples/s %9.1f\n", epoch + 1, step, value,
                    rate);
      }
      std::fflush(stdout);
    }
    if (!o.checkpoint.empty() &&
        ((o.checkpoint_every && step % o.checkpoint_every == 0) || step == total))
      save(step);
  }
  mesh.world().barrier();
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const double accuracy = net.test_accuracy();
  // the largest peak resident memory over the ranks (collective: every rank asks)
  const double peak_mib = static_cast<double>(mp::peak_resident_bytes(mesh.world())) / (1 << 20);
  if (talk && o.json) {
    std::printf("{\"record\": \"evaluation\", \"step\": %zu, \"test_accuracy\": %.4f}\n", total,
                accuracy);
    std::printf(
        "{\"record\": \"final\", \"test_accuracy\": %.4f, \"seconds\": %.3f, \"layout\": \"%s\", "
        "\"ranks\": %d, "
        "\"mesh\": \"%s\", \"steps\": %zu, \"batch\": %zu, \"optimizer\": \"%s\", "
        "\"examples_per_second\": %.1f, \"peak_rss_mib\": %.1f}\n",
        accuracy, seconds, layout_name.c_str(), mesh.world().size(), mesh.describe().c_str(), total,
        o.batch, o.optimizer.c_str(), static_cast<double>(trained * o.batch) / seconds, peak_mib);
  } else if (talk) {
    std::printf(
        "test accuracy %.4f after %zu steps (%.1f s training, %s layout, %d ranks, peak %.0f MiB a "
        "rank)\n",
        accuracy, total, seconds, layout_name.c_str(), mesh.world().size(), peak_mib);
  }
}

// The Mesh-TensorFlow README's three layouts (the mesh fitted to the number of ranks in main)
using mesh_data = mp::mesh<mp::axes<all>, mp::layout<mp::split<batch, all>>>;
using mesh_model = mp::mesh<mp::axes<all>, mp::layout<mp::split<hidden, all>>>;
using mesh_data_model =
    mp::mesh<mp::axes<processor_rows, processor_cols>,
             mp::layout<mp::split<batch, processor_rows>, mp::split<hidden, processor_cols>>>;

// compiled in mnist_2d.cpp, so that no translation unit holds all three layouts
extern template void train(const mesh_data_model&, const mp::mnist_data&, const options&);
extern template void planned_step(const mesh_data_model&, const mp::mnist_data&, const options&);
