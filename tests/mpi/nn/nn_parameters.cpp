// A model's parameters found from the parts it declares once (autodiff/parameters.hpp): the
// walk's order and names through nested models, vectors and tuples of layers; the global
// parameter count against the sizes written out; an optimizer and a checkpoint given the model
// hold exactly its variables; training with opt.add(model) takes the same steps as with the
// variables listed by hand; set_inference reaches every dropout of the model and back;
// seed_for gives each name its own seed, the same on every rank.
#include <meshpp/autodiff/parameters.hpp>
#include <meshpp/io/checkpoint.hpp>
#include <meshpp/nn/dropout.hpp>
#include <meshpp/nn/embedding.hpp>
#include <meshpp/optim/adam.hpp>
#include <meshpp/optim/sgd.hpp>

#include <boost/mpi/collectives.hpp>

#include <cstddef>
#include <cstdint>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "nn_dense_check.hpp"
#include "shared_dir.hpp"

using namespace nn_dense_test;
using meshpp_test::world;

MESHPP_DIM(width);

namespace {

// the dense tests' sizes, and a second width for the hidden layers
const auto psizes = mp::extents{batch{} = 4, io{} = 6, hidden{} = 4, width{} = 3};

using mesh_t = batch_hidden_mesh;
using relu = mp::activation::relu;
using hidden_layer = mp::dense<double, mp::shape<hidden>, mp::shape<width>, mesh_t, relu>;
using x_t = mp::tensor_of<double, mp::shape<batch, io>, mesh_t>;
using scale_t = mp::tensor_of<double, mp::shape<width>, mesh_t>;

// a model of a model: an input layer, a vector of hidden layers (side by side, summed), a bare
// variable and a dropout (no variables, a mode)
struct trunk {
  mp::dense<double, mp::shape<io>, mp::shape<hidden>, mesh_t, relu> in;
  std::vector<hidden_layer> hidden_layers;
  mp::dropout_layer drop;

  trunk(const mesh_t& m, std::uint64_t seed, std::size_t depth)
      : in(m, psizes, mp::seed_for(seed, "in"), "in"), drop(0.5, mp::seed_for(seed, "drop")) {
    for (std::size_t i = 0; i < depth; ++i) {
      const std::string name = "hidden" + std::to_string(i);
      hidden_layers.emplace_back(m, psizes, mp::seed_for(seed, name), name);
    }
  }
  auto layers() const { return std::tie(in, hidden_layers, drop); }
};

struct model {
  trunk body;
  mp::variable<scale_t> scale;
  mp::dropout_layer head_drop;

  model(const mesh_t& m, std::uint64_t seed, std::size_t depth)
      : body(m, seed, depth),
        scale(mp::random_uniform<scale_t>(m, psizes, mp::seed_for(seed, "scale"), 0.5, 1.5),
              "scale"),
        head_drop(0.25, mp::seed_for(seed, "head_drop")) {}
  auto layers() const { return std::tie(body, scale, head_drop); }

  // a scalar loss of x through every layer (dropout in training mode draws masks)
  auto loss(const x_t& x) {
    const auto h = body.in(x);
    auto sum = body.hidden_layers.at(0)(h);
    for (std::size_t i = 1; i < body.hidden_layers.size(); ++i)
      sum = sum + body.hidden_layers[i](h);
    return mp::reduce_sum(head_drop(body.drop(sum) * scale));
  }
};

// what an optimizer looks like to add_variables: anything with add(variable)
struct collector {
  std::vector<std::string> names;
  template <class V>
  void add(const V& v) {
    names.push_back(v.name());
  }
};

x_t input(const mesh_t& m) { return mp::random_normal<x_t>(m, psizes, 77, 0.0, 1.0); }

// whole(v): a variable's value gathered whole, as plain numbers
template <class V>
std::vector<double> whole(const V& v) {
  const auto g = mp::gather(v.value());
  return std::vector<double>(g.begin(), g.end());
}

}  // namespace

TEST_CASE("parameters: the walk visits every variable of nested parts, in declaration order") {
  mesh_t m(meshpp_test::grid2(world().size()));
  const model net(m, 3, 2);
  collector c;
  mp::add_variables(c, net);
  CHECK(c.names == std::vector<std::string>{"in/w", "in/b", "hidden0/w", "hidden0/b", "hidden1/w",
                                            "hidden1/b", "scale"});
  // a tuple and a vector of parts are parts too
  collector d;
  mp::add_variables(d, std::tie(net.scale), net.body.hidden_layers);
  CHECK(d.names ==
        std::vector<std::string>{"scale", "hidden0/w", "hidden0/b", "hidden1/w", "hidden1/b"});
  // the handles share the model's values
  mp::for_each_variable(net, [](auto v) { v.value().local().fill(2.0); });
  CHECK(net.scale.value().local()(0) == 2.0);
  CHECK(net.body.hidden_layers[1].weight().value().local()(0, 0) == 2.0);
}

TEST_CASE("parameters: parameter_count is the global elements of every variable") {
  mesh_t m(meshpp_test::grid2(world().size()));
  const model net(m, 3, 2);
  const std::size_t io_n = 6, h = 4, w = 3;  // psizes
  const std::size_t want = (io_n * h + h) + 2 * (h * w + w) + w;
  CHECK(mp::parameter_count(net) == want);
  CHECK(mp::parameter_count(net.body.in) == io_n * h + h);
  CHECK(mp::parameter_count(std::tuple<>{}) == 0);
}

TEST_CASE("parameters: an optimizer and a checkpoint given the model hold exactly its variables") {
  mesh_t m(meshpp_test::grid2(world().size()));
  const model net(m, 3, 2);
  mp::adam opt({.learning_rate = 1e-2}, net);
  REQUIRE(opt.size() == 7);
  collector c;
  mp::add_variables(c, net);
  for (std::size_t i = 0; i < opt.size(); ++i) CHECK(opt.variable_name(i) == c.names[i]);
  // a variable added twice is an error naming it
  CHECK_THROWS_WITH_AS(opt.add(net.scale),
                       "meshpp::optimizer::add(variables...): variable 'scale' was added twice",
                       mp::error);
  // the checkpoint: every variable by its own name, and back into another model
  mp::checkpoint saved;
  saved.add(net).add(opt);
  const meshpp_test::shared_dir dir;
  const std::string path = dir / "parameters.h5";
  mp::save(path, m, saved);
  const model other(m, 4, 2);  // another seed: other values
  CHECK_ALL_RANKS(whole(other.scale) != whole(net.scale));
  mp::checkpoint loaded;
  loaded.add(other);
  mp::load(path, m, loaded);
  std::vector<std::vector<double>> want, got;
  mp::for_each_variable(net, [&](const auto& v) { want.push_back(whole(v)); });
  mp::for_each_variable(other, [&](const auto& v) { got.push_back(whole(v)); });
  CHECK_ALL_RANKS(got == want);
}

TEST_CASE("parameters: training with opt.add(model) takes the steps of the variables by hand") {
  mesh_t m(meshpp_test::grid2(world().size()));
  model a(m, 5, 2), b(m, 5, 2);
  mp::set_inference(a, true);  // no dropout: the steps are deterministic either way
  mp::set_inference(b, true);
  mp::sgd by_model({.learning_rate = 0.05}, a);
  mp::sgd by_hand({.learning_rate = 0.05}, b.body.in.weight(), b.body.in.bias(),
                  b.body.hidden_layers[0].weight(), b.body.hidden_layers[0].bias(),
                  b.body.hidden_layers[1].weight(), b.body.hidden_layers[1].bias(), b.scale);
  const auto x = input(m);
  for (int step = 0; step < 3; ++step) {
    const auto la = a.loss(x);
    const auto lb = b.loss(x);
    CHECK(la.item() == lb.item());
    mp::backward(la);
    mp::backward(lb);
    by_model.step();
    by_hand.step();
  }
  CHECK_ALL_RANKS(whole(a.body.hidden_layers[1].weight()) ==
                  whole(b.body.hidden_layers[1].weight()));
  CHECK_ALL_RANKS(whole(a.scale) == whole(b.scale));
}

TEST_CASE("parameters: set_inference reaches every dropout of the model, and back") {
  mesh_t m(meshpp_test::grid2(world().size()));
  model net(m, 3, 1);
  CHECK(!net.body.drop.inference);
  CHECK(!net.head_drop.inference);
  mp::set_inference(net, true);
  CHECK(net.body.drop.inference);
  CHECK(net.head_drop.inference);
  // in inference the loss is a function of the input alone; in training each call draws new
  // masks (of a few elements: some draws may repeat a loss, not all of eight)
  const auto x = input(m);
  const auto losses = [&] {
    std::set<double> seen;
    for (int k = 0; k < 8; ++k) seen.insert(net.loss(x).item());
    return seen.size();
  };
  CHECK(losses() == 1);
  mp::set_inference(net, false);
  CHECK(!net.body.drop.inference);
  CHECK(!net.head_drop.inference);
  CHECK(losses() > 1);
  CHECK(net.body.drop.step() == 8);
}

TEST_CASE("parameters: seed_for gives each name its own seed, the same on every rank") {
  std::set<std::uint64_t> seeds;
  for (const char* name : {"tokens", "positions", "unembed", "block0", "block1", "block10"})
    seeds.insert(mp::seed_for(1, name));
  seeds.insert(mp::seed_for(2, "tokens"));
  CHECK(seeds.size() == 7);
  static_assert(mp::seed_for(1, "w") == mp::seed_for(1, "w"));  // constexpr
  // the same on every rank: one value, its maximum and minimum over the ranks agree
  const std::uint64_t s = mp::seed_for(42, "block3");
  std::uint64_t lo = 0, hi = 0;
  boost::mpi::all_reduce(world(), s, lo, boost::mpi::minimum<std::uint64_t>());
  boost::mpi::all_reduce(world(), s, hi, boost::mpi::maximum<std::uint64_t>());
  CHECK(lo == s);
  CHECK(hi == s);
  // and a layer seeded by name is the same bits under another layout
  mesh_t m1(meshpp_test::grid2(world().size()));
  replicated_mesh m2(meshpp_test::grid2(world().size()));
  mp::dense<double, mp::shape<io>, mp::shape<hidden>, mesh_t> l1(m1, psizes, mp::seed_for(9, "l"));
  mp::dense<double, mp::shape<io>, mp::shape<hidden>, replicated_mesh> l2(m2, psizes,
                                                                          mp::seed_for(9, "l"));
  CHECK_ALL_RANKS(whole(l1.weight()) == whole(l2.weight()));
}
