// One forward pass of examples/transformer's language model (the example's own objects,
// transformer_layouts) equals the single-process reference (tests/support/
// transformer_reference.hpp: plain loops in double that share no code with meshpp) on the same
// parameters and tokens: the logits within 1e-4 * max(1, |logit|) and the loss within 1e-4
// relative (float against double), under the paper's three layouts fitted to the ranks (data:
// batch over all; model: vocab, d_ff and heads over all; data+model: batch over rows, the rest
// over cols, the mesh both ways round where it is not square), and model+residual (the model
// layout, the blocks' residual stream split over batch).
// Every variable is first moved away from its initial value by a uniform draw from its global
// index (so the layer norms' scales and biases are not 1 and 0, where a dropped or misplaced
// one would not show), then gathered into the reference's parameters, in the order both name
// them: token table, positions, per block norm1, wq, wk, wv, wo, norm2, expand, contract, then
// the final norm and the unembedding. The sizes let every split dim divide over 1, 2 and 4
// ranks; the ids never reach the padding of the vocabulary, as load_text's never do.
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <tuple>
#include <vector>

#include "reference.hpp"
#include "testing.hpp"
#include "transformer.hpp"
#include "transformer_reference.hpp"

namespace mp = meshpp;
namespace tx = transformer_example;
namespace rt = meshpp_test::reference_transformer;
using meshpp_test::world;

namespace {

// batch 4 and vocab 16 (an alphabet of 13, padded), d_model 8 over 4 heads, d_ff 12, length 5
constexpr std::size_t batch_size = 4, vocab_size = 16, alphabet = 13;

tx::options tiny_options() {
  tx::options o;
  o.layers = 2;
  o.d_model = 8;
  o.heads = 4;
  o.d_ff = 12;
  o.seq = 5;
  return o;
}

rt::config reference_config(const tx::options& o) {
  return {.batch = batch_size,
          .length = o.seq,
          .d_model = o.d_model,
          .heads = o.heads,
          .d_k = o.d_model / o.heads,
          .d_v = o.d_model / o.heads,
          .d_ff = o.d_ff,
          .vocab = vocab_size,
          .layers = o.layers,
          .causal = true};
}

// the tokens, from the position (b, l): ids and targets in [0, alphabet)
std::int32_t id_at(std::size_t b, std::size_t l) {
  return static_cast<std::int32_t>((b * 7 + l * 3 + 2) % alphabet);
}
std::int32_t target_at(std::size_t b, std::size_t l) {
  return static_cast<std::int32_t>((b * 5 + l * 11 + 1) % alphabet);
}

// check_forward(mesh): perturbs the model's variables, copies them into the reference, and
// compares the logits and the loss
template <class Mesh, class Residual = void>
void check_forward(const Mesh& mesh) {
  CAPTURE(mesh.describe());
  const tx::options o = tiny_options();
  const auto sizes = tx::model_sizes(o, batch_size, vocab_size);
  const tx::language_model<Mesh, Residual> model(mesh, sizes, o);

  // move every variable by U(-0.5, 0.5) from its global index (a seed per variable), and keep
  // the values it then holds, gathered whole
  std::vector<rt::array> values;
  std::uint64_t seed = 1000;
  // every variable, in the order rt::for_each_array visits the reference's parameters
  mp::for_each_variable(model, [&](auto v) {
    using X = typename decltype(v)::tensor_type;
    v.value() = X(v.value() + mp::random_uniform<X>(mesh, sizes, seed++, -0.5f, 0.5f));
    const auto whole = mp::gather(v.value());
    values.emplace_back(whole.begin(), whole.end());
  });

  const rt::config cfg = reference_config(o);
  rt::params p = rt::zeros(cfg);
  std::size_t next = 0;
  rt::for_each_array(p, [&](const std::string& name, rt::array& a) {
    CAPTURE(name);
    REQUIRE(next < values.size());
    REQUIRE(values[next].size() == a.size());
    a = values[next++];
  });
  REQUIRE(next == values.size());

  rt::tokens ids, targets;
  for (std::size_t b = 0; b < batch_size; ++b) {
    for (std::size_t l = 0; l < o.seq; ++l) {
      ids.push_back(id_at(b, l));
      targets.push_back(target_at(b, l));
    }
  }
  using ids_t = typename tx::language_model<Mesh, Residual>::ids_t;
  const auto model_ids =
      mp::generate<ids_t>(mesh, sizes, [](const auto& i) { return id_at(i[0], i[1]); });
  const auto model_targets =
      mp::generate<ids_t>(mesh, sizes, [](const auto& i) { return target_at(i[0], i[1]); });

  mp::no_grad scope;
  const rt::array want_logits = rt::logits(cfg, p, ids);
  const auto want = meshpp_test::filled<double, 3>({batch_size, o.seq, vocab_size},
                                                   [&](std::uint64_t i) { return want_logits[i]; });
  CHECK_ALL_RANKS(meshpp_test::matches(mp::gather(model.logits(model_ids).value()), want, 1e-4));

  const double want_loss = rt::loss(cfg, p, ids, targets);
  const double loss = static_cast<double>(model.loss(model_ids, model_targets).item());
  INFO("loss " << loss << ", reference " << want_loss);
  CHECK_ALL_RANKS(std::abs(loss - want_loss) <= 1e-4 * std::abs(want_loss));
}

}  // namespace

TEST_CASE("transformer forward equals the reference: data layout") {
  check_forward(mesh_data({world().size()}));
}

TEST_CASE("transformer forward equals the reference: model layout") {
  check_forward(mesh_model({world().size()}));
}

TEST_CASE("transformer forward equals the reference: model+residual layout") {
  check_forward<mesh_model, residual_over_all>(mesh_model({world().size()}));
}

// One Transformer block with the residual stream split over batch (nn/transformer.hpp,
// Residual) against the same block laid out by the mesh alone, both with residual and
// attention dropout: the same seeds give the same weights and masks (keyed by the global
// index), so the outputs and the gradients (the input's, and the layer norm's and the second
// dense layer's bias's, which the split stream sums over the batch's ranks) agree to float
// rounding (the sums run in another order).
TEST_CASE("a block with a split residual stream equals the block without, dropout included") {
  const mesh_model mesh({world().size()});
  CAPTURE(mesh.describe());
  const tx::options o = tiny_options();
  const auto sizes = tx::model_sizes(o, batch_size, vocab_size);
  mp::nn::block_options options;
  options.residual_dropout = 0.25;
  options.attention.dropout = 0.125;
  const mp::nn::transformer_block<float, mesh_model, tx::dims> whole(mesh, sizes, 11, options);
  const mp::nn::transformer_block<float, mesh_model, tx::dims, residual_over_all> split(
      mesh, sizes, 11, options);
  const auto x = mp::random_normal<float, batch, length, d_model>(mesh, sizes, 3);
  const auto w = mp::random_normal<float, batch, length, d_model>(mesh, sizes, 4);
  const auto x_whole = mp::trace(x);
  const auto x_split = mp::trace(mp::relayout<residual_over_all>(x));
  const auto y_whole = whole(x_whole);
  const auto y_split = split(x_split);
  CHECK_ALL_RANKS(
      meshpp_test::matches(mp::gather(y_split.value()), mp::gather(y_whole.value()), 1e-5));
  const auto [dx_whole, dgamma_whole, dbias_whole] = mp::gradients(
      mp::reduce_sum(y_whole * w), x_whole, whole.norm2().gamma(), whole.contract().bias());
  const auto [dx_split, dgamma_split, dbias_split] =
      mp::gradients(mp::reduce_sum(y_split * mp::relayout<residual_over_all>(w)), x_split,
                    split.norm2().gamma(), split.contract().bias());
  CHECK_ALL_RANKS(meshpp_test::matches(mp::gather(dx_split), mp::gather(dx_whole), 1e-4));
  CHECK_ALL_RANKS(meshpp_test::matches(mp::gather(dgamma_split), mp::gather(dgamma_whole), 1e-4));
  CHECK_ALL_RANKS(meshpp_test::matches(mp::gather(dbias_split), mp::gather(dbias_whole), 1e-4));
}

TEST_CASE("transformer forward equals the reference: data+model layout") {
  const auto shape = meshpp_test::grid2(world().size());
  check_forward(mesh_data_model(shape));
  if (shape[0] != shape[1]) check_forward(mesh_data_model({shape[1], shape[0]}));
}
