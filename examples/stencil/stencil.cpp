// stencil: explicit 2-D heat diffusion, u += k * (laplacian of u), on a grid split over both
// mesh dims (x:rows, y:cols), with halo exchanges for the neighbours' borders; the result is
// compared, bit for bit, with the same steps on one rank without the mesh.
//
//   mpiexec -n 4 --oversubscribe build/examples/stencil [--nx 64 --ny 64 --steps 50] [--periodic]
//
// Each step: hx = halo_exchange<x>(u, 1), hy = halo_exchange<y>(u, 1) (a collective permute
// between mesh neighbours along each dim), then a purely local 5-point update.
#include <meshpp/meshpp.hpp>

#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "cli.hpp"

namespace mp = meshpp;

MESHPP_DIM(x);
MESHPP_DIM(y);
MESHPP_DIM(rows);
MESHPP_DIM(cols);

using mesh_t = mp::mesh<mp::axes<rows, cols>, mp::layout<mp::split<x, rows>, mp::split<y, cols>>>;

constexpr double k = 0.2;

double initial(std::size_t i, std::size_t j, std::size_t nx, std::size_t ny) {
  const double dx = double(i) / double(nx) - 0.3, dy = double(j) / double(ny) - 0.6;
  return std::exp(-40 * (dx * dx + dy * dy));
}

// The reference: the same update on the whole grid, one rank, no mesh.
std::vector<double> reference(std::size_t nx, std::size_t ny, std::size_t steps, bool periodic) {
  std::vector<double> u(nx * ny), next(nx * ny);
  for (std::size_t i = 0; i < nx; ++i)
    for (std::size_t j = 0; j < ny; ++j) u[i * ny + j] = initial(i, j, nx, ny);
  auto at = [&](long i, long j) {
    if (periodic) return u[((i + long(nx)) % long(nx)) * ny + ((j + long(ny)) % long(ny))];
    if (i < 0 || j < 0 || i >= long(nx) || j >= long(ny)) return 0.0;
    return u[i * ny + j];
  };
  for (std::size_t s = 0; s < steps; ++s) {
    for (long i = 0; i < long(nx); ++i) {
      for (long j = 0; j < long(ny); ++j) {
        const double c = at(i, j);
        next[i * ny + j] =
            c + k * (((at(i - 1, j) + at(i + 1, j)) + (at(i, j - 1) + at(i, j + 1))) - 4 * c);
      }
    }
    std::swap(u, next);
  }
  return u;
}

int main(int argc, char** argv) {
  mp::environment env(argc, argv);
  std::size_t nx = 64, ny = 64, steps = 50;
  bool periodic = false;
  examples::cli cli("stencil",
                    "a 2-D diffusion stencil on a mesh of every rank, checked bit for bit "
                    "against one rank");
  cli.add("--nx", nx, "the grid's rows (at least 1)");
  cli.add("--ny", ny, "the grid's columns (at least 1)");
  cli.add("--steps", steps, "the diffusion steps");
  cli.add("--periodic", periodic, "wrap around at the edges instead of zeros beyond them");
  cli.parse(argc, argv);
  if (nx == 0 || ny == 0) cli.fail("--nx and --ny must be at least 1");
  const int n = boost::mpi::communicator().size();
  int r = 1;
  for (int f = 1; f * f <= n; ++f)
    if (n % f == 0) r = f;
  mesh_t mesh({r, n / r});
  const auto sizes = mp::extents{x{} = nx, y{} = ny};
  const auto b = periodic ? mp::boundary::wrap : mp::boundary::zero;

  auto u = mp::generate<double, x, y>(mesh, sizes,
                                      [&](const auto& g) { return initial(g[0], g[1], nx, ny); });
  auto next = u;
  for (std::size_t s = 0; s < steps; ++s) {
    const auto hx = mp::halo_exchange<x>(u, 1, b);  // [lx + 2, ly]
    const auto hy = mp::halo_exchange<y>(u, 1, b);  // [lx, ly + 2]
    const std::size_t lx = u.local_shape()[0], ly = u.local_shape()[1];
    for (std::size_t i = 0; i < lx; ++i) {
      for (std::size_t j = 0; j < ly; ++j) {
        const double c = u.local()(i, j);
        next.local()(i, j) =
            c + k * (((hx.data(i, j) + hx.data(i + 2, j)) + (hy.data(i, j) + hy.data(i, j + 2))) -
                     4 * c);
      }
    }
    std::swap(u, next);
  }

  const auto whole = mp::gather(u, 0);
  if (mesh.rank() == 0) {
    const auto want = reference(nx, ny, steps, periodic);
    double diff = 0;
    for (std::size_t e = 0; e < want.size(); ++e)
      diff = std::max(diff, std::abs(whole.data()[e] - want[e]));
    const auto moved = mesh.counters().total(mp::collective::permute);
    std::printf(
        "stencil %zux%zu, %zu steps, %s boundary, mesh %s: max |diff| against one rank "
        "= %g; halo values sent per processor %llu in %llu permutes\n",
        nx, ny, steps, periodic ? "periodic" : "zero", mesh.describe().c_str(), diff,
        static_cast<unsigned long long>(moved.values),
        static_cast<unsigned long long>(moved.calls));
    if (diff != 0) return 1;  // the same operations in the same order: equal bit for bit
  }
  return 0;
}
