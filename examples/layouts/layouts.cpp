// layouts: the Mesh-TensorFlow README's "Example Layouts", run for real.
//
// image_batch [batch 100, rows 28, cols 28, channels 3] on the mesh
// [processor_rows 2, processor_cols 4] (8 ranks; other rank counts get
// [processor_rows 2, processor_cols n/2], or 1 x n for odd n), under each of the README's
// layouts. Every rank reports which slice it holds; rank 0 prints them in rank order.
//
//   mpiexec -n 8 --oversubscribe build/examples/layouts
//
// The README's illegal layouts: "channels:processor_rows" (3 is not divisible by 2) is legal
// here, channels split into near-equal blocks 0:2 and 2:3, shown below;
// "batch:processor_rows;rows:processor_rows" does not compile
// (tests/compile_fail/layout/two_dims_on_one_mesh_dim.cpp).
#include <meshpp/meshpp.hpp>

#include <cstdio>
#include <string>
#include <vector>

#include "cli.hpp"

#include <boost/mpi/collectives/gather.hpp>
#include <boost/serialization/string.hpp>
#include <boost/serialization/vector.hpp>

namespace mp = meshpp;

MESHPP_DIM(batch);
MESHPP_DIM(rows);
MESHPP_DIM(cols);
MESHPP_DIM(channels);
MESHPP_DIM(processor_rows);
MESHPP_DIM(processor_cols);

using image_shape = mp::shape<batch, rows, cols, channels>;

// Prints, on rank 0, every rank's slice of image_batch under the layout rules `Rules`.
template <class Rules>
void show(const char* title, const std::array<int, 2>& mesh_sizes) {
  using mesh_t = mp::mesh<mp::axes<processor_rows, processor_cols>, Rules>;
  mesh_t mesh(mesh_sizes);
  const auto sizes = mp::extents{batch{} = 100, rows{} = 28, cols{} = 28, channels{} = 3};
  std::string line;
  try {
    const auto image_batch = mp::random_uniform<float, batch, rows, cols, channels>(mesh, sizes, 1);
    line = image_batch.describe();
  } catch (const mp::error& e) {  // every rank throws the same error, before any communication
    line = std::string("error: ") + e.what();
  }
  std::vector<std::string> lines;
  boost::mpi::gather(mesh.world(), line, lines, 0);
  if (mesh.rank() != 0) return;
  std::printf("\n== layout rules \"%s\" on mesh %s\n", title, mesh.describe().c_str());
  if (lines[0].rfind("error: ", 0) == 0) {
    std::printf("%s\n", lines[0].c_str());
    return;
  }
  // The first line (the tensor) is the same on every rank; then one line per rank.
  std::printf("%s\n", lines[0].substr(0, lines[0].find('\n')).c_str());
  for (const auto& l : lines) std::printf("%s\n", l.substr(l.find('\n') + 1).c_str());
}

int main(int argc, char** argv) {
  mp::environment env(argc, argv);
  examples::cli("layouts", "the Mesh-TensorFlow README's example layouts: the slice of each rank")
      .parse(argc, argv);
  const int n = boost::mpi::communicator().size();
  const std::array<int, 2> mesh_sizes = n % 2 == 0 ? std::array{2, n / 2} : std::array{1, n};

  show<mp::layout<>>("", mesh_sizes);
  show<mp::layout<mp::split<batch, processor_cols>>>("batch:processor_cols", mesh_sizes);
  show<mp::layout<mp::split<rows, processor_rows>, mp::split<cols, processor_cols>>>(
      "rows:processor_rows;cols:processor_cols", mesh_sizes);
  show<mp::layout<mp::split<channels, processor_rows>>>("channels:processor_rows", mesh_sizes);
  return 0;
}
