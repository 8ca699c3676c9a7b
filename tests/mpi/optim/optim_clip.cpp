// Global-norm gradient clipping (optim/clip.hpp) at 1, 2 and 4 ranks: the norm over variables
// split over every mesh dim, split over some (replicated over the others) and replicated over
// all, against a single-rank reference over the whole gradients in plain loops; the same norm
// on every rank, from one allreduce of one value over the mesh (counted, in the operation "clip
// gradients" of the phase "optimizer"); every gradient scaled by max_norm / (norm + eps) when
// that is below 1, replicas alike, and the step using the clipped gradients; variables without
// a gradient left out; bad max_norm or eps, and variables on two meshes, throw on every rank
// before any communication; a NaN gradient gives a NaN norm and leaves the gradients alone.
#include <meshpp/optim/clip.hpp>
#include <meshpp/optim/sgd.hpp>

#include <boost/mpi/collectives.hpp>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <tuple>
#include <type_traits>
#include <vector>

#include "optim_check.hpp"

namespace mp = meshpp;
using namespace optim_check;
using meshpp_test::world;

namespace {

// whole_gradient(v, k): variable v's gradient at step k, whole, as its tensor holds it (rounded
// to its value type)
template <class Tracked>
std::vector<double> whole_gradient(const Tracked& v, int k) {
  using T = typename std::remove_cvref_t<decltype(v.var.value())>::value_type;
  std::vector<double> g(v.p.size());
  for (std::size_t i = 0; i < g.size(); ++i)
    g[i] = static_cast<double>(static_cast<T>(gradient(i, v.which, k)));
  return g;
}

// same_on_every_rank(x): every rank holds the same bits of x
bool same_on_every_rank(double x) {
  double root = x;
  boost::mpi::broadcast(world(), root, 0);
  return meshpp_test::all_ranks(std::memcmp(&root, &x, sizeof x) == 0);
}

// allreduces(mesh): the allreduce calls and values counted on the mesh
template <class Mesh>
mp::collective_count allreduces(const Mesh& m) {
  return m.counters().total(mp::collective::allreduce);
}

// check_clip(tolerance, vs...): at step k = 0, 1, with max_norm half the norm (clipped) and
// twice it (not clipped): the norm against the reference, the same on every rank, one allreduce
// of one value (none on one rank), the gradients scaled as the reference's, then a step of SGD
// (rate 1) with them
template <class... Tracked>
void check_clip(double tolerance, Tracked&... vs) {
  mp::sgd opt({.learning_rate = 1.0});
  opt.add(vs.var...);
  const auto& first = std::get<0>(std::tie(vs...));
  const auto& mesh = first.var.value().mesh();
  const bool communicates = world().size() > 1;
  for (int k = 0; k < 2; ++k) {
    for (const double ratio : {0.5, 2.0}) {
      CAPTURE(k);
      CAPTURE(ratio);
      (vs.set_gradient(k), ...);
      double squares = 0;
      auto add = [&](const auto& v) {
        for (double g : whole_gradient(v, k)) squares += g * g;
      };
      (add(vs), ...);
      const double expected = std::sqrt(squares);
      const double max_norm = ratio * expected;
      mesh.counters().reset();
      const double norm = mp::clip_grad_norm(opt, max_norm);
      CHECK(std::abs(norm - expected) <= tolerance * expected);
      CHECK(same_on_every_rank(norm));
      const auto counted = allreduces(mesh);
      CHECK(counted.calls == (communicates ? 1u : 0u));
      CHECK(counted.values == (communicates ? 1u : 0u));
      CHECK(mesh.counters().at(mp::collective::allreduce, 3u).calls == counted.calls);
      const double factor = std::min(1.0, max_norm / (expected + 1e-6));
      CHECK((ratio < 1) == (factor < 1));
      auto check = [&](auto& v) {
        CAPTURE(v.which);
        std::vector<double> g = whole_gradient(v, k);
        if (factor < 1)
          for (double& x : g) x *= factor;
        CHECK(max_error(*v.var.grad(), g) <= tolerance * (1 + expected));
        for (std::size_t i = 0; i < g.size(); ++i) v.p[i] -= g[i];  // SGD, rate 1
      };
      (check(vs), ...);
      opt.step();
      auto stepped = [&](const auto& v) {
        CAPTURE(v.which);
        CHECK(v.error() <= tolerance * (1 + expected));
      };
      (stepped(vs), ...);
    }
  }
}

template <class Mesh, class T>
void check_layouts(const Mesh& m, double tolerance) {
  using matrix_t = mp::tensor_of<T, mp::shape<rows, cols>, Mesh>;
  using vector_t = mp::tensor_of<T, mp::shape<cols>, Mesh>;
  using cube_t = mp::tensor_of<T, mp::shape<layer, rows, cols>, Mesh>;
  using row_t = mp::tensor_of<T, mp::shape<rows>, Mesh>;
  const sgd_reference ref{1, 0, false, 0};
  tracked<matrix_t, sgd_reference> matrix(m, 0, ref);
  tracked<vector_t, sgd_reference> vector(m, 1, ref);
  tracked<cube_t, sgd_reference> cube(m, 2, ref);
  tracked<row_t, sgd_reference> row(m, 3, ref);
  // the references start from the values as the variables hold them
  auto as_held = [](auto& v) {
    for (double& x : v.p) x = static_cast<double>(static_cast<T>(x));
  };
  as_held(matrix);
  as_held(vector);
  as_held(cube);
  as_held(row);
  check_clip(tolerance, matrix, vector, cube, row);
}

}  // namespace

TEST_CASE("clip_grad_norm: split over both mesh dims, over one, and replicated") {
  // split_mesh: matrix and cube split over a and b, the vector [cols/b] replicated over a, the
  // row [rows/a] over b; leading_split_mesh: the matrix [rows, cols/b] replicated over a;
  // replicated_mesh: every variable whole on every rank
  check_layouts<split_mesh, double>(split_mesh(meshpp_test::grid2(world().size())), 1e-12);
  check_layouts<leading_split_mesh, double>(leading_split_mesh(meshpp_test::grid2(world().size())),
                                            1e-12);
  check_layouts<replicated_mesh, double>(replicated_mesh(meshpp_test::grid2(world().size())),
                                         1e-12);
}

TEST_CASE("clip_grad_norm: float variables") {
  check_layouts<split_mesh, float>(split_mesh(meshpp_test::grid2(world().size())), 1e-6);
}

TEST_CASE("clip_grad_norm: the replicas of a variable stay identical") {
  replicated_mesh m(meshpp_test::grid2(world().size()));
  using matrix_t = mp::tensor_of<double, mp::shape<rows, cols>, replicated_mesh>;
  tracked<matrix_t, sgd_reference> w(m, 0, sgd_reference{1, 0, false, 0});
  mp::sgd opt({.learning_rate = 1.0}, w.var);
  w.set_gradient(0);
  CHECK(mp::clip_grad_norm(opt, 0.1) > 0.1);
  // every rank holds the whole gradient: the same bits as rank 0's
  std::vector<double> mine(w.var.grad()->local().begin(), w.var.grad()->local().end());
  std::vector<double> root = mine;  // (the same size on every rank: the whole matrix)
  boost::mpi::broadcast(world(), root.data(), static_cast<int>(root.size()), 0);
  CHECK_ALL_RANKS(mine.size() == root.size() &&
                  std::memcmp(mine.data(), root.data(), mine.size() * sizeof(double)) == 0);
}

TEST_CASE("clip_grad_norm: variables without a gradient are left out") {
  split_mesh m(meshpp_test::grid2(world().size()));
  using matrix_t = mp::tensor_of<double, mp::shape<rows, cols>, split_mesh>;
  using vector_t = mp::tensor_of<double, mp::shape<cols>, split_mesh>;
  tracked<matrix_t, sgd_reference> matrix(m, 0, sgd_reference{1, 0, false, 0});
  tracked<vector_t, sgd_reference> vector(m, 1, sgd_reference{1, 0, false, 0});
  mp::sgd opt({.learning_rate = 1.0}, matrix.var, vector.var);
  // no gradient at all: 0, and nothing communicated
  m.counters().reset();
  CHECK(mp::clip_grad_norm(opt, 1.0) == 0);
  CHECK(allreduces(m).calls == 0);
  // the vector's alone
  vector.set_gradient(0);
  double squares = 0;
  for (double g : whole_gradient(vector, 0)) squares += g * g;
  const double norm = mp::clip_grad_norm(opt, 1e-3);
  CHECK(std::abs(norm - std::sqrt(squares)) <= 1e-12 * norm);
  CHECK_ALL_RANKS(!matrix.var.grad());
  CHECK(allreduces(m).calls == (world().size() > 1 ? 1u : 0u));
}

TEST_CASE("clip_grad_norm: counted by operation, in the optimizer phase") {
  split_mesh m(meshpp_test::grid2(world().size()));
  using matrix_t = mp::tensor_of<double, mp::shape<rows, cols>, split_mesh>;
  tracked<matrix_t, sgd_reference> w(m, 0, sgd_reference{1, 0, false, 0});
  mp::sgd opt({.learning_rate = 1.0}, w.var);
  w.set_gradient(0);
  m.counters().reset();
  m.counters().by_operation(true);
  (void)mp::clip_grad_norm(opt, 1.0);
  m.counters().by_operation(false);
  const auto& ops = m.counters().operations();
  const auto it = std::find_if(ops.begin(), ops.end(),
                               [](const auto& op) { return op.name == "clip gradients"; });
  REQUIRE(it != ops.end());
  CHECK(it->phase == "optimizer");
  REQUIRE(it->collectives.size() == 1);  // listed with zero counts on a mesh of one rank
  CHECK(it->collectives[0].kind == mp::collective::allreduce);
  CHECK(it->collectives[0].mask == 3u);
  CHECK(it->collectives[0].count.calls == (world().size() > 1 ? 1u : 0u));
  CHECK(it->collectives[0].count.values == (world().size() > 1 ? 1u : 0u));
}

TEST_CASE("clip_grad_norm: bad input throws on every rank before any communication") {
  split_mesh m(meshpp_test::grid2(world().size()));
  using matrix_t = mp::tensor_of<double, mp::shape<rows, cols>, split_mesh>;
  tracked<matrix_t, sgd_reference> w(m, 0, sgd_reference{1, 0, false, 0});
  mp::sgd opt({.learning_rate = 1.0}, w.var);
  w.set_gradient(0);
  const auto before = w.var.grad()->local();
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  m.counters().reset();
  for (const double bad : {0.0, -1.0, nan, inf, -inf}) {
    CAPTURE(bad);
    CHECK_ALL_RANKS(meshpp_test::throws_with<mp::error>(
        [&] { (void)mp::clip_grad_norm(opt, bad); },
        {"meshpp::clip_grad_norm: max_norm must be finite and > 0, got "}));
  }
  CHECK_ALL_RANKS(meshpp_test::throws_with<mp::error>(
      [&] { (void)mp::clip_grad_norm(opt, 1.0, -1e-6); },
      {"meshpp::clip_grad_norm: eps must be finite and >= 0, got -1e-06"}));
  CHECK_ALL_RANKS(meshpp_test::throws_with<mp::error>(
      [&] { (void)mp::clip_grad_norm(opt, 1.0, nan); }, {"meshpp::clip_grad_norm: eps", "nan"}));
  // the gradient untouched, nothing communicated
  CHECK(allreduces(m).calls == 0);
  CHECK_ALL_RANKS(meshpp_test::bit_equal(w.var.grad()->local(), before));

  // variables on two meshes: one allreduce cannot sum both
  split_mesh other(meshpp_test::grid2(world().size()));
  tracked<matrix_t, sgd_reference> elsewhere(other, 1, sgd_reference{1, 0, false, 0});
  opt.add(elsewhere.var);
  elsewhere.set_gradient(0);
  other.counters().reset();
  CHECK_ALL_RANKS(meshpp_test::throws_with<mp::error>(
      [&] { (void)mp::clip_grad_norm(opt, 1.0); },
      {"meshpp::clip_grad_norm: variables '0' and '1' live on different meshes"}));
  CHECK(allreduces(m).calls == 0);
  CHECK(allreduces(other).calls == 0);
  // without a gradient, the other mesh's variable is left out: no error
  elsewhere.var.zero_grad();
  CHECK(mp::clip_grad_norm(opt, 1e6) > 0);
}

TEST_CASE("clip_grad_norm: a NaN gradient gives a NaN norm and leaves the gradients alone") {
  split_mesh m(meshpp_test::grid2(world().size()));
  using matrix_t = mp::tensor_of<double, mp::shape<rows, cols>, split_mesh>;
  tracked<matrix_t, sgd_reference> w(m, 0, sgd_reference{1, 0, false, 0});
  mp::sgd opt({.learning_rate = 1.0}, w.var);
  w.var.grad() = filled<matrix_t>(
      m, [](std::uint64_t i) { return i == 5 ? std::numeric_limits<double>::quiet_NaN() : 1.0; });
  const auto before = w.var.grad()->local();
  const double norm = mp::clip_grad_norm(opt, 1e-3);
  CHECK(std::isnan(norm));
  CHECK_ALL_RANKS(meshpp_test::bit_equal(w.var.grad()->local(), before));
}
