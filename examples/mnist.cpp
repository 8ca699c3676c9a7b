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
//   [--steps N] [--log-every N] [--seed S] [--json]
//
// Data: MNIST-format IDX files (gzip or raw) in DIR, by default Debian's dataset-fashion-mnist
// (/usr/share/datasets/fashion-mnist). Every rank reads them; each builds only its own slice of
// each batch, from the global index, so the data order and the initial weights are the same
// under every layout and rank count (layouts change performance, never results).
//
// Output (rank 0): a progress line every --log-every steps (epoch, step, loss, examples/s) and
// the test accuracy at the end; with --json, instead, one JSON object per progress line
// {"step", "loss", "epoch", "examples_per_second"} and a final one {"test_accuracy",
// "seconds", "layout", "ranks", ...}.
#include <meshpp/meshpp.hpp>

#include <array>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
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

namespace {

struct options {
  std::string data = mp::default_fashion_mnist_dir;
  std::string layout = "data";
  std::string optimizer = "adam";
  double learning_rate = -1;  // the optimizer's default
  std::size_t batch = 100, hidden = 1024;
  std::size_t epochs = 5, steps = 0;  // steps > 0: stop after that many steps
  std::size_t log_every = 100;
  std::uint64_t seed = 1;
  bool json = false;
};

// The order of the training examples in each epoch: a Fisher-Yates shuffle driven by a
// splitmix64 stream, so every rank (and every platform) draws the same order.
std::vector<std::uint32_t> epoch_order(std::size_t n, std::uint64_t seed, std::size_t epoch) {
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
        w1(mp::random_uniform<float, rows, cols, hidden>(m, sizes, o.seed,
                                                         -limit(d.rows * d.cols, o.hidden),
                                                         limit(d.rows * d.cols, o.hidden)),
           "w1"),
        w2(mp::random_uniform<float, hidden, classes>(m, sizes, o.seed + 1, -limit(o.hidden, 10),
                                                      limit(o.hidden, 10)),
           "w2") {}

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

template <class Optimizer, class Mesh>
void train(const Mesh& mesh, const mp::mnist_data& data, const options& o,
           const std::string& layout_name, Optimizer opt) {
  model<Mesh> net(mesh, data, o);
  opt.add(net.w1);
  opt.add(net.w2);
  const bool talk = mesh.rank() == 0;
  const std::size_t n = data.train_labels.dims[0];
  const std::size_t per_epoch = n / o.batch;
  const std::size_t total = o.steps ? o.steps : per_epoch * o.epochs;
  std::vector<std::uint32_t> order;
  mesh.world().barrier();
  const auto start = std::chrono::steady_clock::now();
  auto last = start;
  for (std::size_t step = 1; step <= total; ++step) {
    const std::size_t epoch = (step - 1) / per_epoch, in_epoch = (step - 1) % per_epoch;
    if (in_epoch == 0) order = epoch_order(n, o.seed, epoch);
    const std::uint32_t* at = order.data() + in_epoch * o.batch;
    const auto x = net.images(data.train_images, at);
    const auto y = net.labels(data.train_labels, at);
    auto loss = mp::reduce_mean(
        mp::softmax_cross_entropy<classes>(model<Mesh>::logits(x, net.w1, net.w2), y));
    mp::backward(loss);
    opt.step();
    if (step % o.log_every == 0 || step == total) {
      const auto now = std::chrono::steady_clock::now();
      const double seconds = std::chrono::duration<double>(now - last).count();
      const std::size_t since = step % o.log_every ? step % o.log_every : o.log_every;
      const double rate = static_cast<double>(since * o.batch) / seconds;
      last = now;
      const double value = static_cast<double>(*loss.value().local().data());
      if (talk && o.json) {
        std::printf(
            "{\"step\": %zu, \"loss\": %.9f, \"epoch\": %zu, \"examples_per_second\": %.1f}\n",
            step, value, epoch + 1, rate);
      } else if (talk) {
        std::printf("epoch %zu  step %6zu  loss %.6f  examples/s %9.1f\n", epoch + 1, step, value,
                    rate);
      }
      std::fflush(stdout);
    }
  }
  mesh.world().barrier();
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const double accuracy = net.test_accuracy();
  if (talk && o.json) {
    std::printf(
        "{\"test_accuracy\": %.4f, \"seconds\": %.3f, \"layout\": \"%s\", \"ranks\": %d, "
        "\"mesh\": \"%s\", \"steps\": %zu, \"batch\": %zu, \"optimizer\": \"%s\", "
        "\"examples_per_second\": %.1f}\n",
        accuracy, seconds, layout_name.c_str(), mesh.world().size(), mesh.describe().c_str(), total,
        o.batch, o.optimizer.c_str(), static_cast<double>(total * o.batch) / seconds);
  } else if (talk) {
    std::printf("test accuracy %.4f after %zu steps (%.1f s training, %s layout, %d ranks)\n",
                accuracy, total, seconds, layout_name.c_str(), mesh.world().size());
  }
}

template <class Mesh>
void run(const Mesh& mesh, const mp::mnist_data& data, const options& o) {
  if (o.optimizer == "sgd") {
    train(mesh, data, o, o.layout,
          mp::sgd({.learning_rate = o.learning_rate > 0 ? o.learning_rate : 0.1}));
  } else {
    train(mesh, data, o, o.layout,
          mp::adam({.learning_rate = o.learning_rate > 0 ? o.learning_rate : 1e-3}));
  }
}

options parse(int argc, char** argv) {
  options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto text = [&]() -> std::string {
      if (i + 1 >= argc) throw mp::error("mnist: " + a + " needs a value");
      return argv[++i];
    };
    auto count = [&]() -> std::size_t {
      const std::string v = text();
      std::size_t used = 0;
      unsigned long long x = 0;
      try {
        x = std::stoull(v, &used);
      } catch (const std::exception&) {
        used = 0;
      }
      if (used != v.size() || v.empty() || v[0] == '-')
        throw mp::error("mnist: " + a + " needs a non-negative integer, not '" + v + "'");
      return static_cast<std::size_t>(x);
    };
    if (a == "--data")
      o.data = text();
    else if (a == "--layout")
      o.layout = text();
    else if (a == "--optimizer")
      o.optimizer = text();
    else if (a == "--learning-rate")
      o.learning_rate = std::stod(text());
    else if (a == "--batch")
      o.batch = count();
    else if (a == "--hidden")
      o.hidden = count();
    else if (a == "--epochs")
      o.epochs = count();
    else if (a == "--steps")
      o.steps = count();
    else if (a == "--log-every")
      o.log_every = count();
    else if (a == "--seed")
      o.seed = count();
    else if (a == "--json")
      o.json = true;
    else if (a == "--help") {
      std::printf(
          "usage: mnist [--data DIR] [--layout data|model|data+model] [--optimizer adam|sgd]\n"
          "             [--learning-rate X] [--batch B] [--hidden H] [--epochs E] [--steps N]\n"
          "             [--log-every N] [--seed S] [--json]\n");
      std::exit(0);
    } else {
      throw mp::error("mnist: unknown argument '" + a + "' (try --help)");
    }
  }
  if (o.layout != "data" && o.layout != "model" && o.layout != "data+model")
    throw mp::error("mnist: --layout must be data, model or data+model, not '" + o.layout + "'");
  if (o.optimizer != "adam" && o.optimizer != "sgd")
    throw mp::error("mnist: --optimizer must be adam or sgd, not '" + o.optimizer + "'");
  if (o.batch == 0 || o.hidden == 0 || o.log_every == 0)
    throw mp::error("mnist: --batch, --hidden and --log-every must be positive");
  return o;
}

// rows x cols = n, as square as possible
std::array<int, 2> squarest(int n) {
  int r = 1;
  for (int f = 1; f * f <= n; ++f)
    if (n % f == 0) r = f;
  return {r, n / r};
}

}  // namespace

int main(int argc, char** argv) {
  mp::environment env(argc, argv);
  try {
    const options o = parse(argc, argv);  // the same arguments, so the same verdict, everywhere
    const boost::mpi::communicator world;
    const auto data = mp::load_mnist(world, o.data);
    if (o.batch * (o.steps ? 1 : o.epochs) > data.train_labels.dims[0] && !o.steps)
      throw mp::error("mnist: --batch is larger than the training set");
    const int n = world.size();
    using namespace mp;
    if (o.layout == "data") {
      run(mesh<axes<all>, layout<split<batch, all>>>({n}), data, o);
    } else if (o.layout == "model") {
      run(mesh<axes<all>, layout<split<hidden, all>>>({n}), data, o);
    } else {
      run(mesh<axes<processor_rows, processor_cols>,
               layout<split<batch, processor_rows>, split<hidden, processor_cols>>>(squarest(n)),
          data, o);
    }
  } catch (const mp::error& e) {
    // every rank threw (before any rank went on); each says why, since only the rank that met
    // the problem knows the details (a file missing on one node)
    std::fprintf(stderr, "mnist: rank %d: %s\n", boost::mpi::communicator().rank(), e.what());
    return 1;
  }
  return 0;
}
