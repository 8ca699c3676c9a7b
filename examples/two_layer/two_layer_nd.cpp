// The two- and three-dimensional layouts of examples/two_layer.
#include "two_layer_run.hpp"

template result run(const mesh_2d&, const options&, const reference*);
template result run(const mesh_3d&, const options&, const reference*);
