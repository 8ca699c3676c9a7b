// Plans of the Transformer (plan/plan.hpp): one training step of examples/transformer's
// language model (forward, backward with its deferred sums and gradient buckets, an Adam step)
// planned on a planned mesh predicts per operation exactly what the counters of the real step
// record on the same rank, under the paper's three layouts and model+residual (docs/plans.md,
// "Plans"). The model's objects are the example's own (transformer_layouts).
#include <meshpp/meshpp.hpp>
#include <meshpp/plan/enumerate.hpp>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "testing.hpp"
#include "transformer.hpp"

namespace mp = meshpp;
namespace tx = transformer_example;
using meshpp_test::all_ranks;
using meshpp_test::world;

namespace {

// train_step<Mesh>(mesh): one training step of the example's model at small sizes, as the
// example plans it (transformer_example::planned_step: the model made, forward, backward, an
// Adam step); for the paper's layouts its object is the example's own
template <class Mesh, class Residual = void>
void train_step(const Mesh& mesh) {
  tx::options o;
  o.layers = 2;
  o.d_model = 16;
  o.heads = 4;
  o.d_ff = 32;
  o.seq = 8;
  o.batch = 8;
  tx::planned_step<Mesh, Residual>(mesh, o, /*vocab*/ 16);
}

template <class Mesh, class Residual = void>
void plan_equals_counters(const typename Mesh::coordinates_type& shape) {
  const Mesh real(shape);
  real.counters().by_operation(true);
  train_step<Mesh, Residual>(real);
  const auto p = mp::make_plan<Mesh>(
      shape, [](const Mesh& m) { train_step<Mesh, Residual>(m); }, world().rank());
  INFO("mesh " << real.describe() << ", rank " << world().rank() << "\n" << p.report());
  CHECK(all_ranks(p.operations() == real.counters().operations()));
  for (std::size_t k = 0; k < mp::collective_kinds; ++k) {
    const auto kind = static_cast<mp::collective>(k);
    CHECK(all_ranks(p.total(kind) == real.counters().total(kind)));
  }
  CHECK(all_ranks(p.flops() == real.counters().einsum_flops()));
  CHECK(p.operations().size() > 10);
}

// estimate_against_plan<Mesh>(e, shape, mesh, splits, extra): the enumeration's estimate of
// a layout the program instantiated (`splits`: model dim -> mesh dim) against its exact plan:
// the same flops and gemm calls, exactly; the allreduce values the plan's plus `extra`
// (the partial sums the plan defers and the estimate reduces one by one); bytes made close
template <class Mesh>
void estimate_against_plan(const mp::layout_enumeration& e,
                           const typename Mesh::coordinates_type& shape,
                           const std::vector<mp::mesh_axis>& mesh,
                           const std::vector<std::pair<std::string, int>>& splits,
                           std::uint64_t extra) {
  const auto p = mp::make_plan<Mesh>(shape, [](const Mesh& m) { train_step(m); });
  std::vector<int> axis(e.dims().size(), -1);
  for (const auto& [dim, a] : splits) {
    const auto at = std::find(e.dims().begin(), e.dims().end(), dim);
    REQUIRE(at != e.dims().end());
    axis[static_cast<std::size_t>(at - e.dims().begin())] = a;
  }
  const auto c = e.estimate(mesh, axis);
  INFO("mesh " << p.mesh() << "\n" << p.report());
  CHECK(c.flops == p.flops());
  auto text = [](const std::vector<mp::gemm_count>& v) {
    std::string out;
    for (const auto& g : v) {
      out += std::to_string(g.shape.m) + "x" + std::to_string(g.shape.n) + "x" +
             std::to_string(g.shape.k) + (g.shape.trans_a ? "T" : "N") +
             (g.shape.trans_b ? "T" : "N") + " * " + std::to_string(g.calls) + "\n";
    }
    return out;
  };
  INFO("estimated gemms:\n" << text(e.gemms(mesh, c)) << "planned gemms:\n" << text(p.gemms()));
  CHECK(e.gemms(mesh, c) == p.gemms());
  const auto exact = p.total(mp::collective::allreduce);
  CHECK(c.collectives.allreduce.values == exact.values + extra);
  if (extra == 0) CHECK(c.collectives.allreduce == exact);
  CHECK(c.collectives.allgather == p.total(mp::collective::allgather));
  CHECK(c.collectives.alltoall.calls == p.total(mp::collective::alltoall).calls);
  CHECK(static_cast<double>(c.cost.bytes_made) ==
        doctest::Approx(static_cast<double>(p.bytes_made())).epsilon(0.15));
}

}  // namespace

TEST_CASE("Transformer layout enumeration: the instantiated layouts estimated as their plans") {
  const auto reference = mp::make_plan<mesh_data>({1}, [](const mesh_data& m) { train_step(m); });
  const mp::layout_enumeration e(reference, mp::machine_model::defaults());
  // batch, length, memory_length, d_model, heads, d_k, d_v, d_ff, vocab
  CHECK(e.dims().size() == 9);
  // The plan defers the partial sums flowing into one tensor and reduces them once: per layer,
  // the attention's input (q, k and v's) and the feed-forward's; the estimate reduces q's, k's,
  // v's and the feed-forward's one by one: 2 more reductions per layer of the local
  // [batch, length, d_model] (8 x 8 x 16 values; batch split over rows under data+model). A
  // group of one rank counts nothing, in the plan and the estimate alike, so the difference is
  // there only where the model dims' mesh dim has more than one rank.
  const std::uint64_t activation = 8 * 8 * 16, layers = 2;
  for (const int n : {1, 2, 3, 4}) {
    const std::vector<mp::mesh_axis> all{{"all", n}};
    const std::uint64_t over_all = n > 1 ? 1 : 0;
    estimate_against_plan<mesh_data>(e, {n}, all, {{"batch", 0}}, 0);
    estimate_against_plan<mesh_model>(e, {n}, all, {{"vocab", 0}, {"d_ff", 0}, {"heads", 0}},
                                      over_all * 2 * layers * activation);
  }
  for (const auto& shape :
       {std::array{2, 2}, std::array{1, 2}, std::array{2, 1}, std::array{1, 3}}) {
    const std::vector<mp::mesh_axis> grid{{"rows", shape[0]}, {"cols", shape[1]}};
    const std::uint64_t local_batch =
        (8 + static_cast<std::uint64_t>(shape[0]) - 1) / static_cast<std::uint64_t>(shape[0]);
    const std::uint64_t over_cols = shape[1] > 1 ? 1 : 0;
    estimate_against_plan<mesh_data_model>(e, shape, grid,
                                           {{"batch", 0}, {"vocab", 1}, {"d_ff", 1}, {"heads", 1}},
                                           over_cols * 2 * layers * activation / 8 * local_batch);
  }
  // the enumeration over 2 x 2 lists each of these layouts once, priced as estimate() prices it
  const std::vector<mp::mesh_axis> grid{{"rows", 2}, {"cols", 2}};
  const auto ranked = e.enumerate(grid);
  CHECK(ranked.size() > 100);
  std::size_t data_model = 0;
  for (const auto& c : ranked) {
    std::vector<std::string> split;
    for (std::size_t d = 0; d < e.dims().size(); ++d)
      if (c.axis_of_dim[d] >= 0)
        split.push_back(e.dims()[d] + ":" + std::to_string(c.axis_of_dim[d]));
    std::sort(split.begin(), split.end());
    // listed once, whichever of the two mesh dims (of one size) holds batch
    if (split == std::vector<std::string>{"batch:0", "d_ff:1", "heads:1", "vocab:1"} ||
        split == std::vector<std::string>{"batch:1", "d_ff:0", "heads:0", "vocab:0"})
      ++data_model;
  }
  CHECK(data_model == 1);
}

TEST_CASE("Transformer plan, data layout: equal to the counters, per operation") {
  plan_equals_counters<mesh_data>({world().size()});
}

TEST_CASE("Transformer plan, model layout: equal to the counters, per operation") {
  plan_equals_counters<mesh_model>({world().size()});
}

TEST_CASE("Transformer plan, model+residual layout: equal to the counters, per operation") {
  // the products' choice between a reduce_scatter and moving the operands, made from sizes
  // alone, and the stream's relayouts (uneven at 3 ranks) as the real step makes them
  plan_equals_counters<mesh_model, residual_over_all>({world().size()});
}

TEST_CASE("Transformer plan, data+model layout: equal to the counters, per operation") {
  const auto shape = mp::balanced_grid<2>(world().size());
  plan_equals_counters<mesh_data_model>(shape);
  if (shape[0] != shape[1]) plan_equals_counters<mesh_data_model>({shape[1], shape[0]});
}
