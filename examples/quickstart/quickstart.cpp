// quickstart: the program at the top of the README, as it stands there, and --help (every
// example reads its command line with examples/cli.hpp).
//   mpiexec -n 4 --oversubscribe build/examples/quickstart
#include <meshpp/meshpp.hpp>

#include <iostream>

#include "cli.hpp"

namespace mp = meshpp;

// This is the README's program, aligned as it is there.
// clang-format off

MESHPP_DIM(batch); MESHPP_DIM(io); MESHPP_DIM(hidden);   // tensor dims
MESHPP_DIM(rows);  MESHPP_DIM(cols);                      // mesh dims

using rules  = mp::layout<mp::split<batch, rows>, mp::split<hidden, cols>>;
using mesh_t = mp::mesh<mp::axes<rows, cols>, rules>;

int main(int argc, char** argv) {
  mp::environment env(argc, argv);
  examples::cli("quickstart", "the README's program: a 2 x 2 mesh of 4 ranks").parse(argc, argv);
  mesh_t mesh({2, 2});                                     // throws unless 4 ranks
  auto sizes = mp::extents{batch{} = 256, io{} = 512, hidden{} = 2048};

  auto x    = mp::random_normal<float, batch, io>(mesh, sizes, /*seed*/ 1);  // [batch/rows, io]
  auto w    = mp::random_normal<float, io, hidden>(mesh, sizes, 2);          // [io, hidden/cols]
  auto bias = mp::zeros<float, hidden>(mesh, sizes);
  auto v    = mp::random_normal<float, hidden, io>(mesh, sizes, 3);

  auto h = mp::eval(mp::relu(mp::einsum<mp::shape<batch, hidden>>(x, w) + bias));  // fused
  auto y = mp::einsum<mp::shape<batch, io>>(h, v);   // allreduce over cols: hidden is contracted
  std::cout << y.describe() << "\n";                 // dims, sizes, layout, this rank's slice
  std::cout << mesh.counters().report();             // what was communicated
  xt::xtensor<float, 2> whole = mp::gather(y);       // the whole tensor on every rank
}
// clang-format on
