// draw_layouts: SVG drawings of which rank holds which block (io/draw.hpp), for two networks
// on a 2-d mesh fitted to the number of ranks (2 x 2 at 4 ranks):
//
//   layout_<r>x<c>.svg   the paper's two-layer network (section 8) under batch:rows;hidden:cols:
//                        x, w, bias, h = relu(x w + bias), v, y = h v
//   mnist_<r>x<c>.svg    the Mesh-TensorFlow README's Fashion-MNIST model under its data+model
//                        layout batch:processor_rows;hidden:processor_cols: the images (rank 3,
//                        faceted by batch), the weights, the activations and the logits
//
//   mpiexec -n 4 --oversubscribe build/examples/draw_layouts --out docs
//
// Rank 0 writes the files (a drawing needs no other rank: it follows from the tensors' types
// and sizes). docs/layout_2x2.svg, shown in docs/concepts.md, is this program's output at 4 ranks;
// a test checks that it is current. Rank counts whose grid divides the sizes: 1, 2, 4, 8.
#include <meshpp/meshpp.hpp>

#include <cstdio>
#include <exception>
#include <filesystem>
#include <string>

#include <boost/mpi/communicator.hpp>

#include "cli.hpp"

namespace mp = meshpp;

namespace two_layer {
MESHPP_DIM(batch);
MESHPP_DIM(io);
MESHPP_DIM(hidden);
MESHPP_DIM(rows);  // mesh dims
MESHPP_DIM(cols);

using rules = mp::layout<mp::split<batch, rows>, mp::split<hidden, cols>>;
using mesh_t = mp::mesh<mp::axes<rows, cols>, rules>;

// the README's first program: the same sizes, the same layout
std::string draw(int ranks) {
  mesh_t mesh(mp::balanced_grid<2>(ranks));
  const auto sizes = mp::extents{batch{} = 256, io{} = 512, hidden{} = 2048};
  const auto x = mp::zeros<float, batch, io>(mesh, sizes);
  const auto w = mp::zeros<float, io, hidden>(mesh, sizes);
  const auto bias = mp::zeros<float, hidden>(mesh, sizes);
  const auto h = mp::zeros<float, batch, hidden>(mesh, sizes);
  const auto v = mp::zeros<float, hidden, io>(mesh, sizes);
  const auto y = mp::zeros<float, batch, io>(mesh, sizes);
  return mp::draw_svg(
      {mp::layout_picture_of(x, "x [batch, io]: the input"),
       mp::layout_picture_of(w, "w [io, hidden]"), mp::layout_picture_of(bias, "bias [hidden]"),
       mp::layout_picture_of(h, "h = relu(einsum(x, w) + bias)"),
       mp::layout_picture_of(v, "v [hidden, io]"),
       mp::layout_picture_of(y, "y = einsum(h, v): allreduce over cols")},
      2);
}
}  // namespace two_layer

namespace mnist {
MESHPP_DIM(batch);
MESHPP_DIM(rows);  // an image's rows and columns
MESHPP_DIM(cols);
MESHPP_DIM(hidden);
MESHPP_DIM(classes);
MESHPP_DIM(processor_rows);  // mesh dims
MESHPP_DIM(processor_cols);

using rules = mp::layout<mp::split<batch, processor_rows>, mp::split<hidden, processor_cols>>;
using mesh_t = mp::mesh<mp::axes<processor_rows, processor_cols>, rules>;

// examples/mnist/mnist.hpp's model (--layout data+model): logits = relu(images w1) w2
std::string draw(int ranks) {
  mesh_t mesh(mp::balanced_grid<2>(ranks));
  const auto sizes =
      mp::extents{batch{} = 100, rows{} = 28, cols{} = 28, hidden{} = 1024, classes{} = 10};
  const auto images = mp::zeros<float, batch, rows, cols>(mesh, sizes);
  const auto w1 = mp::zeros<float, rows, cols, hidden>(mesh, sizes);
  const auto h = mp::zeros<float, batch, hidden>(mesh, sizes);
  const auto w2 = mp::zeros<float, hidden, classes>(mesh, sizes);
  const auto logits = mp::zeros<float, batch, classes>(mesh, sizes);
  return mp::draw_svg({mp::layout_picture_of(images, "images [batch, rows, cols]"),
                       mp::layout_picture_of(w1, "w1 [rows, cols, hidden]"),
                       mp::layout_picture_of(h, "h = relu(einsum(images, w1))"),
                       mp::layout_picture_of(w2, "w2 [hidden, classes]"),
                       mp::layout_picture_of(logits, "logits = einsum(h, w2)")},
                      2);
}
}  // namespace mnist

int main(int argc, char** argv) {
  mp::environment env(argc, argv);
  std::string out_dir = ".";
  examples::cli cli("draw_layouts", "the README's layouts drawn as SVG files");
  cli.add("--out", out_dir, "the directory the SVG files go to", "DIR");
  cli.parse(argc, argv);
  try {
    const std::filesystem::path out = out_dir;
    const boost::mpi::communicator world;
    const auto grid = mp::balanced_grid<2>(world.size());
    const std::string mesh = std::to_string(grid[0]) + "x" + std::to_string(grid[1]);
    const std::string layout =
        two_layer::draw(world.size());  // every rank: the tensors are collective
    const std::string model = mnist::draw(world.size());
    if (world.rank() == 0) {
      mp::write_svg(out / ("layout_" + mesh + ".svg"), layout);
      mp::write_svg(out / ("mnist_" + mesh + ".svg"), model);
      std::printf("wrote %s and %s\n", (out / ("layout_" + mesh + ".svg")).c_str(),
                  (out / ("mnist_" + mesh + ".svg")).c_str());
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "rank %d: %s\n", boost::mpi::communicator().rank(), e.what());
    return 1;
  }
}
