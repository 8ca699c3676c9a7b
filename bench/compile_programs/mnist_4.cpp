// mnist_4: one training step of examples/mnist's network under four layouts in one
// translation unit, each chosen at run time so that all four are instantiated: mnist.cpp's
// three (data: batch:all; model: hidden:all; data+model: batch:processor_rows,
// hidden:processor_cols) and the image rows split (rows:all, where the first product's
// partial sums over the split rows are summed by an allreduce).
//   mpiexec -n 1 ./mnist_4 [data|model|data+model|rows|all]    (default all: each in turn)
#include "mnist_step.hpp"

#include <string>

using mesh_image_rows = mp::mesh<mp::axes<all>, mp::layout<mp::split<rows, all>>>;

int main(int argc, char** argv) {
  mp::environment env(argc, argv);
  const boost::mpi::communicator world;
  const std::string layout = argc > 1 ? argv[1] : "all";
  const auto data = compile_programs::tiny_mnist();
  const auto o = compile_programs::tiny_options();
  const int n = world.size();
  using compile_programs::train_under;
  if (layout == "data" || layout == "all") train_under(mesh_data({n}), data, o, "data");
  if (layout == "model" || layout == "all") train_under(mesh_model({n}), data, o, "model");
  if (layout == "data+model" || layout == "all")
    train_under(mesh_data_model(mp::balanced_grid<2>(n)), data, o, "data+model");
  if (layout == "rows" || layout == "all") train_under(mesh_image_rows({n}), data, o, "rows");
  return 0;
}
