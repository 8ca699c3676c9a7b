// transformer: one training step (forward, backward, Adam) of examples/transformer's language
// model under one of the paper's three layouts (or model+residual), against cblas_sgemm doing the
// same number of floating-point operations on every rank, in the same run: the ratio of the two is
// the fraction of the machine's BLAS rate the whole step reaches ("model FLOPs utilisation").
//
//   model FLOPs per step = 3 x forward (the backward pass does two of each forward product):
//   forward = 2 tokens (parameters in products) + 4 tokens length d_model per block (the
//   attention's scores and weighted sum: the causal mask is not used to skip work)
//   tokens = batch x seq; parameters in products: 4 d_model^2 + 2 d_model d_ff per block,
//   + d_model vocab (the unembedding)
//
// The baseline is cblas_sgemm on 1024 x 1024 matrices (plus one narrower product for the
// remainder), the model FLOPs divided among the ranks, every rank at once.
//   mpiexec -n 2 build/bench/transformer --layout data [--batch 32] [--seq 128] ...
//                                        [--sharded-updates on|off|measured]
// (optimizer::set_sharding(sharding::on, off or measured), to measure what sharding Adam's
// update gains; measured, the library's default, unless given);
// without --layout, the four in turn (bench/run); --layout data,model (or --layout data
// --layout model) runs those two
// Prints the usual bench line plus tokens/s, the model FLOPs, their fraction of the sgemm rate
// (baseline_s / meshpp_s) and the model's parameters (bench/transformer_torch.py: PyTorch's).
// Then the step's own BLAS, after the comparison, over 5 more steps: the share of the step spent
// in cblas_sgemm and the rate those calls reach, against the same 1024 x 1024 sgemm rate
// ("blas_share", "blas_fraction_of_sgemm"). The model's products are narrow (d_model 128, heads
// of 32), so OpenBLAS runs them below its 1024 x 1024 rate: that rate over the step's is the most
// the step could reach if nothing but its products took time.
#include <cblas.h>
#include <dlfcn.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "bench.hpp"
#include "cli.hpp"
#include "transformer.hpp"

namespace tx = transformer_example;

// This program defines cblas_sgemm itself, so that every call the model makes (meshpp's einsum,
// the example's objects) comes here first: while sgemm_clock::on, each call is timed and its
// FLOPs counted around OpenBLAS's own (found with dlsym(RTLD_NEXT)); otherwise it goes straight
// through.
namespace sgemm_clock {
bool on = false;
double seconds = 0, flops = 0;
}  // namespace sgemm_clock

extern "C" void cblas_sgemm(const enum CBLAS_ORDER order, const enum CBLAS_TRANSPOSE trans_a,
                            const enum CBLAS_TRANSPOSE trans_b, const blasint m, const blasint n,
                            const blasint k, const float alpha, const float* a, const blasint lda,
                            const float* b, const blasint ldb, const float beta, float* c,
                            const blasint ldc) {
  using sgemm_fn = void (*)(enum CBLAS_ORDER, enum CBLAS_TRANSPOSE, enum CBLAS_TRANSPOSE, blasint,
                            blasint, blasint, float, const float*, blasint, const float*, blasint,
                            float, float*, blasint);
  // NOLINTNEXTLINE(cppcoreguidelines-pro-type-reinterpret-cast): dlsym returns void*
  static const auto real = reinterpret_cast<sgemm_fn>(dlsym(RTLD_NEXT, "cblas_sgemm"));
  if (real == nullptr) {
    std::fprintf(stderr, "bench/transformer: OpenBLAS's cblas_sgemm not found (dlsym)\n");
    std::abort();
  }
  if (!sgemm_clock::on) {
    real(order, trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
    return;
  }
  const auto start = std::chrono::steady_clock::now();
  real(order, trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
  sgemm_clock::seconds +=
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  sgemm_clock::flops += 2.0 * double(m) * double(n) * double(k);
}

namespace {

// forward_flops(o, vocab): the model's forward FLOPs per step (batch o.batch)
double forward_flops(const tx::options& o, std::size_t vocab_size) {
  const double tokens = static_cast<double>(o.batch * o.seq);
  const double d = static_cast<double>(o.d_model), f = static_cast<double>(o.d_ff);
  const double per_block = 4 * d * d + 2 * d * f;
  const double products = static_cast<double>(o.layers) * per_block + d * vocab_size;
  const double attention =
      4.0 * tokens * static_cast<double>(o.seq) * d * static_cast<double>(o.layers);
  return 2 * tokens * products + attention;
}

// sgemm_flops(flops): cblas_sgemm for about `flops` floating-point operations
struct sgemm_flops {
  static constexpr int n = 1024;
  std::vector<float> a, b, c;
  int full, rest_rows;
  explicit sgemm_flops(double flops)
      : a(std::size_t(n) * n, 0.5f), b(std::size_t(n) * n, 0.25f), c(std::size_t(n) * n) {
    const double per = 2.0 * n * n * n;
    full = static_cast<int>(flops / per);
    rest_rows = static_cast<int>((flops - full * per) / (2.0 * n * n));
  }
  double flops() const { return 2.0 * n * n * (double(full) * n + rest_rows); }
  void run() {
    for (int i = 0; i < full; ++i)
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, a.data(), n, b.data(),
                  n, 0.0f, c.data(), n);
    if (rest_rows > 0)
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, rest_rows, n, n, 1.0f, a.data(), n,
                  b.data(), n, 0.0f, c.data(), n);
  }
};

template <class Mesh, class Residual = void>
void bench_layout(const Mesh& mesh, const tx::options& o, mp::sharding sharded) {
  const std::size_t vocab_size = 64;  // the King James text's 63 characters, padded
  const auto sizes = tx::model_sizes(o, o.batch, vocab_size);
  const tx::language_model<Mesh, Residual> model(mesh, sizes, o);
  mp::adam opt(mp::adam_options{.learning_rate = 1e-3});
  opt.set_sharding(sharded);
  opt.add(model);
  using ids_t = typename tx::language_model<Mesh, Residual>::ids_t;
  std::uint64_t draw = 0;
  auto step = [&] {
    ++draw;
    const auto ids = mp::generate<ids_t>(mesh, sizes, [&](const auto& i) {
      return static_cast<std::int32_t>((i[0] * 31 + i[1] * 7 + draw) % 63);
    });
    const auto targets = mp::generate<ids_t>(mesh, sizes, [&](const auto& i) {
      return static_cast<std::int32_t>((i[0] * 17 + i[1] * 5 + draw) % 63);
    });
    auto loss = model.loss(ids, targets);
    mp::backward(loss);
    opt.step();
  };
  // past sharding::measured's trial (its choice at a variable's 7th update), so that every
  // timed step updates the way it chose
  for (int k = 0; k < 7; ++k) step();
  const double model_flops = 3 * forward_flops(o, vocab_size);
  sgemm_flops gemm(model_flops / mesh.world().size());
  // a step takes about 0.1 to 0.2 s on 2 cores: 3 s a side gives 15 to 30 alternations
  const auto t = bench::compare(
      mesh.world(), step, [&] { gemm.run(); }, 3.0);
  // the step's own cblas_sgemm calls, over 5 more steps: their time and FLOPs summed over the
  // ranks, against the ranks' step time and the 1024 x 1024 rate above (the gemm's FLOPs per
  // rank in its baseline_s)
  sgemm_clock::seconds = sgemm_clock::flops = 0;
  sgemm_clock::on = true;
  const auto start = std::chrono::steady_clock::now();
  for (int k = 0; k < 5; ++k) step();
  std::array<double, 3> clocked{
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(),
      sgemm_clock::seconds, sgemm_clock::flops};
  sgemm_clock::on = false;
  mp::detail::checked(
      MPI_Allreduce(MPI_IN_PLACE, clocked.data(), 3, MPI_DOUBLE, MPI_SUM, MPI_Comm(mesh.world())),
      "MPI_Allreduce");
  const double blas_share = clocked[1] / clocked[0];
  const double sgemm_rate = gemm.flops() / t.baseline_s;
  const double blas_fraction = clocked[2] / clocked[1] / sgemm_rate;
  const std::string name = o.layout + " layers " + std::to_string(o.layers) + " d_model " +
                           std::to_string(o.d_model) + " batch " + std::to_string(o.batch) +
                           " seq " + std::to_string(o.seq) +
                           (sharded == mp::sharding::measured ? ""
                            : sharded == mp::sharding::on     ? " updates sharded"
                                                              : " updates not sharded");
  if (mesh.rank() == 0) {
    std::printf(
        "{\"bench\": \"transformer\", \"case\": \"%s\", \"ranks\": %d, \"meshpp_s\": %.6e, "
        "\"baseline\": \"cblas_sgemm, same FLOPs\", \"baseline_s\": %.6e, \"time_ratio\": %.4f, "
        "\"tokens_per_second\": %.1f, \"model_flops\": %.6e, \"fraction_of_sgemm\": %.4f, "
        "\"parameters\": %zu, \"blas_share\": %.4f, \"blas_fraction_of_sgemm\": %.4f}\n",
        name.c_str(), mesh.world().size(), t.meshpp_s, t.baseline_s, t.meshpp_s / t.baseline_s,
        static_cast<double>(o.batch * o.seq) / t.meshpp_s, model_flops, t.baseline_s / t.meshpp_s,
        mp::parameter_count(model), blas_share, blas_fraction);
    std::fflush(stdout);
  }
}

}  // namespace

int main(int argc, char** argv) {
  mp::environment env(argc, argv);
  tx::options o;
  std::vector<std::string> layouts{"data", "model", "data+model", "model+residual"};
  std::string sharded_updates = "measured";
  examples::cli cli("bench/transformer",
                    "one training step of examples/transformer's model under each layout against "
                    "cblas_sgemm doing the same FLOPs; one JSON line per layout");
  cli.choose("--layout", layouts, {"data", "model", "data+model", "model+residual"},
             "the layouts, in turn");
  cli.add("--batch", o.batch, "windows per step");
  cli.add("--seq", o.seq, "characters per window");
  cli.add("--layers", o.layers, "decoder layers");
  cli.add("--d-model", o.d_model, "the model's width (a multiple of --heads)");
  cli.add("--heads", o.heads, "attention heads");
  cli.add("--d-ff", o.d_ff, "the feed-forward layers' width");
  cli.choose("--sharded-updates", sharded_updates, {"on", "off", "measured"},
             "Adam's update sharded among the replicas (optimizer::set_sharding)");
  cli.parse(argc, argv);
  const mp::sharding sharded = bench::sharding_named(sharded_updates);
  const boost::mpi::communicator world;
  const int n = world.size();
  for (const auto& layout : layouts) {
    o.layout = layout;
    if (layout == "data")
      bench_layout(mesh_data({n}), o, sharded);
    else if (layout == "model")
      bench_layout(mesh_model({n}), o, sharded);
    else if (layout == "data+model")
      bench_layout(mesh_data_model(mp::balanced_grid<2>(n)), o, sharded);
    else if (layout == "model+residual")
      bench_layout<mesh_model, residual_over_all>(mesh_model({n}), o, sharded);
    else  // cli.choose let no other name through
      throw mp::error("bench/transformer: unknown layout '" + layout + "'");
  }
}
