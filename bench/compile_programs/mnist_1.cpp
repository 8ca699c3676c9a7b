// mnist_1: one training step of examples/mnist's network under one layout (data: batch:all),
// the unit of compile cost of a layout that mnist_4 multiplies.
//   mpiexec -n 1 ./mnist_1    (runs on synthetic examples: prints the loss after one step)
#include "mnist_step.hpp"

int main(int argc, char** argv) {
  mp::environment env(argc, argv);
  const boost::mpi::communicator world;
  compile_programs::train_under(mesh_data({world.size()}), compile_programs::tiny_mnist(),
                                compile_programs::tiny_options(), "data");
  return 0;
}
