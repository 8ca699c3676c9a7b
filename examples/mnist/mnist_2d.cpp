// The data+model layout of examples/mnist (batch:processor_rows, hidden:processor_cols).
#include "mnist.hpp"

template void train(const mesh_data_model&, const mp::mnist_data&, const options&);
template void planned_step(const mesh_data_model&, const mp::mnist_data&, const options&);
