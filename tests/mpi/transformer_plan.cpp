// Plans of the Transformer (plan/plan.hpp): one training step of examples/transformer's
// language model (forward, backward with its deferred sums and gradient buckets, an Adam step)
// planned on a planned mesh predicts per operation exactly what the counters of the real step
// record on the same rank, under the paper's three layouts (README "Plans"). The model's
// objects are the example's own (transformer_layouts).
#include <meshpp/meshpp.hpp>

#include <cstddef>
#include <cstdint>
#include <string>

#include "testing.hpp"
#include "transformer.hpp"

namespace mp = meshpp;
namespace tx = transformer_example;
using meshpp_test::all_ranks;
using meshpp_test::world;

namespace {

template <class Mesh>
void train_step(const Mesh& mesh) {
  tx::options o;
  o.layers = 2;
  o.d_model = 16;
  o.heads = 4;
  o.d_ff = 32;
  o.seq = 8;
  const std::size_t batch_size = 8, vocab_size = 16;
  const auto sizes = tx::model_sizes(o, batch_size, vocab_size);
  const tx::language_model<Mesh> model(mesh, sizes, o);
  mp::adam opt(mp::adam_options{.learning_rate = 1e-3});
  model.add_to(opt);
  using ids_t = typename tx::language_model<Mesh>::ids_t;
  const auto ids = mp::generate<ids_t>(mesh, sizes, [](const auto& i) {
    return static_cast<std::int32_t>((i[0] * 7 + i[1] * 3) % vocab_size);
  });
  const auto targets = mp::generate<ids_t>(mesh, sizes, [](const auto& i) {
    return static_cast<std::int32_t>((i[0] * 5 + i[1] * 11 + 1) % vocab_size);
  });
  mp::backward(model.loss(ids, targets));
  opt.step();
}

template <class Mesh>
void plan_equals_counters(const typename Mesh::coordinates_type& shape) {
  const Mesh real(shape);
  real.counters().by_operation(true);
  train_step(real);
  const auto p = mp::make_plan<Mesh>(
      shape, [](const Mesh& m) { train_step(m); }, world().rank());
  INFO("mesh " << real.describe() << ", rank " << world().rank() << "\n" << p.report());
  CHECK(all_ranks(p.operations() == real.counters().operations()));
  for (std::size_t k = 0; k < mp::collective_kinds; ++k) {
    const auto kind = static_cast<mp::collective>(k);
    CHECK(all_ranks(p.total(kind) == real.counters().total(kind)));
  }
  CHECK(all_ranks(p.flops() == real.counters().einsum_flops()));
  CHECK(p.operations().size() > 10);
}

}  // namespace

TEST_CASE("Transformer plan, data layout: equal to the counters, per operation") {
  plan_equals_counters<mesh_data>({world().size()});
}

TEST_CASE("Transformer plan, model layout: equal to the counters, per operation") {
  plan_equals_counters<mesh_model>({world().size()});
}

TEST_CASE("Transformer plan, data+model layout: equal to the counters, per operation") {
  const auto shape = mp::balanced_grid<2>(world().size());
  plan_equals_counters<mesh_data_model>(shape);
  if (shape[0] != shape[1]) plan_equals_counters<mesh_data_model>({shape[1], shape[0]});
}
