// fused_chain: relu(a * b + c) with c[hidden] broadcast over [batch, hidden], as one fused
// meshpp pass, against a hand-written loop over the same local slices (data-parallel layout
// [batch:all]: each rank works on its own rows; no communication on either side).
#include <meshpp/meshpp.hpp>

#include <string>

#include "bench.hpp"

namespace mp = meshpp;
MESHPP_DIM(batch);
MESHPP_DIM(hidden);
MESHPP_DIM(all);

using mesh_t = mp::mesh<mp::axes<all>, mp::layout<mp::split<batch, all>>>;

void run(const mesh_t& mesh, std::size_t b, std::size_t h) {
  const auto sizes = mp::extents{batch{} = b, hidden{} = h};
  const auto x = mp::random_normal<float, batch, hidden>(mesh, sizes, 1);
  const auto y = mp::random_normal<float, batch, hidden>(mesh, sizes, 2);
  const auto c = mp::random_normal<float, hidden>(mesh, sizes, 3);
  auto out = mp::zeros<float, batch, hidden>(mesh, sizes);
  auto ref = mp::zeros<float, batch, hidden>(mesh, sizes);

  const auto t = bench::compare(
      mesh.world(), [&] { out = mp::relu(x * y + c); },
      [&] {
        const std::size_t rows = x.local().shape()[0], cols = x.local().shape()[1];
        const float* xp = x.local().data();
        const float* yp = y.local().data();
        const float* cp = c.local().data();
        float* op = ref.local().data();
        for (std::size_t i = 0; i < rows; ++i) {
          for (std::size_t j = 0; j < cols; ++j) {
            const float v = xp[i * cols + j] * yp[i * cols + j] + cp[j];
            op[i * cols + j] = v < 0.0f ? 0.0f : v;
          }
        }
      });
  if (!(out.local() == ref.local())) throw mp::error("fused_chain: results differ");
  bench::print(mesh.world(), "fused_chain",
               "relu(a*b+c) [batch " + std::to_string(b) + ", hidden " + std::to_string(h) + "]",
               "hand-written loop", t);
}

int main(int argc, char** argv) {
  mp::environment env(argc, argv);
  const int n = boost::mpi::communicator().size();
  mesh_t mesh({n});
  run(mesh, 64 * static_cast<std::size_t>(n), 1024);    // 256 KiB per operand and rank
  run(mesh, 512 * static_cast<std::size_t>(n), 2048);   // 4 MiB
  run(mesh, 2048 * static_cast<std::size_t>(n), 4096);  // 32 MiB: memory-bound
  return 0;
}
