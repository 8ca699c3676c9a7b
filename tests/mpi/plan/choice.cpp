// Several layouts in one program, chosen at run time (plan/choice.hpp): by name, or by the
// layout search in the same process. A small step (a product, a sum over its output) runs under
// the layout picked and gives what one rank computes without the mesh; names and mesh shapes
// that no candidate has are errors on every rank, naming them.
#include <meshpp/meshpp.hpp>
#include <meshpp/plan/choice.hpp>
#include <meshpp/plan/search.hpp>

#include <cmath>
#include <string>
#include <type_traits>
#include <vector>

#include <boost/mpi/collectives/broadcast.hpp>
#include <boost/serialization/string.hpp>
#include <boost/serialization/vector.hpp>

#include "testing.hpp"

namespace mp = meshpp;
using meshpp_test::all_ranks;
using meshpp_test::world;

namespace {
MESHPP_DIM(batch);
MESHPP_DIM(hidden);
MESHPP_DIM(out);
MESHPP_DIM(all);
MESHPP_DIM(rows);
MESHPP_DIM(cols);

using mesh_data = mp::mesh<mp::axes<all>, mp::layout<mp::split<batch, all>>>;
using mesh_model = mp::mesh<mp::axes<all>, mp::layout<mp::split<hidden, all>>>;
using mesh_data_model =
    mp::mesh<mp::axes<rows, cols>, mp::layout<mp::split<batch, rows>, mp::split<hidden, cols>>>;
struct twice {};  // a tag: the step doubles its result under the candidate that carries it

using layouts = mp::mesh_choice<mp::named<"data", mesh_data>, mp::named<"model", mesh_model>,
                                mp::named<"data+model", mesh_data_model>,
                                mp::named<"model x2", mesh_model, twice>>;

const auto sizes = mp::extents{batch{} = 8, hidden{} = 12, out{} = 4};

// the step: sum over batch and out of x[batch, hidden] . w[hidden, out], x and w filled from
// their global indices (a tensor of no dims, whole on every rank)
template <class Mesh>
auto total(const Mesh& m) {
  using x_t = mp::tensor_of<double, mp::shape<batch, hidden>, Mesh>;
  using w_t = mp::tensor_of<double, mp::shape<hidden, out>, Mesh>;
  const auto x = mp::generate<x_t>(
      m, sizes, [](const auto& i) { return 0.5 + static_cast<double>(i[0] * 12 + i[1]) / 96; });
  const auto w = mp::generate<w_t>(
      m, sizes, [](const auto& i) { return static_cast<double>(i[0]) - 0.25 * i[1]; });
  return mp::reduce_sum(mp::einsum<mp::shape<batch, out>>(x, w));
}
// its value (times 2 under a candidate tagged twice)
template <class Mesh, class Tag = void>
double step(const Mesh& m) {
  const double s = total(m).item();
  return std::is_same_v<Tag, twice> ? 2 * s : s;
}

// the same sum on one rank, without the mesh
double reference() {
  double s = 0;
  for (int b = 0; b < 8; ++b)
    for (int h = 0; h < 12; ++h)
      for (int o = 0; o < 4; ++o) s += (0.5 + (b * 12 + h) / 96.0) * (h - 0.25 * o);
  return s;
}
}  // namespace

TEST_CASE("mesh_choice names its candidates, in order, and knows them") {
  CHECK(layouts::names() == std::vector<std::string>{"data", "model", "data+model", "model x2"});
  CHECK(layouts::knows("data+model"));
  CHECK_FALSE(layouts::knows("data+mode"));
  CHECK_FALSE(layouts::knows(""));
  CHECK(layouts::dims("data") == 1);
  CHECK(layouts::dims("data+model") == 2);
}

TEST_CASE("fitted: each candidate's mesh fitted to the ranks, as balanced_grid fits it") {
  const int n = world().size();
  CHECK(layouts::fitted("model", n).sizes == std::vector<int>{n});
  const auto grid = mp::balanced_grid<2>(n);
  CHECK(layouts::fitted("data+model", n).sizes == std::vector<int>{grid[0], grid[1]});
  CHECK(layouts::fitted("data+model", 6).sizes == std::vector<int>{2, 3});
  CHECK(layouts::fitted("data+model", 6).name == "data+model");
}

TEST_CASE("run: the step under each candidate by name equals the reference") {
  const double expected = reference();
  for (const auto& name : layouts::names()) {
    CAPTURE(name);
    const double got =
        layouts::run(layouts::fitted(name, world().size()), [](const auto& mesh, auto option) {
          using Mesh = std::decay_t<decltype(mesh)>;
          return step<Mesh, typename decltype(option)::tag>(mesh);
        });
    CHECK(all_ranks(std::abs(got - (name == "model x2" ? 2 : 1) * expected) <=
                    1e-12 * std::abs(expected)));
  }
}

TEST_CASE("run: the function sees the candidate's own mesh type and shape") {
  const auto pick = layouts::fitted("data+model", world().size());
  const bool right = layouts::run(pick, [&](const auto& mesh) {
    using Mesh = std::decay_t<decltype(mesh)>;
    return std::is_same_v<Mesh, mesh_data_model> &&
           std::vector<int>(mesh.sizes().begin(), mesh.sizes().end()) == pick.sizes;
  });
  CHECK(all_ranks(right));
}

TEST_CASE("a name no candidate has, or a mesh shape of other dims, is an error naming it") {
  CHECK_THROWS_WITH_AS(layouts::fitted("pipeline", 2),
                       "meshpp::mesh_choice: no layout is named 'pipeline' (data, model, "
                       "data+model, model x2)",
                       mp::error);
  CHECK_THROWS_WITH_AS(layouts::run({"data+model", {world().size()}}, [](const auto&) {}),
                       "meshpp::mesh_choice: layout 'data+model' has a mesh of 2 dims, not 1",
                       mp::error);
  // a mesh shape of the right dims that is not this world's: the mesh's own error, everywhere
  CHECK_THROWS_AS(layouts::run({"data", {world().size() + 1}}, [](const auto&) {}), mp::error);
  CHECK(meshpp_test::ranks_in_step());
}

TEST_CASE("add_to: every candidate on every mesh shape of the ranks, under its own name") {
  for (int ranks : {1, 4, 6}) {
    CAPTURE(ranks);
    mp::layout_search search(mp::machine_model::defaults());
    layouts::add_to(search, ranks, [](const auto& mesh) { total(mesh); });
    // one-dim candidates once each; data+model on every r x ranks/r
    int divisors = 0;
    for (int r = 1; r <= ranks; ++r) divisors += ranks % r == 0;
    const auto ranked = search.ranked();
    CHECK(ranked.size() == static_cast<std::size_t>(3 + divisors));
    int data_model = 0;
    for (const auto& c : ranked) {
      CHECK(layouts::knows(c.name));
      if (c.name == "data+model") {
        ++data_model;
        CHECK(c.steps.mesh_sizes().size() == 2);
        CHECK(c.steps.mesh_sizes()[0] * c.steps.mesh_sizes()[1] == ranks);
      } else {
        CHECK(c.steps.mesh_sizes() == std::vector<int>{ranks});
      }
    }
    CHECK(data_model == divisors);
  }
  mp::layout_search none(mp::machine_model::defaults());
  CHECK_THROWS_WITH_AS(layouts::add_to(none, 0, [](const auto&) {}),
                       "meshpp::mesh_choice::add_to: the number of ranks must be at least 1, not 0",
                       mp::error);
}

TEST_CASE("the search's pick, agreed from rank 0, runs in the same process") {
  mp::layout_search search(mp::machine_model::defaults());
  layouts::add_to(search, world().size(), [](const auto& mesh) { total(mesh); });
  const auto pick = layouts::agreed(search.best(), world());
  // every rank holds rank 0's pick
  std::string name = pick.name;
  std::vector<int> shape = pick.sizes;
  boost::mpi::broadcast(world(), name, 0);
  boost::mpi::broadcast(world(), shape, 0);
  CHECK(all_ranks(name == pick.name && shape == pick.sizes));
  const double got = layouts::run(pick, [](const auto& mesh) { return step(mesh); });
  const double expected = reference();
  CHECK(all_ranks(std::abs(got - expected) <= 1e-12 * std::abs(expected)));
  // plan_of plans the same candidate without running it
  const auto p = layouts::plan_of(pick, [](const auto& mesh) { total(mesh); });
  CHECK(p.mesh_sizes() == pick.sizes);
}

TEST_CASE("mesh_shapes: every shape of a number of dims whose product is the ranks") {
  CHECK(mp::detail::mesh_shapes(2, 4) == std::vector<std::vector<int>>{{1, 4}, {2, 2}, {4, 1}});
  CHECK(mp::detail::mesh_shapes(1, 5) == std::vector<std::vector<int>>{{5}});
  CHECK(mp::detail::mesh_shapes(3, 12).size() == 18);  // ordered factorizations of 12 in three
  CHECK(mp::detail::mesh_shapes(0, 1).size() == 1);
  CHECK(mp::detail::mesh_shapes(0, 2).empty());
}
