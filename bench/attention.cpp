// attention: the core of the Transformer's attention, forward and backward, fused (a head of a
// sequence at a time while its scores are in cache: nn/fused_attention.hpp, what
// nn::multihead_attention runs where each rank holds whole heads of whole sequences) against
// the same computation as separate operations (einsum, softmax<memory_length>(s,
// causal<length>{}), einsum, and their backward steps: what the layer ran before, and runs
// where a layout splits length, memory_length, d_k or d_v), alternated in the same run.
//
//   q [batch, length, heads, d_k] (scaled), k [batch, memory_length, heads, d_k],
//   v [batch, memory_length, heads, d_v] -> o [batch, length, heads, d_v]; the loss sum(o * w)
//
// The default sizes are examples/transformer's (batch 32 a rank, seq 128, 4 heads of 32); the
// batch is split over the ranks (data layout). Prints the bench line (meshpp_s: fused,
// baseline_s: separate) and the largest difference of o and of q's gradient between the two
// (0: the same gemm calls and softmax rows, in the same order).
//   mpiexec -n 1 build/bench/attention [--batch 32] [--seq 128] [--heads 4] [--d-k 32]
#include <meshpp/meshpp.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>

#include "bench.hpp"
#include "cli.hpp"

namespace mp = meshpp;
MESHPP_DIM(batch);
MESHPP_DIM(length);
MESHPP_DIM(memory_length);
MESHPP_DIM(heads);
MESHPP_DIM(d_k);
MESHPP_DIM(d_v);
MESHPP_DIM(all);

namespace {
using mesh_t = mp::mesh<mp::axes<all>, mp::layout<mp::split<batch, all>>>;
template <class... D>
using var_t = mp::variable<mp::tensor_of<float, mp::shape<D...>, mesh_t>>;

template <class Tensor>
double max_abs_diff(const Tensor& a, const Tensor& b) {
  double d = 0;
  const auto *x = a.local().data(), *y = b.local().data();
  for (std::size_t i = 0; i < a.local().size(); ++i)
    d = std::max(d, double(std::fabs(x[i] - y[i])));
  return d;
}
}  // namespace

int main(int argc, char** argv) {
  mp::environment env(argc, argv);
  std::size_t b = 32, l = 128, h = 4, dk = 32;
  examples::cli cli("bench/attention",
                    "the Transformer's attention core, forward and backward, fused against "
                    "separate operations; one JSON line");
  cli.add("--batch", b, "sequences per rank");
  cli.add("--seq", l, "the sequence length");
  cli.add("--heads", h, "attention heads");
  cli.add("--d-k", dk, "each head's width");
  cli.parse(argc, argv);
  const int n = boost::mpi::communicator().size();
  mesh_t mesh({n});
  const auto sizes = mp::extents{batch{} = b * std::size_t(n),
                                 length{} = l,
                                 memory_length{} = l,
                                 heads{} = h,
                                 d_k{} = dk,
                                 d_v{} = dk};
  const float scale = 1.0f / std::sqrt(float(dk));
  var_t<batch, length, heads, d_k> q(
      mp::eval(mp::random_normal<float, batch, length, heads, d_k>(mesh, sizes, 1) * scale), "q");
  var_t<batch, memory_length, heads, d_k> k(
      mp::random_normal<float, batch, memory_length, heads, d_k>(mesh, sizes, 2), "k");
  var_t<batch, memory_length, heads, d_v> v(
      mp::random_normal<float, batch, memory_length, heads, d_v>(mesh, sizes, 3), "v");
  const auto w = mp::random_normal<float, batch, length, heads, d_v>(mesh, sizes, 4);

  const auto fused = [&] {
    return mp::detail::fused_attention<length, memory_length, heads, d_k, d_v>(q, k, v, true);
  };
  const auto separate = [&] {
    const auto s = mp::einsum<mp::shape<batch, heads, length, memory_length>>(q, k);
    const auto p = mp::softmax<memory_length>(s, mp::causal<length>{});
    return mp::einsum<mp::shape<batch, length, heads, d_v>>(p, v);
  };
  const auto step = [&](const auto& core) {
    q.zero_grad();
    k.zero_grad();
    v.zero_grad();
    mp::backward(mp::reduce_sum(core() * w));
    (void)q.grad();
  };

  // the two give the same values: compare once
  const auto of = fused().value();
  step(fused);
  const auto gf = *q.grad();
  const auto os = separate().value();
  step(separate);
  const double diff = std::max(max_abs_diff(of, os), max_abs_diff(gf, *q.grad()));
  double largest = 0;
  boost::mpi::all_reduce(mesh.world(), diff, largest, boost::mpi::maximum<double>());

  const auto t = bench::compare(
      mesh.world(), [&] { step(fused); }, [&] { step(separate); });
  const std::string name = "causal, forward and backward, batch " + std::to_string(b) +
                           " a rank, seq " + std::to_string(l) + ", heads " + std::to_string(h) +
                           " of " + std::to_string(dk);
  if (mesh.rank() == 0) {
    std::printf(
        "{\"bench\": \"attention\", \"case\": \"%s\", \"ranks\": %d, \"meshpp_s\": %.6e, "
        "\"baseline\": \"separate operations\", \"baseline_s\": %.6e, \"time_ratio\": %.4f, "
        "\"max_abs_diff\": %.3e}\n",
        name.c_str(), n, t.meshpp_s, t.baseline_s, t.meshpp_s / t.baseline_s, largest);
  }
}
