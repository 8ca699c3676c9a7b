// A user's program linked with meshpp::kernels, the kernels compiled once: least squares by
// Adam on a mesh of every rank, [batch/all] x [io] -> [batch/all], checked against the same
// steps in plain loops on one rank. Its object file defines none of the kernels it calls
// (check_kernels.cmake reads it with nm).
#include <meshpp/meshpp.hpp>

#include <cmath>
#include <cstdio>
#include <vector>

namespace mp = meshpp;

MESHPP_DIM(batch);
MESHPP_DIM(io);
MESHPP_DIM(all);

int main(int argc, char** argv) {
  mp::environment env(argc, argv);
  using mesh_t = mp::mesh<mp::axes<all>, mp::layout<mp::split<batch, all>>>;
  mesh_t mesh({boost::mpi::communicator().size()});
  constexpr std::size_t nb = 8, ni = 3;
  const auto sizes = mp::extents{batch{} = nb, io{} = ni};
  const auto x = mp::random_normal<float, batch, io>(mesh, sizes, 1);  // fill_random
  const auto t = mp::random_normal<float, batch>(mesh, sizes, 2);
  mp::variable w(mp::zeros<float, io>(mesh, sizes), "w");
  mp::adam opt({.learning_rate = 0.1}, w);  // adam_update
  for (int step = 0; step < 3; ++step) {
    // einsum_gemms; its gradient's sum over batch: allreduce_over
    const auto r = mp::einsum<mp::shape<batch>>(x, w) - t;
    mp::backward(mp::reduce_sum(r * r));
    opt.step();
  }
  const auto got = mp::gather(w.value());  // allgather_over (w is whole: a copy)

  // the reference: the same three Adam steps in plain loops
  const auto xs = mp::gather(x);
  const auto ts = mp::gather(t);
  std::vector<double> ww(ni, 0), m(ni, 0), v(ni, 0);
  for (int step = 1; step <= 3; ++step) {
    std::vector<double> g(ni, 0);
    for (std::size_t b = 0; b < nb; ++b) {
      double y = 0;
      for (std::size_t i = 0; i < ni; ++i) y += xs(b, i) * ww[i];
      for (std::size_t i = 0; i < ni; ++i) g[i] += 2 * (y - ts(b)) * xs(b, i);
    }
    for (std::size_t i = 0; i < ni; ++i) {
      m[i] = 0.9 * m[i] + 0.1 * g[i];
      v[i] = 0.999 * v[i] + 0.001 * g[i] * g[i];
      const double mh = m[i] / (1 - std::pow(0.9, step)), vh = v[i] / (1 - std::pow(0.999, step));
      ww[i] -= 0.1 * mh / (std::sqrt(vh) + 1e-8);
    }
  }
  int wrong = 0;
  for (std::size_t i = 0; i < ni; ++i) wrong += std::abs(got(i) - ww[i]) > 1e-4;
  std::printf("rank %d: w = [%g, %g, %g], %d wrong\n", mesh.rank(), got(0), got(1), got(2), wrong);
  return wrong == 0 ? 0 : 1;
}
