// Sharded state and gradients in training (optim/optimizer.hpp, shard_level): a two-layer
// network, relu(x w1) w2 against targets, trained 100 steps by backward() and step() under
// levels 0, 1 and 2 for SGD with momentum, Adam and AdamW, on a data-parallel mesh (batch
// split, the weights replicated) and on a 2-D one (batch over rows, hidden over cols: w1 and
// w2 split over cols, replicated over rows). Against level 0: the losses agree to 1e-6
// relative at every step (a reduce-scatter sums in another order than the allreduce); at level
// 1 the same bits. Counters per step at level 2: the weights' gradient sums are
// reduce-scatters over the replicas (this rank's local values; the bytes of the other
// members' shares), no allreduce of them is left, and each update allgathers the share; at
// level 1 the gradients are allreduced as at level 0. The gradients' global norm
// (clip_grad_norm) is the same at every level. Reading a gradient held in shares is an error
// naming the variable.
#include <meshpp/autodiff/einsum.hpp>
#include <meshpp/autodiff/elementwise.hpp>
#include <meshpp/autodiff/gradients.hpp>
#include <meshpp/autodiff/reduce.hpp>
#include <meshpp/core/create.hpp>
#include <meshpp/expr/functions.hpp>
#include <meshpp/optim/adam.hpp>
#include <meshpp/optim/clip.hpp>
#include <meshpp/optim/sgd.hpp>

#include <cmath>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "testing.hpp"

namespace mp = meshpp;
using meshpp_test::world;

MESHPP_DIM(batch);
MESHPP_DIM(io);
MESHPP_DIM(hidden);
MESHPP_DIM(out);
MESHPP_DIM(all);
MESHPP_DIM(rows);
MESHPP_DIM(cols);

namespace {

const auto sizes = mp::extents{batch{} = 24, io{} = 40, hidden{} = 36, out{} = 5};

using data_mesh = mp::mesh<mp::axes<all>, mp::layout<mp::split<batch, all>>>;
using grid_mesh =
    mp::mesh<mp::axes<rows, cols>, mp::layout<mp::split<batch, rows>, mp::split<hidden, cols>>>;

template <class Mesh>
struct network {
  mp::variable<mp::tensor_of<double, mp::shape<io, hidden>, Mesh>> w1;
  mp::variable<mp::tensor_of<double, mp::shape<hidden, out>, Mesh>> w2;
  mp::tensor_of<double, mp::shape<batch, io>, Mesh> x;
  mp::tensor_of<double, mp::shape<batch, out>, Mesh> y;
  explicit network(const Mesh& m)
      : w1(mp::random_normal<double, io, hidden>(m, sizes, 1, 0.0, 0.2), "w1"),
        w2(mp::random_normal<double, hidden, out>(m, sizes, 2, 0.0, 0.2), "w2"),
        x(mp::random_normal<double, batch, io>(m, sizes, 3)),
        y(mp::random_normal<double, batch, out>(m, sizes, 4)) {}
  auto layers() const { return std::tie(w1, w2); }
  auto loss() const {
    const auto h = mp::relu(mp::einsum<mp::shape<batch, hidden>>(x, w1));
    const auto d = mp::einsum<mp::shape<batch, out>>(h, w2) - y;
    return mp::reduce_mean(d * d);
  }
};

template <class Net>
std::unique_ptr<mp::optimizer> make(const std::string& kind, const Net& net) {
  if (kind == "sgd")
    return std::make_unique<mp::sgd>(mp::sgd_options{.learning_rate = 0.05, .momentum = 0.9}, net);
  if (kind == "adam")
    return std::make_unique<mp::adam>(mp::adam_options{.learning_rate = 0.01}, net);
  return std::make_unique<mp::adamw>(mp::adamw_options{.learning_rate = 0.01, .weight_decay = 0.1},
                                     net);
}

struct run_result {
  std::vector<double> losses, norms;
  std::uint64_t reduce_scatters = 0, allreduce_values = 0, allgathers = 0;
};

// train(mesh, kind, level, replicas): 100 steps; the counters of the last one
template <class Mesh>
run_result train(const Mesh& m, const std::string& kind, mp::shard_level level,
                 std::uint64_t replicas) {
  network<Mesh> net(m);
  auto opt = make(kind, net);
  opt->set_sharding(mp::sharding::off);  // level 0: every replica updates all of it
  opt->set_shard(level);
  run_result r;
  for (int k = 0; k < 100; ++k) {
    if (k == 99) m.counters().reset();
    auto loss = net.loss();
    r.losses.push_back(static_cast<double>(loss.item()));
    mp::backward(loss);
    if (level == mp::shard_level::gradients && k == 0 && replicas > 1) {
      CHECK_THROWS_WITH_AS(static_cast<void>(net.w1.grad()),
                           doctest::Contains("the gradient of variable 'w1' is summed in shares"),
                           mp::error);
    }
    // the gradients' global norm (a bound never reached: nothing clipped), from the shares
    // at level 2
    r.norms.push_back(mp::clip_grad_norm(*opt, 1e300));
    opt->step();
  }
  r.reduce_scatters = m.counters().total(mp::collective::reduce_scatter).calls;
  r.allreduce_values = m.counters().total(mp::collective::allreduce).values;
  r.allgathers = m.counters().total(mp::collective::allgather).calls;
  return r;
}

bool agree(const std::vector<double>& a, const std::vector<double>& b, double relative) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (!(std::abs(a[i] - b[i]) <= relative * std::abs(b[i]))) return false;
  }
  return true;
}

template <class Mesh>
void check_levels(const Mesh& m, std::uint64_t replicas) {
  for (const std::string kind : {"sgd", "adam", "adamw"}) {
    CAPTURE(kind);
    const auto none = train(m, kind, mp::shard_level::none, replicas);
    const auto state = train(m, kind, mp::shard_level::state, replicas);
    const auto gradients = train(m, kind, mp::shard_level::gradients, replicas);
    CHECK(none.losses.back() < none.losses.front() / 2);  // it trains
    CHECK(state.losses == none.losses);                   // the same bits
    CHECK(agree(gradients.losses, none.losses, 1e-6));
    CHECK(agree(state.norms, none.norms, 1e-12));
    CHECK(agree(gradients.norms, none.norms, 1e-6));
    // a group of one rank counts nothing; else per step: w1 and w2 reduce-scattered and
    // allgathered (level 2), allgathered (level 1)
    const std::uint64_t two = replicas > 1 ? 2 : 0;
    CHECK(none.reduce_scatters == 0);
    CHECK(none.allgathers == 0);
    CHECK(state.allgathers == two);
    CHECK(state.allreduce_values == none.allreduce_values);
    CHECK(gradients.reduce_scatters == two);
    CHECK(gradients.allgathers == two);
    // the weights' gradient values left the allreduces: what remains is the rest of the step
    if (replicas > 1) CHECK(gradients.allreduce_values < none.allreduce_values);
  }
}

}  // namespace

TEST_CASE("sharded state and gradients train as unsharded: data-parallel mesh") {
  const data_mesh m({world().size()});
  check_levels(m, static_cast<std::uint64_t>(world().size()));
}

TEST_CASE("sharded state and gradients train as unsharded: batch over rows, hidden over cols") {
  const grid_mesh m(meshpp_test::grid2(world().size()));
  check_levels(m, static_cast<std::uint64_t>(m.group_size(grid_mesh::mask_v<rows>)));
}
