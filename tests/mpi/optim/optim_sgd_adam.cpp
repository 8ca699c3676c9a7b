// SGD (plain, momentum, Nesterov, weight decay), Adam and AdamW: five steps on a matrix
// [rows/a, cols/b] and a vector [cols/b] (and the same replicated) in one optimizer, with
// fixed synthetic gradients, against single-rank references in plain double loops (float
// variables too); grads cleared, a variable without a grad left alone (state included), no
// sums; Adam's updates of replicated variables sharded (their allgathers counted), then not;
// errors, moves, zero_grad.
#include <meshpp/optim/adam.hpp>
#include <meshpp/optim/sgd.hpp>

#include <type_traits>
#include <utility>

#include "optim_check.hpp"

namespace mp = meshpp;
using namespace optim_check;
using meshpp_test::world;

namespace {

template <class Mesh, class Opt, class Ref>
void run_on(const Mesh& m, Opt&& opt, const Ref& ref, const schedule& s = {}) {
  using matrix_t = mp::tensor_of<double, mp::shape<rows, cols>, Mesh>;
  using vector_t = mp::tensor_of<double, mp::shape<cols>, Mesh>;
  tracked<vector_t, Ref> vector(m, 0, ref);  // skips step 2
  tracked<matrix_t, Ref> matrix(m, 1, ref);
  run(opt, s, vector, matrix);
}

template <class Mesh>
void check_all(const Mesh& m) {
  SUBCASE("sgd") { run_on(m, mp::sgd({.learning_rate = 0.1}), sgd_reference{0.1, 0, false, 0}); }
  SUBCASE("sgd, weight decay") {
    run_on(m, mp::sgd({.learning_rate = 0.1, .weight_decay = 0.05}),
           sgd_reference{0.1, 0, false, 0.05});
  }
  SUBCASE("sgd, momentum") {
    run_on(m, mp::sgd({.learning_rate = 0.1, .momentum = 0.9}), sgd_reference{0.1, 0.9, false, 0});
  }
  SUBCASE("sgd, nesterov momentum and weight decay") {
    run_on(m,
           mp::sgd({.learning_rate = 0.05, .momentum = 0.8, .nesterov = true, .weight_decay = 0.1}),
           sgd_reference{0.05, 0.8, true, 0.1});
  }
  SUBCASE("adam") {
    run_on(m, mp::adam({.learning_rate = 0.01, .beta1 = 0.8, .beta2 = 0.99, .epsilon = 1e-6}),
           adam_reference{0.01, 0.8, 0.99, 1e-6, 0});
  }
  SUBCASE("adam, defaults") {
    mp::adam opt;
    CHECK(opt.learning_rate() == 1e-3);
    run_on(m, opt, adam_reference{1e-3, 0.9, 0.999, 1e-8, 0});
  }
  SUBCASE("adamw") {
    run_on(m, mp::adamw({.learning_rate = 0.01, .weight_decay = 0.3}),
           adam_reference{0.01, 0.9, 0.999, 1e-8, 0.3});
  }
}

}  // namespace

TEST_CASE("sgd, adam, adamw match plain-loop references, split layout") {
  split_mesh m(meshpp_test::grid2(world().size()));
  check_all(m);
}

TEST_CASE("sgd, adam, adamw match plain-loop references, replicated layout") {
  replicated_mesh m(meshpp_test::grid2(world().size()));
  check_all(m);
}

TEST_CASE("adam, adamw sharded, then turned off: the state is completed first") {
  // the vector [cols/b] of the split layout is replicated over a; everything of the
  // replicated one over a and b
  auto check = [](const auto& m) {
    for (const int from : {0, 3}) {
      CAPTURE(from);
      const schedule s{.unshard_from = from};
      run_on(m, mp::adam({.learning_rate = 0.01}), adam_reference{0.01, 0.9, 0.999, 1e-8, 0}, s);
      run_on(m, mp::adamw({.learning_rate = 0.01, .weight_decay = 0.3}),
             adam_reference{0.01, 0.9, 0.999, 1e-8, 0.3}, s);
    }
  };
  check(split_mesh(meshpp_test::grid2(world().size())));
  check(replicated_mesh(meshpp_test::grid2(world().size())));
}

TEST_CASE("adam, sharding measured: each variable's choice agreed on every rank") {
  // 10 steps: the vector (no gradient at step 2) and the matrix each time their updates
  // sharded and whole and choose at their 7th update; run() checks every step's values against the
  // reference and its allgathers against the schedule and the choice
  auto check = [](const auto& m) {
    using M = std::remove_cvref_t<decltype(m)>;
    const adam_reference ref{0.01, 0.9, 0.999, 1e-8, 0};
    tracked<mp::tensor_of<double, mp::shape<cols>, M>, adam_reference> vector(m, 0, ref);
    tracked<mp::tensor_of<double, mp::shape<rows, cols>, M>, adam_reference> matrix(m, 1, ref);
    mp::adam opt({.learning_rate = 0.01});
    run(opt, schedule{.steps = 10, .halve_rate = false, .sharding = mp::sharding::measured}, vector,
        matrix);
    CHECK(opt.sharding_mode() == mp::sharding::measured);
    for (std::size_t i = 0; i < opt.size(); ++i) {
      CAPTURE(i);
      const bool mine = opt.sharded_updates(i);
      const bool all_sharded = meshpp_test::all_ranks(mine);
      const bool none_sharded = meshpp_test::all_ranks(!mine);
      CHECK(all_sharded != none_sharded);
    }
  };
  check(split_mesh(meshpp_test::grid2(world().size())));
  check(replicated_mesh(meshpp_test::grid2(world().size())));
}

TEST_CASE("sgd, adam, adamw on float variables, split layout") {
  split_mesh m(meshpp_test::grid2(world().size()));
  using matrix_t = mp::tensor_of<float, mp::shape<rows, cols>, split_mesh>;
  auto on = [&](auto&& opt, const auto& ref) {
    tracked<matrix_t, std::remove_cvref_t<decltype(ref)>> matrix(m, 1, ref);
    // the reference starts from the float-rounded values and sees the float gradients
    for (auto& x : matrix.p) x = static_cast<float>(x);
    run(opt, schedule{.halve_rate = false, .tolerance = 1e-5}, matrix);
  };
  on(mp::sgd({.learning_rate = 0.1, .momentum = 0.9}), sgd_reference{0.1, 0.9, false, 0});
  on(mp::adam({.learning_rate = 0.01}), adam_reference{0.01, 0.9, 0.999, 1e-8, 0});
  on(mp::adamw({.learning_rate = 0.01}), adam_reference{0.01, 0.9, 0.999, 1e-8, 0.01});
}

TEST_CASE("optimizer errors, moves, zero_grad") {
  split_mesh m(meshpp_test::grid2(world().size()));
  using matrix_t = mp::tensor_of<double, mp::shape<rows, cols>, split_mesh>;
  tracked<matrix_t, adam_reference> w(m, 1, adam_reference{0.01, 0.9, 0.999, 1e-8, 0});
  mp::variable copy = w.var;  // shares w's node: the same variable
  mp::adam opt({.learning_rate = 0.01}, w.var);
  CHECK(opt.size() == 1);
  CHECK_ALL_RANKS(
      meshpp_test::throws_with<mp::error>([&] { opt.add(copy); }, {"variable '1'", "added twice"}));
  CHECK(opt.size() == 1);

  // a gradient of other sizes: every rank throws before any update
  w.var.grad() = matrix_t(m, mp::extents{rows{} = 2, cols{} = 6});
  const auto before = w.var.value().local();
  CHECK_ALL_RANKS(meshpp_test::throws_with<mp::error>(
      [&] { opt.step(); }, {"variable '1'", "[rows:2, cols:6]", "[rows:4, cols:6]"}));
  CHECK_ALL_RANKS(meshpp_test::bit_equal(w.var.value().local(), before));
  CHECK(opt.steps() == 0);
  opt.zero_grad();
  CHECK_ALL_RANKS(!w.var.grad());
  opt.step();  // no gradient: nothing changes
  CHECK_ALL_RANKS(meshpp_test::bit_equal(w.var.value().local(), before));

  // a moved optimizer keeps its variables, state and options
  w.set_gradient(0);
  opt.step();
  w.reference_step(0);
  mp::adam moved = std::move(opt);
  moved.set_learning_rate(0.005);
  w.ref.lr = 0.005;
  w.set_gradient(1);
  moved.step();
  w.reference_step(1);
  CHECK(moved.steps() == 3);
  CHECK(w.error() < tol);
}
