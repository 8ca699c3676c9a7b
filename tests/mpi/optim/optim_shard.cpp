// Sharded optimizer state (optim/optimizer.hpp, shard_level::state; ZeRO's stage 1): SGD with
// momentum, Adam and AdamW on a matrix and a vector, split and replicated layouts, against the
// single-rank references in plain loops; every update of a variable with replicas sharded and
// its allgather counted (the sharded updates' formula); the same bits as the unsharded
// optimizer; this rank's state bytes 1/p of the whole (its share of the local slice); the
// errors: a level not built, a rule that is not element-wise (Adafactor), no mesh dim to shard
// over, a level changed after the first step.
#include <meshpp/optim/adafactor.hpp>
#include <meshpp/optim/adam.hpp>
#include <meshpp/optim/sgd.hpp>

#include <boost/mpi/collectives.hpp>

#include <cstddef>
#include <functional>
#include <type_traits>

#include "optim_check.hpp"

namespace mp = meshpp;
using namespace optim_check;
using meshpp_test::world;

namespace {

const schedule sharded_state{.shard = mp::shard_level::state};

template <class Mesh, class Opt, class Ref>
void run_sharded(const Mesh& m, Opt&& opt, const Ref& ref) {
  using matrix_t = mp::tensor_of<double, mp::shape<rows, cols>, Mesh>;
  using vector_t = mp::tensor_of<double, mp::shape<cols>, Mesh>;
  tracked<vector_t, Ref> vector(m, 0, ref);  // skips step 2
  tracked<matrix_t, Ref> matrix(m, 1, ref);
  run(opt, sharded_state, vector, matrix);
  CHECK(opt.shard() == mp::shard_level::state);
}

template <class Mesh>
void check_all(const Mesh& m) {
  SUBCASE("sgd, momentum") {
    run_sharded(m, mp::sgd({.learning_rate = 0.1, .momentum = 0.9}),
                sgd_reference{0.1, 0.9, false, 0});
  }
  SUBCASE("sgd, nesterov momentum and weight decay") {
    run_sharded(
        m, mp::sgd({.learning_rate = 0.05, .momentum = 0.8, .nesterov = true, .weight_decay = 0.1}),
        sgd_reference{0.05, 0.8, true, 0.1});
  }
  SUBCASE("adam") {
    run_sharded(m, mp::adam({.learning_rate = 0.01, .beta1 = 0.8, .beta2 = 0.99, .epsilon = 1e-6}),
                adam_reference{0.01, 0.8, 0.99, 1e-6, 0});
  }
  SUBCASE("adamw") {
    run_sharded(m, mp::adamw({.learning_rate = 0.01, .weight_decay = 0.3}),
                adam_reference{0.01, 0.9, 0.999, 1e-8, 0.3});
  }
}

// state_share(v): the elements of v's local slice this rank's share of the state holds (the
// shares of the sharded updates: shared_update's values), all of them without replicas
template <class Tensor>
std::size_t state_share(const Tensor& v) {
  const auto c = shared_update(v);
  return c.calls ? c.values : v.local().size();
}

}  // namespace

TEST_CASE("sharded state: sgd, adam, adamw match plain-loop references, split layout") {
  // the vector [cols/b] is replicated over a, the matrix split over both (nothing to shard)
  check_all(split_mesh(meshpp_test::grid2(world().size())));
}

TEST_CASE("sharded state: sgd, adam, adamw match plain-loop references, replicated layout") {
  check_all(replicated_mesh(meshpp_test::grid2(world().size())));
}

TEST_CASE("sharded state: the same bits as unsharded, and 1/p of the state bytes") {
  using M = replicated_mesh;
  M m(meshpp_test::grid2(world().size()));
  using matrix_t = mp::tensor_of<float, mp::shape<layer, rows, cols>, M>;
  auto value = [&](int w) { return filled<matrix_t>(m, [w](auto i) { return initial(i, w); }); };
  mp::variable<matrix_t> plain(value(1), "plain"), sharded(value(1), "sharded");
  mp::adam whole_state({.learning_rate = 0.01}), state_in_shares({.learning_rate = 0.01});
  whole_state.set_sharding(mp::sharding::off);
  state_in_shares.set_shard(mp::shard_level::state);
  whole_state.add(plain);
  state_in_shares.add(sharded);
  CHECK(state_in_shares.state_bytes() == 0);  // made at the first update
  for (int k = 0; k < 6; ++k) {
    const auto g = filled<matrix_t>(m, [k](auto i) { return gradient(i, 1, k); });
    plain.grad() = g;
    sharded.grad() = g;
    whole_state.step();
    state_in_shares.step();
    CHECK_ALL_RANKS(meshpp_test::bit_equal(plain.value().local(), sharded.value().local()));
  }
  const std::size_t n = plain.value().local().size();
  CHECK(whole_state.state_bytes() == 2 * n * sizeof(float));  // m and v
  CHECK(state_in_shares.state_bytes() == 2 * state_share(sharded.value()) * sizeof(float));
  // summed over the replicas (every rank here), the shares are the whole once
  const auto total = boost::mpi::all_reduce(world(), state_in_shares.state_bytes(), std::plus<>());
  CHECK(total == 2 * n * sizeof(float));
}

TEST_CASE("sharded state: what does not apply is an error on every rank, before any step") {
  replicated_mesh m(meshpp_test::grid2(world().size()));
  using matrix_t = mp::tensor_of<double, mp::shape<rows, cols>, replicated_mesh>;
  mp::variable<matrix_t> w(filled<matrix_t>(m, [](auto i) { return initial(i, 0); }), "w");
  SUBCASE("level 3 is not built") {
    mp::adam opt({}, w);
    CHECK_THROWS_WITH_AS(opt.set_shard(mp::shard_level::parameters),
                         "meshpp::optimizer::set_shard: shard level 3 (parameters) is not built; "
                         "levels 1 (state) and 2 (gradients) are",
                         mp::error);
    CHECK(opt.shard() == mp::shard_level::none);
  }
  SUBCASE("adafactor's rule is not element-wise") {
    mp::adafactor opt({}, w);
    CHECK_THROWS_WITH_AS(
        opt.set_shard(mp::shard_level::state),
        "meshpp::optimizer::set_shard: the state of variable 'w' cannot be sharded: this "
        "optimizer's rule is not element-wise (Adafactor's statistics are means over rows and "
        "columns); use shard level 0",
        mp::error);
    // and for a variable added after the level was set: at the step, before any update
    mp::adafactor later;
    later.set_shard(mp::shard_level::state);
    later.add(w);
    w.grad() = filled<matrix_t>(m, [](auto i) { return gradient(i, 0, 0); });
    const auto before = mp::gather(w.value());
    CHECK_THROWS_WITH_AS(later.step(),
                         doctest::Contains("meshpp::optimizer::step(): the state of "
                                           "variable 'w' cannot be sharded"),
                         mp::error);
    CHECK_ALL_RANKS(meshpp_test::bit_equal(mp::gather(w.value()), before));
  }
  SUBCASE("a model-parallel layout leaves nothing to shard over") {
    split_mesh s(meshpp_test::grid2(world().size()));
    using split_t = mp::tensor_of<double, mp::shape<rows, cols>, split_mesh>;
    mp::variable<split_t> v(filled<split_t>(s, [](auto i) { return initial(i, 0); }), "v");
    mp::adam opt({}, v);
    CHECK_THROWS_WITH_AS(opt.set_shard(mp::shard_level::state),
                         doctest::Contains("no variable has a mesh dim to shard its state over"),
                         mp::error);
  }
  SUBCASE("the level is chosen before the first step") {
    mp::adam opt({}, w);
    w.grad() = filled<matrix_t>(m, [](auto i) { return gradient(i, 0, 0); });
    opt.step();
    CHECK_THROWS_WITH_AS(opt.set_shard(mp::shard_level::state),
                         "meshpp::optimizer::set_shard: the state exists after 1 steps; choose "
                         "the level before the first step (or before loading a checkpoint)",
                         mp::error);
    opt.set_shard(mp::shard_level::none);  // the level it has: no change, no error
  }
}
