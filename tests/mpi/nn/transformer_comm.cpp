// The Transformer's communication table (docs/transformer.md, "The Transformer's communication"):
// one training step of examples/transformer's language model (forward, then backward) under the
// paper's three layouts allreduces exactly the values the table gives per processor, and uses
// no other collective; under model+residual each kind of collective moves what the table's
// row gives. The model's objects are the example's own (transformer_layouts).
//
// Allreduce calls in backward: data 1 (one bucket of every gradient), model 1 + 2 layers (one
// per tensor receiving partial sums), data+model both.
//
// Sizes: b batch, l length, d d_model, h heads, k d_k, v d_v, f d_ff, n vocab, `layers`
// blocks; P the number of parameters; r, c the mesh's rows and cols (r = 1 on the 1-D meshes).
//   data        forward 1                               backward P
//   model       forward b l d (1 + 2 layers) + 3 b l    backward b l d (1 + 2 layers)
//   data+model  forward (b/r) l d (1 + 2 layers) + 3 (b/r) l + 1
//               backward (b/r) l d (1 + 2 layers) + [P with every weight split over cols / c]
#include <meshpp/core/counters.hpp>

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>

#include "testing.hpp"
#include "transformer.hpp"

namespace mp = meshpp;
namespace tx = transformer_example;
using meshpp_test::world;

namespace {

struct table_sizes {
  std::uint64_t b, l, d, h, k, v, f, n, layers;
};

// the values allreduced per processor by one step's forward and backward pass
struct step_values {
  std::uint64_t forward, backward;
};

// The parameters of the model, each divided by c where a dim of it is split over cols (vocab,
// d_ff or heads): what the data-parallel gradient sum allreduces per processor.
std::uint64_t parameters_over(const table_sizes& s, std::uint64_t c) {
  const std::uint64_t per_layer = 2 * s.d                    // norm1 gamma, beta
                                  + 2 * s.d * s.h * s.k / c  // wq, wk
                                  + 2 * s.h * s.v * s.d / c  // wv, wo
                                  + 2 * s.d                  // norm2
                                  + s.d * s.f / c + s.f / c  // expand w, b
                                  + s.f * s.d / c + s.d;     // contract w, b
  return s.layers * per_layer + s.n * s.d / c                // token table
         + s.l * s.d                                         // positions
         + 2 * s.d                                           // final norm
         + s.d * s.n / c;                                    // unembedding
}

// over(n): 1 where a sum over a mesh dim of n ranks counts (n > 1), else 0: a group of one rank
// moves and counts nothing
std::uint64_t over(std::uint64_t n) { return n > 1 ? 1 : 0; }

// expected(layout, s, r, c): docs/transformer.md's table; r ranks split the batch, c the model dims
step_values expected(const std::string& layout, const table_sizes& s, std::uint64_t r,
                     std::uint64_t c) {
  const std::uint64_t rows = s.b / r * s.l;  // this processor's (batch, length) positions
  if (layout == "data") return {over(r), over(r) * parameters_over(s, 1)};
  const std::uint64_t forward = over(c) * (rows * s.d * (1 + 2 * s.layers) + 3 * rows);
  // per block, the input gradients of q, k and v add up before their one sum (deferred sums)
  const std::uint64_t backward = over(c) * rows * s.d * (1 + 2 * s.layers);
  if (layout == "model") return {forward, backward};
  return {forward + over(r), backward + over(r) * parameters_over(s, c)};
}

std::uint64_t other_collective_calls(const mp::counters& c) {
  std::uint64_t calls = 0;
  for (std::size_t kind = 0; kind < mp::collective_kinds; ++kind) {
    if (static_cast<mp::collective>(kind) != mp::collective::allreduce)
      calls += c.total(static_cast<mp::collective>(kind)).calls;
  }
  return calls;
}

// the model of every case: L = 2, d = 16, h = 4, f = 32, l = 8 (b = 8, n = 16 below)
tx::options small_model() {
  tx::options o;
  o.layers = 2;
  o.d_model = 16;
  o.heads = 4;
  o.d_ff = 32;
  o.seq = 8;
  return o;
}
constexpr std::size_t batch_size = 8, vocab_size = 16;

// one_step<Mesh>(mesh, layout, r, c): trains one step with counters read after the forward
// and after the backward pass, and checks them against the table
template <class Mesh>
void one_step(const Mesh& mesh, const std::string& layout, std::uint64_t r, std::uint64_t c) {
  const tx::options o = small_model();
  const auto sizes = tx::model_sizes(o, batch_size, vocab_size);
  const tx::language_model<Mesh> model(mesh, sizes, o);
  using ids_t = typename tx::language_model<Mesh>::ids_t;
  const auto ids = mp::generate<ids_t>(mesh, sizes, [](const auto& i) {
    return static_cast<std::int32_t>((i[0] * 7 + i[1] * 3) % vocab_size);
  });
  const auto targets = mp::generate<ids_t>(mesh, sizes, [](const auto& i) {
    return static_cast<std::int32_t>((i[0] * 5 + i[1] * 11 + 1) % vocab_size);
  });
  const table_sizes s{batch_size,          o.seq,  o.d_model,  o.heads, o.d_model / o.heads,
                      o.d_model / o.heads, o.d_ff, vocab_size, o.layers};
  const auto want = expected(layout, s, r, c);

  auto& counters = mesh.counters();
  counters.reset();
  const auto loss = model.loss(ids, targets);
  const std::uint64_t forward = counters.values(mp::collective::allreduce);
  const std::uint64_t forward_other = other_collective_calls(counters);
  counters.reset();
  mp::backward(loss);
  const std::uint64_t backward = counters.values(mp::collective::allreduce);
  const std::uint64_t backward_calls = counters.total(mp::collective::allreduce).calls;
  const std::uint64_t backward_other = other_collective_calls(counters);

  INFO("layout " << layout << " on " << mesh.describe() << ": forward " << forward << " (want "
                 << want.forward << "), backward " << backward << " (want " << want.backward
                 << "), backward calls " << backward_calls);
  CHECK_ALL_RANKS(forward == want.forward);
  CHECK_ALL_RANKS(backward == want.backward);
  // Calls: every parameter gradient that sums over the batch goes into one bucket (all fit the
  // default 4 MiB), the activations' gradients sum once per receiving tensor: the unembedding
  // input and, per block, the attention input (q, k and v together) and the dense input.
  const std::uint64_t activation_calls = layout == "data" ? 0 : over(c) * (1 + 2 * o.layers);
  const std::uint64_t bucket_calls = layout == "model" ? 0 : over(r);
  CHECK_ALL_RANKS(backward_calls == activation_calls + bucket_calls);
  CHECK_ALL_RANKS(forward_other == 0);
  CHECK_ALL_RANKS(backward_other == 0);
  // a gradient reached every variable: the step trained everything the table counts
  CHECK_ALL_RANKS(model.unembed.weight().grad().has_value());
  CHECK_ALL_RANKS(model.tokens.table().grad().has_value());
  CHECK_ALL_RANKS(model.positions.grad().has_value());
}

}  // namespace

TEST_CASE("data layout: the table's allreduces, exactly") {
  const int n = world().size();
  one_step(mesh_data({n}), "data", static_cast<std::uint64_t>(n), 1);
}

TEST_CASE("model layout: the table's allreduces, exactly") {
  const int n = world().size();
  one_step(mesh_model({n}), "model", 1, static_cast<std::uint64_t>(n));
}

// model+residual: the model layout's allreduces but the embedding lookup's and the blocks' two
// forward sums, which go into the batch-split stream instead (the lookup's by a reduce_scatter);
// the stream is allgathered before each branch and after the last block. Each of the two products
// picks, by its sizes (ops/detail/einsum_plan.hpp, operand_gather_plan; restated here), the
// reduce_scatter of its local partial sums (b l d values) or moving its operands: the attention's o
// [b, heads/p, l, v] by an alltoall to a batch split, and wo [heads/p, v, d] gathered whole (an
// allgather), when that sends fewer values (|o_local| + p |wo_local| < b l d). In backward each
// branch input's gradient, partial sums over the ranks, is reduce-scattered into the split stream
// (the adjoint of the gather before the branch); the products' adjoints (allgathers of the stream's
// gradient) and the lookup's (an allgather, the adjoint of its reduce_scatter) join them; the
// unembedding's input gradient is allreduced as under model; the layer norms' scales and shifts,
// the second dense layer's bias and the positions (l d), summed over the batch's ranks, join one
// bucket.
//   forward   allreduce 3 b l; reduce_scatter b l d (the lookup); per product, reduce_scatter
//             b l d, or alltoall (1 call) and allgather |wo_local|; allgather (2 layers + 1)
//             (b/p) l d
//   backward  allreduce b l d + 5 d layers + l d (2 calls), reduce_scatter 2 layers b l d,
//             allgather (2 layers + 1) (b/p) l d
TEST_CASE("model+residual layout: reduce_scatters and allgathers in place of allreduces") {
  const std::uint64_t p = static_cast<std::uint64_t>(world().size());
  const mesh_model mesh({world().size()});
  const tx::options o = small_model();
  const auto sizes = tx::model_sizes(o, batch_size, vocab_size);
  const tx::language_model<mesh_model, residual_over_all> model(mesh, sizes, o);
  using ids_t = tx::language_model<mesh_model, residual_over_all>::ids_t;
  const auto ids = mp::generate<ids_t>(mesh, sizes, [](const auto& i) {
    return static_cast<std::int32_t>((i[0] * 7 + i[1] * 3) % vocab_size);
  });
  const std::uint64_t b = batch_size, l = o.seq, d = o.d_model, h = o.heads, v = d / h, f = o.d_ff,
                      layers = o.layers;
  const std::uint64_t stream = b * l * d, slice = b / p * l * d;
  // the two products: moving the operands sends |a_local| + p |b_local| values (the split
  // contracted dim at its stripe), the reduce_scatter the local partial product's b l d
  const std::uint64_t wo_local = h / p * v * d;
  const bool attention_moves = b * (h / p) * l * v + p * wo_local < stream;
  const bool contract_moves = b * l * (f / p) + p * (f / p) * d < stream;
  const std::uint64_t moved = (attention_moves ? 1 : 0) + (contract_moves ? 1 : 0);
  const std::uint64_t gathered_weights =
      (attention_moves ? wo_local : 0) + (contract_moves ? f / p * d : 0);
  // on one rank every group has one rank: nothing moves and nothing counts
  const std::uint64_t counted = over(p);

  auto& c = mesh.counters();
  c.reset();
  const auto loss = model.loss(ids, ids);
  INFO("forward: allreduce " << c.values(mp::collective::allreduce) << ", reduce_scatter "
                             << c.total(mp::collective::reduce_scatter).calls << " calls "
                             << c.values(mp::collective::reduce_scatter) << ", allgather "
                             << c.total(mp::collective::allgather).calls << " calls "
                             << c.values(mp::collective::allgather));
  CHECK_ALL_RANKS(c.values(mp::collective::allreduce) == counted * (3 * b * l));
  CHECK_ALL_RANKS(c.total(mp::collective::reduce_scatter).calls ==
                  counted * (1 + (2 - moved) * layers));
  CHECK_ALL_RANKS(c.values(mp::collective::reduce_scatter) ==
                  counted * ((1 + (2 - moved) * layers) * stream));
  CHECK_ALL_RANKS(c.total(mp::collective::alltoall).calls == counted * (moved * layers));
  CHECK_ALL_RANKS(c.total(mp::collective::allgather).calls ==
                  counted * ((2 * layers + 1) + moved * layers));
  CHECK_ALL_RANKS(c.values(mp::collective::allgather) ==
                  counted * ((2 * layers + 1) * slice + gathered_weights * layers));
  c.reset();
  mp::backward(loss);
  INFO("backward: allreduce " << c.total(mp::collective::allreduce).calls << " calls "
                              << c.values(mp::collective::allreduce) << ", reduce_scatter "
                              << c.total(mp::collective::reduce_scatter).calls << " calls "
                              << c.values(mp::collective::reduce_scatter) << ", allgather "
                              << c.total(mp::collective::allgather).calls << " calls "
                              << c.values(mp::collective::allgather));
  CHECK_ALL_RANKS(c.values(mp::collective::allreduce) ==
                  counted * (stream + 5 * d * layers + l * d));
  CHECK_ALL_RANKS(c.total(mp::collective::allreduce).calls == counted * 2);
  CHECK_ALL_RANKS(c.total(mp::collective::reduce_scatter).calls == counted * (2 * layers));
  CHECK_ALL_RANKS(c.values(mp::collective::reduce_scatter) == counted * (2 * layers * stream));
  CHECK_ALL_RANKS(c.total(mp::collective::allgather).calls == counted * (2 * layers + 1));
  CHECK_ALL_RANKS(c.values(mp::collective::allgather) == counted * ((2 * layers + 1) * slice));
  CHECK_ALL_RANKS(c.total(mp::collective::alltoall).calls == 0);
}

TEST_CASE("data+model layout: the table's allreduces, exactly") {
  const auto shape = mp::balanced_grid<2>(world().size());
  one_step(mesh_data_model(shape), "data+model", static_cast<std::uint64_t>(shape[0]),
           static_cast<std::uint64_t>(shape[1]));
  // and with the mesh the other way round, where it differs
  if (shape[0] != shape[1]) {
    one_step(mesh_data_model({shape[1], shape[0]}), "data+model",
             static_cast<std::uint64_t>(shape[1]), static_cast<std::uint64_t>(shape[0]));
  }
}
